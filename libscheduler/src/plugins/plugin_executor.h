// PluginExecutor: the engine's Executor, served by a plugin through the C ABI (an executor, or a
// partitioner alone, which owns no nodes). Its code is split by idea: plugin_executor.cc
// (opening, launches, stops, reads, health), plugin_executor_partitions.cc and
// plugin_executor_provisioning.cc; plugin_executor_shared.h holds what they share.
//
// The engine calls it on the decision strand and must never wait for a plugin there: launch,
// stop, resize, re-partitioning and provisioning are queued and return at once. Only opening
// (inventory, reconcile) waits, within the call deadline.
//
// Two lanes (PluginWorkers) per plugin: operations (launch, stop, resize, partition, provision,
// inventory reads, ...) run one at a time on one; polls and telemetry, which the ABI lets overlap
// any other call, on the other, so a slow launch never delays what the plugin has to report.
// Each kind of call has its own deadline (PluginOptions::launch_deadline, ...).
//
// Operations: every launch, stop, resize, partition change and provisioning request is an
// operation of Wiring::operations (OperationTracker: id, kind, due time, outcome). A call's
// operation ends when the call returns; a provisioning request's when the plugin reports
// PROVISION_COMPLETED or PROVISION_FAILED for its request id, or, failing, when
// PluginOptions::provision_deadline passes (Wiring::on_provisioned says which, on the strand). What
// the plugin reports (emit_event from any thread, or the answer to on_poll_events) is parsed off
// the strand and handed to the engine on the strand through Wiring::post.
//
// Inventory: read with on_inventory at open, and again whenever the plugin reports
// INVENTORY_CHANGED; what differs from the inventory taken before (InventoryDiff) goes to
// Wiring::on_inventory on the strand.
//
// Telemetry: on_telemetry is asked every poll_interval on the real clock (and with every poll on
// a virtual one); its readings go to the engine's GPU health policy.
//
// Polling: after every launch and stop, every poll_interval on the real clock, and, for a
// plugin on a virtual clock, at the time its latest poll said it next has something to report
// (BackendEvents.next_event_us, through the engine's timers; one timer, moved by each poll).
//
// Virtual time: on a clock that is not real time, the strand waits for each call (within the
// call deadline) instead of queuing it, so that the plugin's reports reach the engine at points
// fixed by the strand's own order: the same inputs give the same decisions and event log. What
// a plugin reports from threads of its own (emit_event) still arrives when it arrives.
//
// Health: a call that hangs past its deadline, or returns bytes that do not parse, marks the
// plugin unhealthy once and for good (until the scheduler restarts it), and so do
// PluginOptions::max_consecutive_errors calls of one kind in a row that return an error. Until then
// an error fails only its own request: a failed launch reports the task lost (its job is placed
// again without spending an attempt); a failed stop is sent again after a backoff (the engine
// waits for the task's end, and a preemption behind it would wait for ever); a failed resize or
// re-partition is logged; a failed
// poll, telemetry or inventory read is asked again at the next one. Once unhealthy,
// Wiring::on_unhealthy runs on the strand, later launches fail at once (the task exits with
// kPluginFailedExitCode), and no further call is made.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/executor.h"
#include "engine/timer_queue.h"
#include "model/inventory_diff.h"
#include "plugins/launch_message.h"
#include "plugins/operation_tracker.h"
#include "plugins/plugin_library.h"
#include "plugins/plugin_worker.h"
#include "tessera/clock.h"
#include "tessera/logging.h"
#include "tessera/plugin_host.h"

namespace tessera {
namespace v1 {
class Inventory;
}

class PluginExecutor final : public Executor {
 public:
  // The exit code a task reports when the plugin refused or could not be asked to launch it.
  static constexpr int kPluginFailedExitCode = -1;
  // The exit code of a task stopped while its launch waited for a partition result (SIGTERM's).
  static constexpr int kStoppedBeforeLaunchExitCode = 143;

