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
  tessera_plugin_instance* instance = nullptr;
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
  // Strand only, while the executor lives: a partition result to take.
  std::function<void(const std::string& node, int gpu, const v1::PartitionLayoutResult&)>
      partition_taken;
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
        LogInfo(wiring.log, "plugin '{}': provisioning {} completed: {}", library->info().name,
                event.request_id(), event.message());
        break;
      case v1::BackendEvent::PROVISION_FAILED:
        LogWarning(wiring.log, "plugin '{}': provisioning {} failed: {}", library->info().name,
                   event.request_id(), event.message());
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
    TakePartitionResult(node, gpu, result);
  };
  std::weak_ptr<Shared> weak = shared_;
  worker_ = std::make_unique<PluginWorker>(library_->info().name, options_.call_deadline,
                                           [weak](const std::string& why) {
                                             if (auto s = weak.lock()) s->MarkUnhealthy(why);
                                           });
  // An isolated plugin's process can end between calls; do not wait for the next call to see it.
  library_->SetOnLost([weak](const std::string& why) {
    if (auto s = weak.lock()) s->MarkUnhealthy(why);
  });
}

StatusOr<std::unique_ptr<PluginExecutor>> PluginExecutor::Start(
    std::shared_ptr<PluginLibrary> library, const PluginOptions& options, Wiring wiring) {
  if (!library->info().executor) {
    return InvalidArgumentError(
        "plugin '" + library->info().name +
        "' is not an executor (its kinds lack TESSERA_PLUGIN_KIND_EXECUTOR)");
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
  }
  // Shut the instance down unless a call is stuck in it (the ABI allows one call at a time).
  if (shared_->instance != nullptr && !worker_->hung()) {
    std::shared_ptr<Shared> shared = shared_;
    Status done = worker_->RunAndWait("on_shutdown", [shared] {
      shared->library->descriptor().tessera_plugin_on_shutdown(shared->instance);
    });
    if (!done.ok()) LogError(shared_->wiring.log, "{}", done.message());
  } else if (worker_->hung()) {
    library_->Abandon();  // an isolated plugin's process is killed, so its stuck call returns.
  }
  worker_.reset();
}

