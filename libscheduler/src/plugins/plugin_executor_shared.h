// The state a PluginExecutor shares with plugin threads and host callbacks (Shared), and the
// helpers its calls use: sinks that keep what a plugin writes, and the messages of failed calls.
// Internal to the executor's files (plugin_executor*.cc), which are one class split by idea:
// plugin_executor.cc (opening, launches, stops, reads, health), plugin_executor_partitions.cc
// (partition layouts and their results), plugin_executor_provisioning.cc (capacity providers).
#pragma once

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/log.h"
#include "plugins/plugin_executor.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera {
namespace executor_detail {

// A sink that keeps what the plugin writes.
struct StringSink {
  tessera_sink sink;
  std::string bytes;
  bool written = false;

  StringSink() {
    sink.context = this;
    sink.write = [](tessera_sink* s, const uint8_t* data, size_t size) {
      auto* self = static_cast<StringSink*>(s->context);
      self->bytes.assign(reinterpret_cast<const char*>(data), size);
      self->written = true;
    };
  }
  StringSink(const StringSink&) = delete;
  StringSink& operator=(const StringSink&) = delete;
};

inline tessera_bytes Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

inline TaskRef FromProto(const v1::TaskRef& r) { return TaskRef{r.job(), r.attempt(), r.task()}; }

inline std::string GpuSubject(const std::string& node, int gpu) {
  return "node " + node + " GPU " + std::to_string(gpu);
}

inline std::string TaskSubject(const TaskRef& r) {
  return "job " + std::to_string(r.job) + "." + std::to_string(r.attempt) + " task " +
         std::to_string(r.task);
}

inline v1::TaskRef ToProto(const TaskRef& r) {
  v1::TaskRef p;
  p.set_job(r.job);
  p.set_attempt(r.attempt);
  p.set_task(r.task);
  return p;
}

inline std::string CallError(const PluginInfo& info, const std::string& what, tessera_status code,
                             const std::string& message) {
  return "plugin '" + info.name + "': " + what + " failed (status " + std::to_string(code) + ")" +
         (message.empty() ? "" : ": " + message);
}

// Calls `fn`, a function that writes a reply (inventory, live tasks, events, telemetry: the
// REPLY rows of abi_calls.h), and parses what it wrote into `reply`: the plugin's own status and
// message when it failed, INVALID_ARGUMENT when what it wrote is not a `reply`, else OK.
// `*malformed` (when given) says which of the two failures it was.
inline Status CallForReply(tessera_status (*fn)(tessera_plugin_instance*, tessera_sink*,
                                                tessera_sink*),
                           tessera_plugin_instance* instance, const PluginInfo& info,
                           const std::string& what, google::protobuf::MessageLite* reply,
                           bool* malformed = nullptr) {
  StringSink out, error;
  const tessera_status code = fn(instance, &out.sink, &error.sink);
  if (code != TESSERA_OK) {
    return Status(static_cast<StatusCode>(code), CallError(info, what, code, error.bytes));
  }
  if (!reply->ParseFromString(out.bytes)) {
    if (malformed != nullptr) *malformed = true;
    return InvalidArgumentError("plugin '" + info.name + "': " + what +
                                " wrote bytes that are not a " + reply->GetTypeName());
  }
  return Status::Ok();
}

}  // namespace executor_detail

// State shared with plugin threads and host callbacks, which may outlive the executor when a
// call hangs: it keeps the library loaded and says whether anyone still listens.
struct PluginExecutor::Shared {
  std::shared_ptr<PluginLibrary> library;
  tessera_host_api host{};
  tessera_plugin_instance* instance = nullptr;  // null once shut down.

  // The last reference is gone, so the executor is, and no call is in the plugin any more (each
  // queued or running call holds one). An in-process instance that is still here was left
  // because a call hung in it; that call has returned now, so the instance gets its on_shutdown
  // (on the thread that let go last, usually the one the call hung on) and its memory, threads
  // and devices go. An isolated one's process was killed instead.
  ~Shared() {
    if (instance != nullptr && library && !library->isolated()) {
      library->descriptor().tessera_plugin_on_shutdown(instance);
    }
  }
  Wiring wiring;
  std::atomic<bool>* unhealthy = nullptr;  // valid while !closed.