  struct Wiring {
    std::function<void(std::function<void()>)> post;  // runs a function on the decision strand.
    ExecutorEvents* events = nullptr;                 // strand only.
    TimerQueue* timers = nullptr;                     // strand only.
    // Shared: a call abandoned at its deadline may still ask the time after the scheduler is gone.
    std::shared_ptr<const Clock> clock;
    std::function<void(const std::string& why)> on_unhealthy;  // strand only.
    // GPU readings the plugin reports (on_telemetry); runs on the strand.
    std::function<void(const v1::GpuTelemetry& reading)> telemetry;
    // The plugin's nodes changed since the inventory taken before; runs on the strand.
    std::function<void(const InventoryDiff& diff)> on_inventory;
    // The scheduler's log (Options::log): the plugin's own lines (tessera_host_log) and what
    // goes wrong with it.
    LogOptions log;
    // Options::fencing_epoch, sent in every request (ABI 1.1).
    uint64_t fencing_epoch = 0;
    // A capacity provider's cloud takes `node` back at `deadline_us` (SPOT_INTERRUPTION); runs on
    // the strand.
    std::function<void(const std::string& node, int64_t deadline_us, const std::string& why)>
        on_interruption;
    // The backend's operations; they outlive this executor (a restart keeps the totals). Null:
    // the executor keeps its own.
    std::shared_ptr<OperationTracker> operations;
    // A provisioning request ended: completed (`succeeded`) or failed, timed out included; `why`
    // is the plugin's message or the timeout; `nodes` the nodes PROVISION_COMPLETED named (they
    // may join through another backend, under these names). Runs on the strand.
    std::function<void(const std::string& request_id, bool succeeded, const std::string& why,
                       const std::vector<std::string>& nodes)>
        on_provisioned;
    // This plugin re-partitions a GPU of another backend's node (BackendOptions::partitions):
    // the re-partition started, its result, or its call failed (no result). Each belongs to the
    // node's owner (PartitionUnderWay, TakePartitionResult, PartitionFailed). Strand.
    std::function<void(const std::string& node, int gpu)> on_foreign_partition_started;
    std::function<void(const std::string& node, int gpu, const v1::PartitionLayoutResult& result)>
        on_foreign_partition_result;
    std::function<void(const std::string& node, int gpu, const std::string& why)>
        on_foreign_partition_failed;
    // The backend's name (BackendOptions::name, else the plugin's): launches of the jobs it
    // submitted carry their external id (LaunchMessage).
    std::string backend_name;
    // A job source's work (BackendEvent SUBMIT_JOB, WITHDRAW_JOB); run on the strand.
    std::function<void(const v1::JobSpec& job, const std::string& external_id)> on_job_submitted;
    std::function<void(const std::string& external_id)> on_job_withdrawn;
  };

  // Makes an instance of `library` (on_init with options.config), waiting at most the deadline.
  static StatusOr<std::unique_ptr<PluginExecutor>> Start(std::shared_ptr<PluginLibrary> library,
                                                         const PluginOptions& options,
                                                         Wiring wiring);
  ~PluginExecutor() override;

  // Asks the plugin for its nodes and its live tasks; used while opening, before the strand runs.
  StatusOr<std::vector<v1::NodeSpec>> LoadInventory();
  StatusOr<std::vector<TaskRef>> LoadLiveTasks();
  // ABI 1.1, after LoadInventory and LoadLiveTasks: on_start with the fencing epoch (a plugin
  // without on_start, one of ABI 1.0 say, skips it). Errors: the plugin's, as on_init's.
  Status StartPlugin();
  // A capacity provider's node groups (ABI 1.1 on_node_groups); none for a plugin without it.
  StatusOr<std::vector<v1::NodeGroup>> LoadNodeGroups();
  // Asks the plugin for its events now. Called once it is opened, so that on a virtual clock the
  // plugin's first wake-up (BackendEvents.next_event_us: a scripted change, say) is known
  // before anything is launched.
  void Poll() { PostPoll(); }

