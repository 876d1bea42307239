#include "plugins/plugin_executor.h"

#include <algorithm>

#include "common/log.h"
#include "plugins/plugin_executor_shared.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera {

using executor_detail::Bytes;
using executor_detail::CallError;
using executor_detail::CallForReply;
using executor_detail::FromProto;
using executor_detail::StringSink;
using executor_detail::TaskSubject;
using executor_detail::ToProto;

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
  shared_->provision_ended = [this](const std::string& id, bool ok, const std::string& why,
                                    const std::vector<std::string>& nodes) {
    TakeProvisionEnd(id, ok, why, nodes);
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
    partitions_under_way_.erase({node, gpu});
    if (OwnsNode(node)) {
      PartitionFailed(node, gpu, why);
    } else if (shared_->wiring.on_foreign_partition_failed) {
      shared_->wiring.on_foreign_partition_failed(node, gpu, why);
    }
  };
  shared_->partitions_failed = [this](const std::string& why) {
    while (!partitions_under_way_.empty()) {
      const auto [node, gpu] = *partitions_under_way_.begin();
      shared_->partition_call_failed(node, gpu, why);
    }
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
  // A partitioner alone is a backend with no nodes that shapes other backends' GPUs; a
  // capacity provider alone, one whose nodes join through another backend (EC2 instances as
  // Kubernetes nodes).
  const PluginInfo& info = library->info();
  if (!info.executor && !info.partitioner && !info.capacity_provider) {
    return InvalidArgumentError("plugin '" + info.name +
                                "' is neither an executor, a partitioner nor a capacity provider "
                                "(its kinds lack TESSERA_PLUGIN_KIND_EXECUTOR, "
                                "TESSERA_PLUGIN_KIND_PARTITIONER and "
                                "TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER)");
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
    shared_->partitions_failed = nullptr;
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
  if (HeldForPartition(request)) return;
  const v1::LaunchTask launch = MakeLaunchTask(request, devices_, shared_->wiring.fencing_epoch,
                                               shared_->wiring.backend_name);
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