  std::mutex mu;
  bool closed = false;           // the executor is gone: drop whatever arrives.
  std::string unhealthy_reason;  // why it turned unhealthy; guarded by mu.

  // Strand only: asks the executor for a poll; and, on a virtual clock, the one timer that
  // polls at the time the latest poll named (BackendEvents.next_event_us).
  std::function<void()> poll_hook;
  std::optional<TimerQueue::TimerId> poll_timer;
  // Strand only, while the executor lives: the plugin said its inventory changed (ask again),
  // and the answer to that question.
  std::function<void()> inventory_hook;
  std::function<void(const v1::Inventory&)> inventory_taken;
  // Strand only, while the executor lives: a partition result to take; the end of a
  // provisioning request.
  std::function<void(const std::string& node, int gpu, const v1::PartitionLayoutResult&)>
      partition_taken;
  std::function<void(const std::string& request_id, bool succeeded, const std::string& why,
                     const std::vector<std::string>& nodes)>
      provision_ended;
  std::function<void(const std::string& why)> provisioning_failed;  // every request under way.
  // Strand only, while the executor lives: a re-partition call that failed.
  std::function<void(const std::string& node, int gpu, const std::string& why)>
      partition_call_failed;
  // Strand only, while the executor lives: the plugin turned unhealthy, so no result comes for
  // any re-partition under way (its queued calls are dropped).
  std::function<void(const std::string& why)> partitions_failed;
  // Strand only, while the executor lives: a stop the plugin failed, to send again.
  std::function<void(const TaskRef& task, int64_t grace_ms, int retry)> stop_again;
  std::weak_ptr<Shared> self;

  // Strand only: the latest poll said the plugin next has something to report at `next_us`
  // (0 = nothing). Polls answer in the order they were asked, so the latest one is right: a
  // timer an earlier poll asked for (a task since stopped early, say) is no wake-up any more.
  void PollAt(int64_t next_us, const std::shared_ptr<Shared>& self) {
    if (poll_timer && poll_timer->first == next_us) return;
    if (poll_timer) wiring.timers->Cancel(*poll_timer);
    poll_timer.reset();
    if (next_us <= 0) return;
    poll_timer = wiring.timers->Schedule(next_us, [self] {
      self->poll_timer.reset();
      if (self->poll_hook) self->poll_hook();
    });
  }