  // The inventory as last taken (at open, or at the latest INVENTORY_CHANGED).
  std::vector<v1::NodeSpec> Inventory() override { return inventory_; }
  void Launch(const LaunchRequest& request) override;
  void Stop(const TaskRef& task, int64_t grace_ms) override;
  void Resize(const TaskRef& job, int tasks) override;
  void ApplyMigLayout(const std::string& node, int gpu,
                      const std::vector<v1::MigInstance>& layout) override;
  std::vector<TaskRef> LiveTasks() override { return live_; }
  // Partition results (ABI 1.1): a MIG launch onto a GPU whose re-partition is under way waits
  // for its result, so that it carries the new instance's UUID and GI/CI ids; if the layout
  // failed for the GPU (before or after the launch was asked for), or no result comes within
  // twice the partition deadline, the task is reported lost (placed again without spending an
  // attempt). Strand.
  //
  // Another backend's partitioner re-partitions GPU `gpu` of this executor's node `node`.
  void PartitionUnderWay(const std::string& node, int gpu);
  // What the partitioner (this plugin, or another backend's) says GPU `gpu` of `node` has now.
  // A layout that failed for the GPU reaches the engine as a change of the node's inventory:
  // the layout it has, no longer managed (until the plugin's next inventory says otherwise), so
  // it is not tried again.
  void TakePartitionResult(const std::string& node, int gpu,
                           const v1::PartitionLayoutResult& result);
  // The partitioner's call for GPU `gpu` of `node` failed, so no result comes: taken as a layout
  // that failed with `why`, the GPU keeping the layout last reported (TakePartitionResult).
  void PartitionFailed(const std::string& node, int gpu, const std::string& why);
  // Capacity providers (strand): asks for `count` nodes of `node_group`. `request_id` names the
  // request to the plugin (the same id never provisions twice, so a caller that retries after a
  // crash passes the one it used). Ends through Wiring::on_provisioned; the operation's id.
  uint64_t Provision(const std::string& node_group, int count, const std::string& request_id);
  // Capacity providers (strand): gives `nodes` back; they leave with the plugin's next inventory.
  void Deprovision(const std::vector<std::string>& nodes);
  bool Busy() const override;

  bool healthy() const { return !unhealthy_.load(); }
  // A call is stuck in the plugin: its thread cannot be taken back, so an in-process plugin
  // gets no new instance beside it. Any thread.
  bool hung() const { return worker_->hung() || reads_->hung(); }
  // An unhealthy executor's instance, shut down (on_shutdown, within the call deadline) unless a
  // call is stuck in it, so that a new instance of an in-process plugin does not meet the old
  // one's threads and resources. Off the strand (PluginBackend's restart); idempotent.
  void ShutDownInstance();
  // Why it turned unhealthy (set as it turns so, before Wiring::on_unhealthy runs); empty while
  // healthy. Any thread.
  std::string unhealthy_reason() const;
  const PluginInfo& info() const { return library_->info(); }
  // Strand: GPU `gpu` of `node` as the plugin last described it (its UUID, and the devices of
  // its layout from partition results), or null.
  const v1::GpuDevice* Device(const std::string& node, int gpu) const {
    return devices_.Find(node, gpu);
  }
  const std::shared_ptr<PluginLibrary>& library() const { return library_; }

 private:
  struct Shared;  // what plugin threads and callbacks may touch after we are gone.

