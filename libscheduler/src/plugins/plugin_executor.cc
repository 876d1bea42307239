#include "plugins/plugin_executor.h"

#include <algorithm>
#include <map>
#include <optional>

#include "common/log.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera {
namespace {

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

tessera_bytes Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TaskRef FromProto(const v1::TaskRef& r) { return TaskRef{r.job(), r.attempt(), r.task()}; }

std::string GpuSubject(const std::string& node, int gpu) {
  return "node " + node + " GPU " + std::to_string(gpu);
}

std::string TaskSubject(const TaskRef& r) {
  return "job " + std::to_string(r.job) + "." + std::to_string(r.attempt) + " task " +
         std::to_string(r.task);
}

v1::TaskRef ToProto(const TaskRef& r) {
  v1::TaskRef p;
  p.set_job(r.job);
  p.set_attempt(r.attempt);
  p.set_task(r.task);
  return p;
}

std::string CallError(const PluginInfo& info, const std::string& what, tessera_status code,
                      const std::string& message) {
  return "plugin '" + info.name + "': " + what + " failed (status " + std::to_string(code) + ")" +
         (message.empty() ? "" : ": " + message);
}

// Calls `fn`, a function that writes a reply (inventory, live tasks, events, telemetry: the
// REPLY rows of abi_calls.h), and parses what it wrote into `reply`: the plugin's own status and
// message when it failed, INVALID_ARGUMENT when what it wrote is not a `reply`, else OK.
// `*malformed` (when given) says which of the two failures it was.
Status CallForReply(tessera_status (*fn)(tessera_plugin_instance*, tessera_sink*, tessera_sink*),
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

}  // namespace

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
  std::function<void(const std::string& request_id, bool succeeded, const std::string& why)>
      provision_ended;
  std::function<void(const std::string& why)> provisioning_failed;  // every request under way.
  // Strand only, while the executor lives: a re-partition call that failed.
  std::function<void(const std::string& node, int gpu, const std::string& why)>
      partition_call_failed;
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
    const TaskRef ref = FromProto(event.ref());
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
              ok = event.kind() == v1::BackendEvent::PROVISION_COMPLETED] {
          if (std::shared_ptr<Shared> s = weak.lock(); s && s->provision_ended) {
            s->provision_ended(id, ok, why);
          }
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

PluginExecutor::PluginExecutor(std::shared_ptr<PluginLibrary> library, const PluginOptions& options,
                               Wiring wiring)
    : library_(std::move(library)), options_(options), shared_(std::make_shared<Shared>()) {
  shared_->library = library_;
  shared_->wiring = std::move(wiring);
  if (!shared_->wiring.operations)
    shared_->wiring.operations = std::make_shared<OperationTracker>();
  shared_->unhealthy = &unhealthy_;
  shared_->max_errors_in_a_row = std::max(1, options_.max_consecutive_errors);
  tessera_host_api& host = shared_->host;
  host.struct_size = sizeof(tessera_host_api);
  host.context = shared_.get();
  host.tessera_host_log = [](void* context, int32_t level, const char* message, size_t size) {
    auto* s = static_cast<Shared*>(context);
    const std::string_view text(message, size);
    const std::string& name = s->library->info().name;
    switch (level) {
      case TESSERA_LOG_DEBUG:
        LogDebug(s->wiring.log, "[{}] {}", name, text);
        break;
      case TESSERA_LOG_WARN:
        LogWarning(s->wiring.log, "[{}] {}", name, text);
        break;
      case TESSERA_LOG_ERROR:
        LogError(s->wiring.log, "[{}] {}", name, text);
        break;
      default:
        LogInfo(s->wiring.log, "[{}] {}", name, text);
    }
  };
  host.tessera_host_emit_event = [](void* context, const uint8_t* data, size_t size) {
    auto* s = static_cast<Shared*>(context);
    if (!s->Deliver(data, size)) {
      s->MarkUnhealthy("plugin '" + s->library->info().name +
                       "': emit_event sent bytes that are not a tessera.v1.BackendEvent");
    }
  };
  host.tessera_host_now_us = [](void* context) {
    return static_cast<Shared*>(context)->wiring.clock->NowUs();
  };
  host.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  shared_->self = shared_;
  shared_->poll_hook = [this] {
    PostPoll();
    PostTelemetry();
  };
  shared_->inventory_hook = [this] { PostInventoryRead(); };
  shared_->inventory_taken = [this](const v1::Inventory& inventory) { TakeInventory(inventory); };
  shared_->partition_taken = [this](const std::string& node, int gpu,
                                    const v1::PartitionLayoutResult& result) {
    TakeOwnPartitionResult(node, gpu, result);
  };
  shared_->provision_ended = [this](const std::string& id, bool ok, const std::string& why) {
    TakeProvisionEnd(id, ok, why);
  };
  shared_->stop_again = [this](const TaskRef& task, int64_t grace_ms, int retry) {
    const int64_t backoff_ms = std::min<int64_t>(30'000, int64_t{1000} << std::min(retry - 1, 5));
    LogWarning(shared_->wiring.log, "plugin '{}': sending the stop of {} again in {} ms",
               library_->info().name, TaskSubject(task), backoff_ms);
    std::weak_ptr<Shared> weak = shared_;
    shared_->wiring.timers->Schedule(shared_->wiring.clock->NowUs() + backoff_ms * 1000,
                                     [this, weak, task, grace_ms, retry] {
                                       if (auto s = weak.lock(); s && s->stop_again && !unhealthy_)
                                         SendStop(task, grace_ms, retry);
                                     });
  };
  shared_->partition_call_failed = [this](const std::string& node, int gpu,
                                          const std::string& why) {
    // Another backend's GPU waits for its result until its own bound.
    if (OwnsNode(node)) ReleaseWaitingLaunches(node, gpu, why);
  };
  shared_->provisioning_failed = [this](const std::string& why) {
    while (!provisioning_.empty()) {
      const std::string request_id = provisioning_.begin()->first;
      TakeProvisionEnd(request_id, false, why);
    }
  };
  std::weak_ptr<Shared> weak = shared_;
  auto on_hung = [weak](const std::string& why) {
    if (auto s = weak.lock()) s->MarkUnhealthy(why);
  };
  worker_ = std::make_unique<PluginWorker>(library_->info().name, options_.call_deadline, on_hung);
  reads_ = std::make_unique<PluginWorker>(
      library_->info().name,
      options_.read_deadline.count() > 0 ? options_.read_deadline : options_.call_deadline,
      on_hung);
  // An isolated plugin's process can end between calls; do not wait for the next call to see it.
  library_->SetOnLost([weak](const std::string& why) {
    if (auto s = weak.lock()) s->MarkUnhealthy(why);
  });
}

StatusOr<std::unique_ptr<PluginExecutor>> PluginExecutor::Start(
    std::shared_ptr<PluginLibrary> library, const PluginOptions& options, Wiring wiring) {
  // A partitioner alone is a backend with no nodes that shapes other backends' GPUs.
  if (!library->info().executor && !library->info().partitioner) {
    return InvalidArgumentError(
        "plugin '" + library->info().name +
        "' is neither an executor nor a partitioner (its kinds lack "
        "TESSERA_PLUGIN_KIND_EXECUTOR and TESSERA_PLUGIN_KIND_PARTITIONER)");
  }
  std::unique_ptr<PluginExecutor> executor(
      new PluginExecutor(std::move(library), options, std::move(wiring)));
  // The call's results live in shared storage: if it hangs, it may finish after we return.
  struct Init {
    tessera_status code = TESSERA_INTERNAL;
    tessera_plugin_instance* instance = nullptr;
    StringSink error;
  };
  auto init = std::make_shared<Init>();
  std::shared_ptr<Shared> shared = executor->shared_;
  const std::string config = options.config;
  Status waited = executor->worker_->RunAndWait("on_init", [shared, init, config] {
    init->code =
        shared->library->Init(&shared->host, Bytes(config), &init->instance, &init->error.sink);
  });
  if (!waited.ok()) return waited;
  if (init->code != TESSERA_OK) {
    const PluginInfo& info = executor->library_->info();
    return Status(static_cast<StatusCode>(init->code),
                  "plugin '" + info.name + "': on_init refused the config: " + init->error.bytes);
  }
  shared->instance = init->instance;
  executor->poller_ = std::thread([raw = executor.get()] { raw->PollerLoop(); });
  return executor;
}

PluginExecutor::~PluginExecutor() {
  {
    std::lock_guard<std::mutex> lock(poller_mu_);
    stopping_ = true;
  }
  poller_wake_.notify_all();
  if (poller_.joinable()) poller_.join();
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->closed = true;
    shared_->poll_hook = nullptr;  // the strand is stopped: nothing runs timers any more.
    shared_->inventory_hook = nullptr;
    shared_->inventory_taken = nullptr;
    shared_->partition_taken = nullptr;
    shared_->provision_ended = nullptr;
    shared_->provisioning_failed = nullptr;
    shared_->stop_again = nullptr;
    shared_->partition_call_failed = nullptr;
  }
  // Let a read in flight finish (within its deadline, else the watchdog calls it hung): the
  // plugin is shut down only once no call is in it.
  if (!reads_->hung()) (void)reads_->RunAndWait("the last read", [] {});
  const bool stuck = worker_->hung() || reads_->hung();
  reads_.reset();
  // Shut the instance down unless a call is stuck in it (the ABI allows one call at a time).
  if (shared_->instance != nullptr && !stuck) {
    std::shared_ptr<Shared> shared = shared_;
    Status done = worker_->RunAndWait("on_shutdown", [shared] {
      shared->library->descriptor().tessera_plugin_on_shutdown(shared->instance);
      shared->instance = nullptr;
    });
    if (!done.ok()) LogError(shared_->wiring.log, "{}", done.message());
  } else if (stuck) {
    library_->Abandon();  // an isolated plugin's process is killed, so its stuck call returns.
  }
  worker_.reset();
}

void PluginExecutor::ShutDownInstance() {
  if (shared_->instance == nullptr || hung()) return;
  // No call is queued any more (the executor is unhealthy); let the last ones end first.
  (void)reads_->RunAndWait("the last read", [] {});
  std::shared_ptr<Shared> shared = shared_;
  const Status done = worker_->RunAndWait("on_shutdown", [shared] {
    shared->library->descriptor().tessera_plugin_on_shutdown(shared->instance);
    shared->instance = nullptr;  // the destructor has nothing left to shut down.
  });
  if (!done.ok()) LogError(shared_->wiring.log, "{}", done.message());
}

StatusOr<std::vector<v1::NodeSpec>> PluginExecutor::LoadInventory() {
  if (library_->descriptor().tessera_plugin_on_inventory == nullptr) return inventory_;  // none.
  // The reply lives in shared storage: if the call hangs, it may finish after we return.
  struct Call {
    Status status;
    v1::Inventory inventory;
  };
  auto call = std::make_shared<Call>();
  std::shared_ptr<Shared> shared = shared_;
  TESSERA_RETURN_IF_ERROR(worker_->RunAndWait("on_inventory", [shared, call] {
    call->status =
        CallForReply(shared->library->descriptor().tessera_plugin_on_inventory, shared->instance,
                     shared->library->info(), "on_inventory", &call->inventory);
  }));
  TESSERA_RETURN_IF_ERROR(call->status);
  inventory_.assign(call->inventory.nodes().begin(), call->inventory.nodes().end());
  devices_.Take(inventory_);
  return inventory_;
}

Status PluginExecutor::StartPlugin() {
  if (library_->descriptor().tessera_plugin_on_start == nullptr) return Status::Ok();
  v1::StartRequest start;
  start.set_epoch(shared_->wiring.fencing_epoch);
  struct Call {
    tessera_status code = TESSERA_INTERNAL;
    StringSink error;
  };
  auto call = std::make_shared<Call>();
  std::shared_ptr<Shared> shared = shared_;
  TESSERA_RETURN_IF_ERROR(
      worker_->RunAndWait("on_start", [shared, call, bytes = start.SerializeAsString()] {
        call->code = shared->library->descriptor().tessera_plugin_on_start(
            shared->instance, Bytes(bytes), &call->error.sink);
      }));
  if (call->code != TESSERA_OK) {
    return Status(static_cast<StatusCode>(call->code),
                  CallError(library_->info(), "on_start", call->code, call->error.bytes));
  }
  return Status::Ok();
}

StatusOr<std::vector<v1::NodeGroup>> PluginExecutor::LoadNodeGroups() {
  if (library_->descriptor().tessera_plugin_on_node_groups == nullptr) {
    return std::vector<v1::NodeGroup>{};
  }
  struct Call {
    Status status;
    v1::NodeGroups groups;
  };
  auto call = std::make_shared<Call>();
  std::shared_ptr<Shared> shared = shared_;
  TESSERA_RETURN_IF_ERROR(worker_->RunAndWait("on_node_groups", [shared, call] {
    call->status =
        CallForReply(shared->library->descriptor().tessera_plugin_on_node_groups, shared->instance,
                     shared->library->info(), "on_node_groups", &call->groups);
  }));
  TESSERA_RETURN_IF_ERROR(call->status);
  return std::vector<v1::NodeGroup>(call->groups.groups().begin(), call->groups.groups().end());
}

StatusOr<std::vector<TaskRef>> PluginExecutor::LoadLiveTasks() {
  if (library_->descriptor().tessera_plugin_on_reconcile == nullptr) return live_;  // runs none.
  struct Call {
    Status status;
    v1::LiveTasks live;
  };
  auto call = std::make_shared<Call>();
  std::shared_ptr<Shared> shared = shared_;
  TESSERA_RETURN_IF_ERROR(worker_->RunAndWait("on_reconcile", [shared, call] {
    call->status =
        CallForReply(shared->library->descriptor().tessera_plugin_on_reconcile, shared->instance,
                     shared->library->info(), "on_reconcile", &call->live);
  }));
  TESSERA_RETURN_IF_ERROR(call->status);
  live_.clear();
  for (const v1::TaskRef& r : call->live.tasks()) live_.push_back(FromProto(r));
  return live_;
}

std::chrono::milliseconds PluginExecutor::DeadlineOf(std::chrono::milliseconds kind) const {
  return kind.count() > 0 ? kind : options_.call_deadline;
}

void PluginExecutor::PostRequest(const std::string& what, OperationKind kind, std::string subject,
                                 std::chrono::milliseconds deadline,
                                 tessera_status (*const* call)(tessera_plugin_instance*,
                                                               tessera_bytes, tessera_sink*),
                                 std::string request, std::function<void()> on_failure,
                                 std::function<void(const std::string& why)> on_error) {
  std::shared_ptr<Shared> shared = shared_;
  if (unhealthy_ || *call == nullptr) {
    if (*call == nullptr)
      LogWarning(shared_->wiring.log, "plugin '{}' has no {}", library_->info().name, what);
    if (on_failure) shared->Post(on_failure);
    return;
  }
  deadline = DeadlineOf(deadline);
  OperationTracker* operations = shared->wiring.operations.get();
  const uint64_t op = operations->Begin(kind, std::move(subject), shared->wiring.clock->NowUs(),
                                        deadline.count() * 1000);
  const bool queued = Queue(
      Lane::kOperations, what,
      [shared, call, what, op, request = std::move(request), on_failure, on_error] {
        StringSink error;
        const tessera_status code = (*call)(shared->instance, Bytes(request), &error.sink);
        if (code == TESSERA_OK) {
          shared->wiring.operations->End(op, true);
          shared->CallSucceeded(what);
          return;
        }
        const std::string why = CallError(shared->library->info(), what, code, error.bytes);
        shared->wiring.operations->End(op, false, why);
        shared->CallFailed(what, why,
                           on_error ? std::function<void()>([on_error, why] { on_error(why); })
                                    : std::function<void()>());
        // The call that turned the plugin unhealthy fails as later ones do.
        if (shared->unhealthy->load() && on_failure) shared->Post(on_failure);
      },
      deadline);
  if (!queued) {
    operations->End(op, false, "the plugin is unhealthy; " + what + " was not called");
    if (on_failure) shared->Post(on_failure);
  }
}

void PluginExecutor::Launch(const LaunchRequest& request) {
  if (!waiting_for_partition_.empty() && request.partition &&
      request.partition->sharing() == v1::GPU_SHARING_MIG && request.gpus.size() == 1) {
    auto waiting = waiting_for_partition_.find({request.node, request.gpus[0]});
    if (waiting != waiting_for_partition_.end()) {
      waiting->second.push_back(request);  // it goes out with the result's devices.
      return;
    }
  }
  if (!failed_partitions_.empty() && request.partition &&
      request.partition->sharing() == v1::GPU_SHARING_MIG && request.gpus.size() == 1) {
    // Placed before the engine heard that the layout failed: the instance is not there.
    auto failed = failed_partitions_.find({request.node, request.gpus[0]});
    if (failed != failed_partitions_.end() &&
        devices_.MigDevice(request.node, request.gpus[0], request.partition->mig_profile(),
                           request.partition->mig_start()) == nullptr) {
      ExecutorEvents* events = shared_->wiring.events;
      shared_->Post([events, ref = request.ref,
                     why = "re-partitioning GPU " + std::to_string(request.gpus[0]) + " of node '" +
                           request.node +
                           "' failed: " + failed->second] { events->OnTaskLost(ref, why); });
      return;
    }
  }
  const v1::LaunchTask launch = MakeLaunchTask(request, devices_, shared_->wiring.fencing_epoch);
  ExecutorEvents* events = shared_->wiring.events;
  const TaskRef ref = request.ref;
  PostRequest(
      "on_launch", OperationKind::kLaunch, TaskSubject(ref), options_.launch_deadline,
      &library_->descriptor().tessera_plugin_on_launch, launch.SerializeAsString(),
      [events, ref] { events->OnTaskExited(ref, kPluginFailedExitCode); },
      // A launch the plugin failed (not refused with LAUNCH_REJECTED) never started: its job is
      // placed again without spending an attempt.
      [events, ref](const std::string& why) { events->OnTaskLost(ref, why); });
  PostPoll();
}

void PluginExecutor::Stop(const TaskRef& task, int64_t grace_ms) {
  // A launch still waiting for its GPU's re-partition never reached the plugin: it ends here.
  for (auto& [gpu, launches] : waiting_for_partition_) {
    for (auto it = launches.begin(); it != launches.end(); ++it) {
      if (!(it->ref == task)) continue;
      launches.erase(it);
      ExecutorEvents* events = shared_->wiring.events;
      shared_->Post([events, task] { events->OnTaskExited(task, kStoppedBeforeLaunchExitCode); });
      return;
    }
  }
  SendStop(task, grace_ms, 0);
}

void PluginExecutor::SendStop(const TaskRef& task, int64_t grace_ms, int retry) {
  v1::StopTask stop;
  *stop.mutable_ref() = ToProto(task);
  stop.set_grace_ms(grace_ms);
  stop.set_epoch(shared_->wiring.fencing_epoch);
  std::weak_ptr<Shared> weak = shared_;
  PostRequest("on_stop", OperationKind::kStop,
              TaskSubject(task) + (retry > 0 ? ", sent again (" + std::to_string(retry) + ")" : ""),
              options_.stop_deadline, &library_->descriptor().tessera_plugin_on_stop,
              stop.SerializeAsString(), nullptr, [weak, task, grace_ms, retry](const std::string&) {
                if (auto s = weak.lock(); s && s->stop_again)
                  s->stop_again(task, grace_ms, retry + 1);
              });
  PostPoll();
}

void PluginExecutor::Resize(const TaskRef& job, int tasks) {
  if (library_->descriptor().tessera_plugin_on_resize == nullptr) return;
  v1::ResizeJob resize;
  resize.set_job(job.job);
  resize.set_attempt(job.attempt);
  resize.set_tasks(tasks);
  resize.set_epoch(shared_->wiring.fencing_epoch);
  PostRequest("on_resize", OperationKind::kResize,
              "job " + std::to_string(job.job) + "." + std::to_string(job.attempt) + " to " +
                  std::to_string(tasks) + " task(s)",
              options_.resize_deadline, &library_->descriptor().tessera_plugin_on_resize,
              resize.SerializeAsString());
}

void PluginExecutor::ApplyMigLayout(const std::string& node, int gpu,
                                    const std::vector<v1::MigInstance>& layout) {
  if (library_->descriptor().tessera_plugin_on_apply_partition_layout != nullptr) {
    // A result will come: launches onto the GPU wait for it (the owner's, when the node is
    // another backend's).
    if (OwnsNode(node)) {
      WaitForPartition(node, gpu);
    } else if (shared_->wiring.on_foreign_partition_started) {
      shared_->wiring.on_foreign_partition_started(node, gpu);
    }
    PostPartitionLayout(node, gpu, layout);
    return;
  }
  v1::MigLayoutRequest request;
  request.set_epoch(shared_->wiring.fencing_epoch);
  request.set_node(node);
  request.set_gpu(gpu);
  for (const v1::MigInstance& m : layout) *request.add_layout() = m;
  PostRequest("on_apply_mig_layout", OperationKind::kPartition, GpuSubject(node, gpu),
              options_.partition_deadline,
              &library_->descriptor().tessera_plugin_on_apply_mig_layout,
              request.SerializeAsString());
}

void PluginExecutor::PostPartitionLayout(const std::string& node, int gpu,
                                         const std::vector<v1::MigInstance>& layout) {
  v1::PartitionLayoutRequest request;
  request.set_node(node);
  request.set_gpu(gpu);
  request.mutable_layout()->set_sharing(v1::GPU_SHARING_MIG);
  for (const v1::MigInstance& m : layout) *request.mutable_layout()->add_mig_instances() = m;
  request.set_epoch(shared_->wiring.fencing_epoch);
  if (unhealthy_) return;
  std::shared_ptr<Shared> shared = shared_;
  const std::string what = "on_apply_partition_layout";
  const std::chrono::milliseconds deadline = DeadlineOf(options_.partition_deadline);
  OperationTracker* operations = shared->wiring.operations.get();
  const uint64_t op = operations->Begin(OperationKind::kPartition, GpuSubject(node, gpu),
                                        shared->wiring.clock->NowUs(), deadline.count() * 1000);
  const bool queued = Queue(
      Lane::kOperations, what,
      [shared, what, op, node, gpu, bytes = request.SerializeAsString()] {
        StringSink out;
        StringSink error;
        const tessera_status code =
            shared->library->descriptor().tessera_plugin_on_apply_partition_layout(
                shared->instance, Bytes(bytes), &out.sink, &error.sink);
        if (code != TESSERA_OK) {
          const std::string why = CallError(shared->library->info(), what, code, error.bytes);
          shared->wiring.operations->End(op, false, why);
          // The launches waiting on the GPU (its owner's, when that is this executor) are lost.
          shared->CallFailed(what, why, [shared, node, gpu, why] {
            if (shared->partition_call_failed) shared->partition_call_failed(node, gpu, why);
          });
          return;
        }
        auto result = std::make_shared<v1::PartitionLayoutResult>();
        if (!result->ParseFromString(out.bytes)) {
          shared->MarkUnhealthy("plugin '" + shared->library->info().name + "': " + what +
                                " wrote bytes that are not a tessera.v1.PartitionLayoutResult");
          return;
        }
        // A layout the plugin could not apply to this GPU fails this operation only.
        shared->wiring.operations->End(op, result->error().empty(), result->error());
        shared->CallSucceeded(what);
        shared->Post([shared, node, gpu, result] {
          if (shared->partition_taken) shared->partition_taken(node, gpu, *result);
        });
      },
      deadline);
  if (!queued) operations->End(op, false, "the plugin is unhealthy; " + what + " was not called");
}

bool PluginExecutor::OwnsNode(const std::string& node) const {
  for (const v1::NodeSpec& n : inventory_) {
    if (n.name() == node) return true;
  }
  return false;
}

void PluginExecutor::TakeOwnPartitionResult(const std::string& node, int gpu,
                                            const v1::PartitionLayoutResult& result) {
  if (OwnsNode(node)) {
    TakePartitionResult(node, gpu, result);
  } else if (shared_->wiring.on_foreign_partition_result) {
    shared_->wiring.on_foreign_partition_result(node, gpu, result);
  }
}

void PluginExecutor::PartitionUnderWay(const std::string& node, int gpu) {
  if (OwnsNode(node)) WaitForPartition(node, gpu);
}

void PluginExecutor::WaitForPartition(const std::string& node, int gpu) {
  const auto key = std::make_pair(node, gpu);
  if (waiting_for_partition_.count(key)) return;  // its bound runs already.
  waiting_for_partition_[key];
  const int64_t bound_ms = 2 * DeadlineOf(options_.partition_deadline).count();
  std::weak_ptr<Shared> weak = shared_;
  auto waiting = [this, weak, key] {
    auto s = weak.lock();
    return s && s->partition_call_failed && waiting_for_partition_.count(key) > 0;
  };
  shared_->wiring.timers->Schedule(
      shared_->wiring.clock->NowUs() + bound_ms * 1000,
      [this, waiting, node, gpu, bound_ms] {
        if (!waiting()) return;
        ReleaseWaitingLaunches(node, gpu,
                               "no partition result within " + std::to_string(bound_ms) + " ms");
      },
      waiting);
}

void PluginExecutor::ReleaseWaitingLaunches(const std::string& node, int gpu,
                                            const std::string& failure) {
  auto it = waiting_for_partition_.find({node, gpu});
  if (it == waiting_for_partition_.end()) return;
  const std::vector<LaunchRequest> launches = std::move(it->second);
  waiting_for_partition_.erase(it);
  for (const LaunchRequest& request : launches) {
    if (failure.empty()) {
      Launch(request);
    } else {
      shared_->wiring.events->OnTaskLost(request.ref, "re-partitioning GPU " + std::to_string(gpu) +
                                                          " of node '" + node +
                                                          "' failed: " + failure);
    }
  }
}

void PluginExecutor::TakePartitionResult(const std::string& node, int gpu,
                                         const v1::PartitionLayoutResult& result) {
  v1::NodeSpec* spec = nullptr;
  for (v1::NodeSpec& n : inventory_) {
    if (n.name() == node) spec = &n;
  }
  if (spec == nullptr || gpu < 0 || gpu >= spec->gpus_size()) {  // gone meanwhile.
    ReleaseWaitingLaunches(node, gpu, "the node or GPU is gone");
    return;
  }
  v1::GpuDevice* device = spec->mutable_gpus(gpu);
  *device->mutable_mig_instances() = result.applied().mig_instances();
  *device->mutable_instances() = result.instances();
  devices_.TakeGpu(node, gpu, *device);
  if (result.error().empty()) {
    failed_partitions_.erase({node, gpu});
    ReleaseWaitingLaunches(node, gpu, "");
    return;
  }
  failed_partitions_[{node, gpu}] = result.error();
  // The engine learns the layout the GPU has, and stops re-partitioning it (it would only fail
  // again, and in virtual time without end) until the plugin reports its inventory anew.
  device->set_mig_managed(false);
  LogWarning(shared_->wiring.log,
             "plugin '{}': the layout of GPU {} of node '{}' failed: {}; it keeps its {} MIG "
             "instance(s) and is not re-partitioned until the plugin reports it again",
             library_->info().name, gpu, node, result.error(),
             result.applied().mig_instances_size());
  InventoryDiff diff;
  diff.changed.push_back(*spec);
  // The waiting tasks go first, so the engine no longer holds the instances they were placed on
  // when it takes the GPU's real layout.
  ReleaseWaitingLaunches(node, gpu, result.error());
  if (shared_->wiring.on_inventory) shared_->wiring.on_inventory(diff);
}

void PluginExecutor::PostPoll() {
  if (unhealthy_ || library_->descriptor().tessera_plugin_on_poll_events == nullptr) return;
  std::shared_ptr<Shared> shared = shared_;
  Queue(Lane::kReads, "on_poll_events", [shared] {
    v1::BackendEvents events;
    bool malformed = false;
    const Status read =
        CallForReply(shared->library->descriptor().tessera_plugin_on_poll_events, shared->instance,
                     shared->library->info(), "on_poll_events", &events, &malformed);
    if (!shared->TakeReply("on_poll_events", read, malformed)) return;
    for (const v1::BackendEvent& e : events.events()) shared->Deliver(e);
    // On a virtual clock nothing else would poll at the time the plugin named: ask the
    // engine's timers to. (On the real clock the poller thread covers it.)
    const int64_t next = events.next_event_us();
    if (!shared->wiring.clock->IsRealTime()) {
      shared->Post([shared, next] { shared->PollAt(next, shared); });
    }
  });
}

void PluginExecutor::PostInventoryRead() {
  if (unhealthy_ || library_->descriptor().tessera_plugin_on_inventory == nullptr) return;
  std::shared_ptr<Shared> shared = shared_;
  // Not a read of the other lane: the ABI lets only polls and telemetry overlap other calls.
  Queue(Lane::kOperations, "on_inventory", [shared] {
    auto inventory = std::make_shared<v1::Inventory>();
    bool malformed = false;
    const Status read =
        CallForReply(shared->library->descriptor().tessera_plugin_on_inventory, shared->instance,
                     shared->library->info(), "on_inventory", inventory.get(), &malformed);
    if (!shared->TakeReply("on_inventory", read, malformed)) return;
    shared->Post([shared, inventory] {
      if (shared->inventory_taken) shared->inventory_taken(*inventory);
    });
  });
}

void PluginExecutor::TakeInventory(const v1::Inventory& inventory) {
  std::vector<v1::NodeSpec> now(inventory.nodes().begin(), inventory.nodes().end());
  const InventoryDiff diff = DiffInventory(inventory_, now);
  inventory_ = std::move(now);
  devices_.Take(inventory_);
  failed_partitions_.clear();  // the plugin's inventory is the truth again.
  if (!diff.empty() && shared_->wiring.on_inventory) shared_->wiring.on_inventory(diff);
}

bool PluginExecutor::Queue(Lane lane, std::string what, PluginWorker::Call call,
                           std::chrono::milliseconds deadline) {
  PluginWorker& worker = lane == Lane::kReads ? *reads_ : *worker_;
  if (shared_->wiring.clock->IsRealTime()) {
    return worker.Post(std::move(what), std::move(call), deadline);
  }
  // In virtual time the strand waits for the call, so that what it reports reaches the strand
  // at a point fixed by the strand's own order, not by thread timing: the same inputs then give
  // the same decisions and the same event log.
  return worker.PostAndWait(std::move(what), std::move(call), deadline);
}

std::string PluginExecutor::unhealthy_reason() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->unhealthy_reason;
}

