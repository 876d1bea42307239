// PluginBackend: one backend of the set (Options::backends) over its life: its plugin loaded and
// opened, its health, and, for an isolated plugin, its restarts.
//
//   Open        loads the plugin (in process or in a tessera-plugin-host), starts an executor
//               on it, takes its first inventory and live tasks, calls on_start (ABI 1.1) and
//               reads a capacity provider's node groups;
//   lost        a call failed, hung or returned bad bytes: Host::on_lost runs on the strand
//               (the scheduler cordons this backend's nodes and requeues its jobs), and the
//               plugin is scheduled for a restart: an isolated one's process is killed, an
//               in-process one's instance shut down (unless a call is stuck in it: then it
//               stays unhealthy, since the stuck thread cannot be taken back);
//   restarted   a fresh instance is open: Host::on_restarted runs on the strand with the new
//               executor, the difference between the old and new inventory and the tasks the
//               new one reports live.
// Restarts of either kind are PluginOptions::max_restarts_per_minute at most.
//
// Status() is what an operator sees (tessctl backends): healthy or why not, restarts, roles,
// and the operations asked of it (OperationTracker), counted across restarts.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/timer_queue.h"
#include "model/inventory_diff.h"
#include "plugins/operation_tracker.h"
#include "plugins/plugin_executor.h"
#include "plugins/plugin_library.h"
#include "plugins/plugin_restarter.h"
#include "tessera/clock.h"
#include "tessera/logging.h"
#include "tessera/plugin_host.h"
#include "tessera/v1/node.pb.h"

namespace tessera {

class PluginBackend {
 public:
  // How the backend reaches the scheduler. Every function but `post` and `closing` runs on
  // the strand.
  struct Host {
    std::function<void(std::function<void()>)> post;  // runs a function on the strand.
    std::function<bool()> closing;                    // the scheduler is closing (any thread).
    ExecutorEvents* events = nullptr;
    TimerQueue* timers = nullptr;
    std::shared_ptr<const Clock> clock;
    LogOptions log;
    std::function<void(const v1::GpuTelemetry& reading)> telemetry;
    std::function<void(const InventoryDiff& diff)> on_inventory;
    std::function<void(const std::string& why)> on_lost;
    std::function<void(PluginExecutor* fresh, const InventoryDiff& diff,
                       const std::vector<TaskRef>& live)>
        on_restarted;
    // The cloud takes `node` back at `deadline_us` (a capacity provider's spot notice).
    std::function<void(const std::string& node, int64_t deadline_us, const std::string& why)>
        on_interruption;
    // A provisioning request of this capacity provider ended, with the nodes that joined
    // (PluginExecutor::Wiring).
    std::function<void(const std::string& request_id, bool succeeded, const std::string& why,
                       const std::vector<std::string>& nodes)>
        on_provisioned;
    // This backend re-partitions a GPU of another backend's node: the start, the result or the
    // failed call, for the node's owner (PluginExecutor::Wiring).
    std::function<void(const std::string& node, int gpu)> on_foreign_partition_started;
    std::function<void(const std::string& node, int gpu, const v1::PartitionLayoutResult& result)>
        on_foreign_partition_result;
    std::function<void(const std::string& node, int gpu, const std::string& why)>
        on_foreign_partition_failed;
    uint64_t fencing_epoch = 0;  // Options::fencing_epoch.
    // A job source's submits and withdrawals (PluginExecutor::Wiring).
    std::function<void(const v1::JobSpec& job, const std::string& external_id)> on_job_submitted;
    std::function<void(const std::string& external_id)> on_job_withdrawn;
  };

  // Loads and opens the backend; `options.name` empty takes the plugin's own name.
  static StatusOr<std::unique_ptr<PluginBackend>> Open(const BackendOptions& options,
                                                       const std::vector<std::string>& plugin_dirs,
                                                       Host host);
  ~PluginBackend();
  PluginBackend(const PluginBackend&) = delete;
  PluginBackend& operator=(const PluginBackend&) = delete;

  const std::string& name() const { return name_; }
  const BackendOptions& options() const { return options_; }
  const PluginInfo& info() const { return executor_->info(); }
  // The executor now serving the backend (strand only: a restart replaces it there).
  PluginExecutor* executor() { return executor_.get(); }
  // What the plugin reported while opening.
  const std::vector<v1::NodeSpec>& first_inventory() const { return first_inventory_; }
  const std::vector<TaskRef>& first_live_tasks() const { return first_live_; }

  // Calls in flight, or a restart under way (strand only).
  bool Busy() const;
  // No restart starts after this returns (any thread; Close calls it).
  void StopRestarts();
  // Health, restarts and roles, as an operator sees them (strand only). Nodes are filled in by
  // the caller, who knows which the backend owns.
  v1::Backend Status() const;
  const OperationTracker& operations() const { return *operations_; }

 private:
  PluginBackend(const BackendOptions& options, std::vector<std::string> plugin_dirs, Host host);
  StatusOr<std::unique_ptr<PluginExecutor>> StartExecutor(std::shared_ptr<PluginLibrary> library);
  // An executor on `library`, opened: started, its inventory and live tasks taken, on_start
  // called and its node groups read. Open and Restart both make one.
  StatusOr<PluginRestarter::Restarted> StartInstance(std::shared_ptr<PluginLibrary> library);
  StatusOr<PluginRestarter::Restarted> Restart();
  void Install(PluginRestarter::Restarted restarted);

  BackendOptions options_;
  const std::vector<std::string> plugin_dirs_;
  Host host_;
  std::string name_;
  std::unique_ptr<PluginExecutor> executor_;
  std::unique_ptr<PluginRestarter> restarter_;  // isolated plugins that may restart.
  std::vector<v1::NodeSpec> first_inventory_;
  std::vector<TaskRef> first_live_;
  std::vector<v1::NodeGroup> node_groups_;  // strand only after Open.
  std::string unhealthy_;  // why the backend is down; empty while healthy (strand only).
  // Launches, stops, ... asked of every instance of the plugin; Status() reports them.
  std::shared_ptr<OperationTracker> operations_ = std::make_shared<OperationTracker>();
};

}  // namespace tessera
