// PluginWorker: runs one lane of a plugin instance's calls, one at a time on a thread of their
// own, each with a deadline, so that a slow or hung plugin never blocks the caller (the decision
// strand). PluginExecutor keeps two lanes per plugin (operations, and the polls and telemetry
// reads the ABI lets overlap them), so a slow launch never delays a poll.
//
// Calls are queued with Post (fire and forget) or RunAndWait (the caller waits, at most the
// deadlines of the calls queued up to and including its own). Each call has its own deadline
// (a launch may take longer than a poll); zero means the worker's default. A watchdog thread
// times the running call; one that outlives its deadline is
// abandoned: the worker is marked hung, `on_hung` is called once (from the watchdog thread), no
// further call starts, and waiting callers get UNAVAILABLE. The stuck thread cannot be killed;
// it is detached at destruction and keeps alive, through the state it shares, everything the
// call may still touch (the caller's closures hold the plugin library).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "tessera/status.h"

namespace tessera {

class PluginWorker {
 public:
  using Call = std::function<void()>;

  PluginWorker(std::string plugin, std::chrono::milliseconds deadline,
               std::function<void(const std::string& why)> on_hung);
  ~PluginWorker();
  PluginWorker(const PluginWorker&) = delete;
  PluginWorker& operator=(const PluginWorker&) = delete;

  // Queues `call`, named `what` in messages, to be abandoned after `deadline` (zero: the
  // worker's default). False when the worker is hung or stopping.
  bool Post(std::string what, Call call, std::chrono::milliseconds deadline = {});
  // Runs `call` and waits for it to finish, at most the deadlines of the calls ahead and its own.
  // Errors: UNAVAILABLE when it did not finish in time or the worker is hung.
  Status RunAndWait(std::string what, Call call, std::chrono::milliseconds deadline = {});
  // Queues `call` like Post, then waits until it has returned (as long as RunAndWait would).
  // False when it was not queued; a call that outlives the wait is the watchdog's.
  bool PostAndWait(std::string what, Call call, std::chrono::milliseconds deadline = {});

  // Calls queued or running, not counting one that hung (but counting the report of the hang
  // while on_hung runs).
  size_t InFlight() const;
  bool hung() const;

 private:
  struct State;
  // Queues `call` and returns how long waiting for it may take (the deadlines of the calls
  // ahead of it and its own); nullopt when the worker is hung or stopping.
  std::optional<std::chrono::milliseconds> Enqueue(std::string what, Call call,
                                                   std::chrono::milliseconds deadline);
  static void Run(std::shared_ptr<State> state);
  static void Watch(std::shared_ptr<State> state);

  std::shared_ptr<State> state_;
  std::thread worker_;
  std::thread watchdog_;
};

}  // namespace tessera