bool PluginExecutor::Busy() const { return worker_->InFlight() > 0 || reads_->InFlight() > 0; }

void PluginExecutor::PollerLoop() {
  pthread_setname_np(pthread_self(), "tessera-poll");
  std::unique_lock<std::mutex> lock(poller_mu_);
  while (!stopping_) {
    poller_wake_.wait_for(lock, options_.poll_interval);
    if (stopping_) return;
    // Polls do not wait for operations (they have a lane of their own), only for the last poll.
    if (shared_->wiring.clock->IsRealTime() && reads_->InFlight() == 0) {
      PostPoll();
      PostTelemetry();
    }
  }
}

void PluginExecutor::PostTelemetry() {
  if (unhealthy_ || library_->descriptor().tessera_plugin_on_telemetry == nullptr ||
      !shared_->wiring.telemetry) {
    return;
  }
  std::shared_ptr<Shared> shared = shared_;
  Queue(Lane::kReads, "on_telemetry", [shared] {
    auto batch = std::make_shared<v1::TelemetryBatch>();
    bool malformed = false;
    const Status read =
        CallForReply(shared->library->descriptor().tessera_plugin_on_telemetry, shared->instance,
                     shared->library->info(), "on_telemetry", batch.get(), &malformed);
    if (!shared->TakeReply("on_telemetry", read, malformed)) return;
    if (batch->readings_size() == 0) return;
    auto deliver = shared->wiring.telemetry;
    shared->Post([batch, deliver] {
      for (const v1::GpuTelemetry& reading : batch->readings()) deliver(reading);
    });
  });
}

}  // namespace tessera