  // Runs `fn` on the strand unless the executor is gone.
  void Post(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu);
    if (!closed) wiring.post(std::move(fn));
  }

  // Calls of each kind ("on_launch", "on_poll_events", ...) in a row that returned an error; a
  // call of that kind that succeeds resets its count (polls that succeed say nothing about
  // launches that keep failing). Any thread.
  std::mutex errors_mu;
  std::map<std::string, int> errors_in_a_row;  // guarded by errors_mu.
  int max_errors_in_a_row = 1;

  // A call `what` returned an error: only its own request fails (`request_failed`, when given,
  // runs on the strand), until max_errors_in_a_row of that kind in a row mark the plugin
  // unhealthy.
  void CallFailed(const std::string& what, const std::string& why,
                  std::function<void()> request_failed) {
    // A call that failed because the plugin's process is gone is the crash, not the request.
    if (library->lost()) {
      MarkUnhealthy(why);
      return;
    }
    int n = 0;
    {
      std::lock_guard<std::mutex> lock(errors_mu);
      n = ++errors_in_a_row[what];
    }
    if (n >= max_errors_in_a_row) {
      MarkUnhealthy(n == 1 ? why : why + " (" + std::to_string(n) + " failed calls in a row)");
      return;
    }
    LogWarning(wiring.log, "{} (failed call {} in a row; at {} the plugin is marked unhealthy)",
               why, n, max_errors_in_a_row);
    if (request_failed) Post(std::move(request_failed));
  }
  void CallSucceeded(const std::string& what) {
    std::lock_guard<std::mutex> lock(errors_mu);
    errors_in_a_row.erase(what);
  }

  // A reply call (poll, telemetry, inventory) ended with `read`: bytes that do not parse mark
  // the plugin unhealthy at once, an error counts as a failed call. True when it succeeded.
  bool TakeReply(const std::string& what, const Status& read, bool malformed) {
    if (read.ok()) {
      CallSucceeded(what);
      return true;
    }
    if (malformed) {
      MarkUnhealthy(read.message());
    } else {
      CallFailed(what, read.message(), nullptr);
    }
    return false;
  }

  void MarkUnhealthy(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    if (closed || unhealthy->exchange(true)) return;
    unhealthy_reason = why;
    LogError(wiring.log, "{}; marking the plugin unhealthy", why);
    // Its queued calls are dropped, and a provisioning request has no one left to end it.
    const int failed = wiring.operations->FailAll("the plugin turned unhealthy: " + why);
    if (failed > 0) LogWarning(wiring.log, "{} operation(s) under way failed with it", failed);
    wiring.post([weak = self, why] {
      if (std::shared_ptr<Shared> s = weak.lock(); s && s->provisioning_failed) {
        s->provisioning_failed("the plugin turned unhealthy: " + why);
      }
    });
    wiring.post([weak = self, why] {
      if (std::shared_ptr<Shared> s = weak.lock(); s && s->partitions_failed) {
        s->partitions_failed("the plugin turned unhealthy: " + why);
      }
    });
    wiring.post([on_unhealthy = wiring.on_unhealthy, why] {
      if (on_unhealthy) on_unhealthy(why);
    });
  }

  // Hands one event to the engine; false when the bytes do not parse.
  bool Deliver(const uint8_t* data, size_t size) {
    v1::BackendEvent event;
    if (!event.ParseFromArray(data, static_cast<int>(size))) return false;
    Deliver(event);
    return true;
  }

  void Deliver(const v1::BackendEvent& event) {
    const TaskRef ref = executor_detail::FromProto(event.ref());
    ExecutorEvents* events = wiring.events;
    switch (event.kind()) {
      case v1::BackendEvent::TASK_STARTED:
        Post([events, ref] { events->OnTaskStarted(ref); });
        break;
      case v1::BackendEvent::TASK_EXITED:
        Post([events, ref, code = event.exit_code()] { events->OnTaskExited(ref, code); });
        break;
      case v1::BackendEvent::TASK_LOST:
        Post([events, ref, why = event.message()] { events->OnTaskLost(ref, why); });
        break;
      case v1::BackendEvent::LAUNCH_REJECTED:
        Post([events, ref, retryable = event.retryable(), why = event.message()] {
          events->OnLaunchRejected(ref, retryable, why);
        });
        break;
      case v1::BackendEvent::SPOT_INTERRUPTION:
        Post([on = wiring.on_interruption, node = event.node(), deadline = event.deadline_us(),
              why = event.message()] {
          if (on) on(node, deadline, why);
        });
        break;
      case v1::BackendEvent::PROVISION_COMPLETED:
      case v1::BackendEvent::PROVISION_FAILED:
        Post([weak = self, id = event.request_id(), why = event.message(),
              ok = event.kind() == v1::BackendEvent::PROVISION_COMPLETED,
              nodes = std::vector<std::string>(event.nodes().begin(), event.nodes().end())] {
          if (std::shared_ptr<Shared> s = weak.lock(); s && s->provision_ended) {
            s->provision_ended(id, ok, why, nodes);
          }
        });
        break;
      case v1::BackendEvent::SUBMIT_JOB:
        Post([on = wiring.on_job_submitted, job = event.job(), id = event.external_id()] {
          if (on) on(job, id);
        });
        break;
      case v1::BackendEvent::WITHDRAW_JOB:
        Post([on = wiring.on_job_withdrawn, id = event.external_id()] {
          if (on) on(id);
        });
        break;
      case v1::BackendEvent::INVENTORY_CHANGED:
        Post([weak = self] {
          if (std::shared_ptr<Shared> s = weak.lock(); s && s->inventory_hook) s->inventory_hook();
        });
        break;
      default:
        LogWarning(wiring.log, "plugin '{}' sent an event of unknown kind {}", library->info().name,
                   static_cast<int>(event.kind()));
    }
  }
};

}  // namespace tessera