  PluginExecutor(std::shared_ptr<PluginLibrary> library, const PluginOptions& options,
                 Wiring wiring);
  // Queues a call that sends `request` to `call`. An error fails this request only:
  // `on_error(why)` (if any) runs on the strand, until PluginOptions::max_consecutive_errors
  // errors in a row turn the plugin unhealthy. `on_failure` (if any) runs on the strand when the
  // request cannot be made (the plugin is unhealthy, or turned so with this call).
  // The request is operation `kind` for `subject`, timed by `deadline`.
  void PostRequest(const std::string& what, OperationKind kind, std::string subject,
                   std::chrono::milliseconds deadline,
                   tessera_status (*const* call)(tessera_plugin_instance*, tessera_bytes,
                                                 tessera_sink*),
                   std::string request, std::function<void()> on_failure = nullptr,
                   std::function<void(const std::string& why)> on_error = nullptr);
  // Hands `call` to the worker: queued on the real clock; on a virtual clock, queued and waited
  // for (within the call deadline). False when it was not queued (the worker is hung).
  enum class Lane { kOperations, kReads };
  bool Queue(Lane lane, std::string what, PluginWorker::Call call,
             std::chrono::milliseconds deadline = {});
  // Strand: provisioning request `request_id` ended: the plugin reported it (with the nodes
  // that joined, by their names in the scheduler), or it failed here.
  void TakeProvisionEnd(const std::string& request_id, bool succeeded, const std::string& why,
                        const std::vector<std::string>& nodes = {});
  // Strand: provisioning operation `id` is past its deadline, unless it ended before.
  void ExpireProvision(uint64_t id);
  // A kind's deadline (PluginOptions::launch_deadline, ...): call_deadline when zero.
  std::chrono::milliseconds DeadlineOf(std::chrono::milliseconds kind) const;
  // Sends a stop; one the plugin fails is sent again after a backoff (1 s, doubling to 30 s)
  // until it succeeds or the plugin turns unhealthy (max_consecutive_errors). `retry` counts the
  // sends before this one.
  void SendStop(const TaskRef& task, int64_t grace_ms, int retry);
  void PostPoll();
  // Asks the plugin for GPU readings (on_telemetry, when it has one).
  void PostTelemetry();
  // Asks the plugin for its inventory again (it reported INVENTORY_CHANGED).
  void PostInventoryRead();
  // ABI 1.1 partitioners: on_apply_partition_layout, whose result TakePartitionResult takes.
  void PostPartitionLayout(const std::string& node, int gpu,
                           const std::vector<v1::MigInstance>& layout);
  // Strand: this plugin's partition result, for a GPU of its own or of another backend's node.
  void TakeOwnPartitionResult(const std::string& node, int gpu,
                              const v1::PartitionLayoutResult& result);
  // Strand: a re-partition of one of this executor's GPUs is under way; MIG launches onto it
  // wait (waiting_for_partition_), at most twice the partition deadline.
  void WaitForPartition(const std::string& node, int gpu);
  // Strand: the launches waiting for `gpu`'s re-partition go out, or, when `failure` is set,
  // their tasks are reported lost with it.
  void ReleaseWaitingLaunches(const std::string& node, int gpu, const std::string& failure);
  bool OwnsNode(const std::string& node) const;
  // Strand: a MIG launch onto a GPU whose re-partition is under way waits for its result; one
  // onto an instance a failed layout did not make is reported lost. True when either happened.
  bool HeldForPartition(const LaunchRequest& request);
  // Strand: `inventory` replaces the one taken before; the difference goes to the engine.
  void TakeInventory(const v1::Inventory& inventory);
  void PollerLoop();

  std::shared_ptr<PluginLibrary> library_;
  PluginOptions options_;
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<PluginWorker> worker_;  // the operations lane.
  std::unique_ptr<PluginWorker> reads_;   // polls and telemetry.
  struct Provisioning {
    uint64_t operation = 0;
    std::optional<TimerQueue::TimerId> deadline;
  };
  std::map<std::string, Provisioning> provisioning_;  // strand, by request id.
  // Strand: GPUs (node, index) being re-partitioned, and the MIG launches onto each that wait.
  std::map<std::pair<std::string, int>, std::vector<LaunchRequest>> waiting_for_partition_;
  // Strand: GPUs whose latest layout failed, and why; a MIG launch placed onto one before the
  // engine heard of it is reported lost rather than sent for an instance that is not there.
  std::map<std::pair<std::string, int>, std::string> failed_partitions_;
  // Strand: GPUs (node, index), this executor's or another backend's, whose layout this plugin
  // was asked for and has not answered; failed all at once if it turns unhealthy.
  std::set<std::pair<std::string, int>> partitions_under_way_;
  std::atomic<bool> unhealthy_{false};
  std::vector<v1::NodeSpec> inventory_;
  DeviceBook devices_;  // the devices of inventory_, by name, for launches.
  std::vector<TaskRef> live_;
  std::thread poller_;
  std::atomic<bool> stopping_{false};
  std::mutex poller_mu_;
  std::condition_variable poller_wake_;
};

}  // namespace tessera