namespace tessera {

uint64_t PluginExecutor::Provision(const std::string& node_group, int count,
                                   const std::string& request_id) {
  OperationTracker& operations = *shared_->wiring.operations;
  const int64_t now = shared_->wiring.clock->NowUs();
  const int64_t deadline_us = options_.provision_deadline.count() * 1000;
  const uint64_t op = operations.Begin(
      OperationKind::kProvision,
      "node group " + node_group + " x " + std::to_string(count) + ", request " + request_id, now,
      deadline_us);
  provisioning_[request_id].operation = op;
  if (unhealthy_ || library_->descriptor().tessera_plugin_on_provision == nullptr) {
    TakeProvisionEnd(request_id, false,
                     unhealthy_ ? "the plugin is unhealthy; on_provision was not called"
                                : "the plugin is not a capacity provider (it has no on_provision)");
    return op;
  }
  // The plugin ends the request with an event; the deadline ends it if the plugin does not.
  std::weak_ptr<Shared> weak = shared_;
  provisioning_[request_id].deadline =
      shared_->wiring.timers->Schedule(now + deadline_us, [this, weak, op] {
        // The executor lives while its Shared's hooks are set (the destructor clears them).
        if (auto s = weak.lock(); s && s->provision_ended) ExpireProvision(op);
      });
  v1::ProvisionRequest request;
  request.set_node_group(node_group);
  request.set_count(count);
  request.set_request_id(request_id);
  request.set_epoch(shared_->wiring.fencing_epoch);
  std::shared_ptr<Shared> shared = shared_;
  const std::string what = "on_provision";
  const bool queued = Queue(
      Lane::kOperations, what, [shared, what, request_id, bytes = request.SerializeAsString()] {
        StringSink out;
        StringSink error;
        const tessera_status code = shared->library->descriptor().tessera_plugin_on_provision(
            shared->instance, Bytes(bytes), &out.sink, &error.sink);
        if (code == TESSERA_OK) {
          shared->CallSucceeded(what);
          return;  // under way: its event ends it.
        }
        const std::string why = CallError(shared->library->info(), what, code, error.bytes);
        shared->CallFailed(what, why, nullptr);
        shared->Post([shared, request_id, why] {
          if (shared->provision_ended) shared->provision_ended(request_id, false, why);
        });
      });
  if (!queued)
    TakeProvisionEnd(request_id, false, "the plugin is unhealthy; on_provision was not called");
  return op;
}

void PluginExecutor::TakeProvisionEnd(const std::string& request_id, bool succeeded,
                                      const std::string& why) {
  auto it = provisioning_.find(request_id);
  if (it == provisioning_.end()) {
    // Not under way (a request of an earlier run, or one that timed out): only logged.
    LogInfo(shared_->wiring.log, "plugin '{}': provisioning {} {} (no request under way): {}",
            library_->info().name, request_id, succeeded ? "completed" : "failed", why);
    return;
  }
  const uint64_t op = it->second.operation;
  if (it->second.deadline) shared_->wiring.timers->Cancel(*it->second.deadline);
  provisioning_.erase(it);
  // False when it failed already, with the plugin (OperationTracker::FailAll): it still ends here.
  shared_->wiring.operations->End(op, succeeded, why);
  if (succeeded) {
    LogInfo(shared_->wiring.log, "plugin '{}': provisioning {} completed: {}",
            library_->info().name, request_id, why);
  } else {
    LogWarning(shared_->wiring.log, "plugin '{}': provisioning {} failed: {}",
               library_->info().name, request_id, why);
  }
  if (shared_->wiring.on_provisioned) shared_->wiring.on_provisioned(request_id, succeeded, why);
}

void PluginExecutor::ExpireProvision(uint64_t id) {
  for (auto& [request_id, provisioning] : provisioning_) {
    if (provisioning.operation != id) continue;
    provisioning.deadline.reset();           // it is running now.
    const std::string request = request_id;  // TakeProvisionEnd erases the entry.
    TakeProvisionEnd(request, false,
                     "timed out: no PROVISION_COMPLETED or PROVISION_FAILED within " +
                         std::to_string(options_.provision_deadline.count()) + " ms");
    return;
  }
}

void PluginExecutor::Deprovision(const std::vector<std::string>& nodes) {
  v1::DeprovisionRequest request;
  std::string subject = "node(s)";
  for (const std::string& node : nodes) {
    request.add_nodes(node);
    subject += " " + node;
  }
  request.set_epoch(shared_->wiring.fencing_epoch);
  PostRequest("on_deprovision", OperationKind::kDeprovision, std::move(subject), {},
              &library_->descriptor().tessera_plugin_on_deprovision, request.SerializeAsString());
}

}  // namespace tessera