StatusOr<std::vector<v1::NodeSpec>> PluginExecutor::LoadInventory() {
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

void PluginExecutor::PostRequest(const std::string& what,
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
  const bool queued =
      Queue(what, [shared, call, what, request = std::move(request), on_failure, on_error] {
        StringSink error;
        const tessera_status code = (*call)(shared->instance, Bytes(request), &error.sink);
        if (code == TESSERA_OK) {
          shared->CallSucceeded(what);
          return;
        }
        const std::string why = CallError(shared->library->info(), what, code, error.bytes);
        shared->CallFailed(what, why,
                           on_error ? std::function<void()>([on_error, why] { on_error(why); })
                                    : std::function<void()>());
        // The call that turned the plugin unhealthy fails as later ones do.
        if (shared->unhealthy->load() && on_failure) shared->Post(on_failure);
      });
  if (!queued && on_failure) shared->Post(on_failure);
}

void PluginExecutor::Launch(const LaunchRequest& request) {
  const v1::LaunchTask launch = MakeLaunchTask(request, devices_, shared_->wiring.fencing_epoch);
  ExecutorEvents* events = shared_->wiring.events;
  const TaskRef ref = request.ref;
  PostRequest(
      "on_launch", &library_->descriptor().tessera_plugin_on_launch, launch.SerializeAsString(),
      [events, ref] { events->OnTaskExited(ref, kPluginFailedExitCode); },
      // A launch the plugin failed (not refused with LAUNCH_REJECTED) never started: its job is
      // placed again without spending an attempt.
      [events, ref](const std::string& why) { events->OnTaskLost(ref, why); });
  PostPoll();
}

void PluginExecutor::Stop(const TaskRef& task, int64_t grace_ms) {
  v1::StopTask stop;
  *stop.mutable_ref() = ToProto(task);
  stop.set_grace_ms(grace_ms);
  stop.set_epoch(shared_->wiring.fencing_epoch);
  PostRequest("on_stop", &library_->descriptor().tessera_plugin_on_stop, stop.SerializeAsString());
  PostPoll();
}

void PluginExecutor::Resize(const TaskRef& job, int tasks) {
  if (library_->descriptor().tessera_plugin_on_resize == nullptr) return;
  v1::ResizeJob resize;
  resize.set_job(job.job);
  resize.set_attempt(job.attempt);
  resize.set_tasks(tasks);
  resize.set_epoch(shared_->wiring.fencing_epoch);
  PostRequest("on_resize", &library_->descriptor().tessera_plugin_on_resize,
              resize.SerializeAsString());
}

void PluginExecutor::ApplyMigLayout(const std::string& node, int gpu,
                                    const std::vector<v1::MigInstance>& layout) {
  if (library_->descriptor().tessera_plugin_on_apply_partition_layout != nullptr) {
    PostPartitionLayout(node, gpu, layout);
    return;
  }
  v1::MigLayoutRequest request;
  request.set_epoch(shared_->wiring.fencing_epoch);
  request.set_node(node);
  request.set_gpu(gpu);
  for (const v1::MigInstance& m : layout) *request.add_layout() = m;
  PostRequest("on_apply_mig_layout", &library_->descriptor().tessera_plugin_on_apply_mig_layout,
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
  Queue(what, [shared, what, node, gpu, bytes = request.SerializeAsString()] {
    StringSink out;
    StringSink error;
    const tessera_status code =
        shared->library->descriptor().tessera_plugin_on_apply_partition_layout(
            shared->instance, Bytes(bytes), &out.sink, &error.sink);
    if (code != TESSERA_OK) {
      shared->CallFailed(what, CallError(shared->library->info(), what, code, error.bytes),
                         nullptr);
      return;
    }
    auto result = std::make_shared<v1::PartitionLayoutResult>();
    if (!result->ParseFromString(out.bytes)) {
      shared->MarkUnhealthy("plugin '" + shared->library->info().name + "': " + what +
                            " wrote bytes that are not a tessera.v1.PartitionLayoutResult");
      return;
    }
    shared->CallSucceeded(what);
    shared->Post([shared, node, gpu, result] {
      if (shared->partition_taken) shared->partition_taken(node, gpu, *result);
    });
  });
}

void PluginExecutor::TakePartitionResult(const std::string& node, int gpu,
                                         const v1::PartitionLayoutResult& result) {
  v1::NodeSpec* spec = nullptr;
  for (v1::NodeSpec& n : inventory_) {
    if (n.name() == node) spec = &n;
  }
  if (spec == nullptr || gpu < 0 || gpu >= spec->gpus_size()) return;  // gone meanwhile.
  v1::GpuDevice* device = spec->mutable_gpus(gpu);
  *device->mutable_mig_instances() = result.applied().mig_instances();
  *device->mutable_instances() = result.instances();
  devices_.TakeGpu(node, gpu, *device);
  if (result.error().empty()) return;
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
  if (shared_->wiring.on_inventory) shared_->wiring.on_inventory(diff);
}

void PluginExecutor::PostPoll() {
  if (unhealthy_ || library_->descriptor().tessera_plugin_on_poll_events == nullptr) return;
  std::shared_ptr<Shared> shared = shared_;
  Queue("on_poll_events", [shared] {
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
  if (unhealthy_) return;
  std::shared_ptr<Shared> shared = shared_;
  Queue("on_inventory", [shared] {
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
  if (!diff.empty() && shared_->wiring.on_inventory) shared_->wiring.on_inventory(diff);
}

bool PluginExecutor::Queue(std::string what, PluginWorker::Call call) {
  if (shared_->wiring.clock->IsRealTime()) return worker_->Post(std::move(what), std::move(call));
  // In virtual time the strand waits for the call, so that what it reports reaches the strand
  // at a point fixed by the strand's own order, not by thread timing: the same inputs then give
  // the same decisions and the same event log.
  return worker_->PostAndWait(std::move(what), std::move(call));
}

std::string PluginExecutor::unhealthy_reason() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->unhealthy_reason;
}

bool PluginExecutor::Busy() const { return worker_->InFlight() > 0; }

void PluginExecutor::PollerLoop() {
  pthread_setname_np(pthread_self(), "tessera-poll");
  std::unique_lock<std::mutex> lock(poller_mu_);
  while (!stopping_) {
    poller_wake_.wait_for(lock, options_.poll_interval);
    if (stopping_) return;
    if (shared_->wiring.clock->IsRealTime() && worker_->InFlight() == 0) {
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
  Queue("on_telemetry", [shared] {
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
