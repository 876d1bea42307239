// PluginRestarter: brings an executor plugin back after it turned unhealthy, off the decision
// strand.
//
// Schedule (called on the strand when the plugin turns unhealthy) wakes a thread of its own,
// which waits a backoff (100 ms, doubling with each restart in the last minute), then calls
// `start`: a fresh host process for an isolated plugin (an in-process one's old instance shut
// down instead), on_init with the same config, on_inventory and on_reconcile, each within the
// call deadline. A failed start counts as a restart and is
// retried. A success goes to `install`, which hands it to the strand. More than
// max_restarts_per_minute restarts within a minute and the restarter gives up: the plugin stays
// unhealthy (its nodes cordoned) until the scheduler is reopened.
//
// Real time throughout: processes start and crash in real time, whatever the scheduler's clock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "plugins/plugin_executor.h"
#include "tessera/logging.h"

namespace tessera {

class PluginRestarter {
 public:
  // A started executor and what it said while opening.
  struct Restarted {
    std::unique_ptr<PluginExecutor> executor;
    std::vector<v1::NodeSpec> inventory;
    std::vector<TaskRef> live;
    std::vector<v1::NodeGroup> node_groups;  // a capacity provider's (ABI 1.1).
  };

  // `log` is the scheduler's (Options::log): restarts and giving up are reported there.
  PluginRestarter(std::string plugin, int max_restarts_per_minute,
                  std::function<StatusOr<Restarted>()> start,
                  std::function<void(Restarted)> install, LogOptions log);
  ~PluginRestarter() { Stop(); }
  PluginRestarter(const PluginRestarter&) = delete;
  PluginRestarter& operator=(const PluginRestarter&) = delete;

  // Stops the thread, waiting for a start under way (at most a few call deadlines); no restart
  // happens after it returns. Idempotent; any thread.
  void Stop();
  // The plugin turned unhealthy: restart it unless the budget is spent. Any thread.
  void Schedule(const std::string& why);
  // True from Schedule until the new executor is handed to `install` or the restarter gives up.
  bool Busy() const;
  // Restarts so far, failed ones included.
  int restarts() const;

 private:
  void Loop();

  const std::string plugin_;
  const LogOptions log_;
  const int max_per_minute_;
  std::function<StatusOr<Restarted>()> start_;
  std::function<void(Restarted)> install_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool pending_ = false;  // a restart is asked for.
  bool running_ = false;  // a start is under way, or its result being installed.
  bool stopping_ = false;
  int restarts_ = 0;
  std::deque<std::chrono::steady_clock::time_point> recent_;  // restarts in the last minute.
  std::mutex join_mu_;  // Stop may be called from two threads.
  std::thread thread_;
};

}  // namespace tessera
