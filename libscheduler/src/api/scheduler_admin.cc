// SchedulerImpl: queues, nodes, statistics, backup and decision control.
#include "api/scheduler_impl.h"
#include "api/validation.h"
#include "common/check.h"

namespace tessera {
namespace {

v1::Event QueueEvent(v1::EventKind kind, const std::string& queue, TimestampUs now) {
  v1::Event event;
  event.set_time_us(now);
  event.set_kind(kind);
  event.set_queue(queue);
  return event;
}

std::string ParentOf(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? "" : name.substr(0, slash);
}

}  // namespace

Status SchedulerImpl::WriteThenApply(store::WriteFn write, std::function<Status()> apply) {
  auto waiter = std::make_shared<Waiter<Status>>();
  store_->Write(std::move(write), [this, apply = std::move(apply), waiter](const Status& s) {
    if (!s.ok()) return waiter->Set(s);
    Post([apply, waiter] { waiter->Set(apply()); });
  });
  return waiter->Wait();
}

// --- Queues ------------------------------------------------------------------------------------

Status SchedulerImpl::CreateQueue(const v1::QueueSpec& spec) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  TESSERA_RETURN_IF_ERROR(ValidateQueueSpec(spec));
  TESSERA_RETURN_IF_ERROR(
      Call<Status>([&] { return engine_->CheckQueueChange(spec, true); }, ShuttingDown()));
  const TimestampUs now = clock_->NowUs();
  return WriteThenApply(
      [spec, now](store::WriteTransaction& t) -> Status {
        // Re-checked here: the writer orders this against concurrent submits and creates.
        TESSERA_ASSIGN_OR_RETURN(bool exists, t.QueueExists(spec.name()));
        if (exists) return AlreadyExistsError("queue '" + spec.name() + "' already exists");
        const std::string parent = ParentOf(spec.name());
        if (!parent.empty()) {
          TESSERA_ASSIGN_OR_RETURN(bool parent_exists, t.QueueExists(parent));
          if (!parent_exists) {
            return NotFoundError("queue '" + spec.name() + "': parent queue '" + parent +
                                 "' does not exist");
          }
          TESSERA_ASSIGN_OR_RETURN(int64_t jobs, t.CountUnfinishedJobs(parent));
          if (jobs > 0) {
            return FailedPreconditionError("queue '" + spec.name() + "': parent '" + parent +
                                           "' holds jobs, so it must stay a leaf queue");
          }
        }
        TESSERA_RETURN_IF_ERROR(t.PutQueue(spec));
        v1::Event event = QueueEvent(v1::QUEUE_CREATED, spec.name(), now);
        return t.AppendEvent(event).status();
      },
      [this, spec] { return ApplyQueueSpec(spec, engine_->CreateQueue(spec)); });
}

Status SchedulerImpl::UpdateQueue(const v1::QueueSpec& spec) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  TESSERA_RETURN_IF_ERROR(ValidateQueueSpec(spec));
  TESSERA_RETURN_IF_ERROR(
      Call<Status>([&] { return engine_->CheckQueueChange(spec, false); }, ShuttingDown()));
  const TimestampUs now = clock_->NowUs();
  return WriteThenApply(
      [spec, now](store::WriteTransaction& t) -> Status {
        TESSERA_ASSIGN_OR_RETURN(bool exists, t.QueueExists(spec.name()));
        if (!exists) return NotFoundError("queue '" + spec.name() + "' does not exist");
        TESSERA_RETURN_IF_ERROR(t.PutQueue(spec));
        v1::Event event = QueueEvent(v1::QUEUE_UPDATED, spec.name(), now);
        return t.AppendEvent(event).status();
      },
      [this, spec] { return ApplyQueueSpec(spec, engine_->UpdateQueue(spec)); });
}

Status SchedulerImpl::DeleteQueue(const std::string& name) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  TESSERA_RETURN_IF_ERROR(ValidateQueueName(name, "name"));
  TESSERA_RETURN_IF_ERROR(
      Call<Status>([&] { return engine_->CheckQueueDelete(name); }, ShuttingDown()));
  const TimestampUs now = clock_->NowUs();
  return WriteThenApply(
      [name, now](store::WriteTransaction& t) -> Status {
        TESSERA_ASSIGN_OR_RETURN(bool children, t.QueueHasChildren(name));
        if (children) {
          return FailedPreconditionError("queue '" + name +
                                         "' has child queues; delete them first");
        }
        TESSERA_ASSIGN_OR_RETURN(int64_t jobs, t.CountUnfinishedJobs(name));
        if (jobs > 0) return FailedPreconditionError("queue '" + name + "' has unfinished jobs");
        TESSERA_RETURN_IF_ERROR(t.DeleteQueue(name));
        v1::Event event = QueueEvent(v1::QUEUE_DELETED, name, now);
        return t.AppendEvent(event).status();
      },
      [this, name] {
        Status deleted = engine_->DeleteQueue(name);
        if (deleted.ok() && burst_) burst_->ForgetQueue(name);
        return deleted;
      });
}

StatusOr<v1::Queue> SchedulerImpl::GetQueue(const std::string& name) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  return Call<StatusOr<v1::Queue>>(
      [&]() -> StatusOr<v1::Queue> {
        TESSERA_ASSIGN_OR_RETURN(v1::Queue queue, engine_->Queue(name));
        return WithBurstSpend(std::move(queue));
      },
      ShuttingDown());
}

StatusOr<std::vector<v1::Queue>> SchedulerImpl::ListQueues() {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  return Call<StatusOr<std::vector<v1::Queue>>>(
      [&]() -> StatusOr<std::vector<v1::Queue>> {
        std::vector<v1::Queue> queues = engine_->Queues();
        for (v1::Queue& q : queues) q = WithBurstSpend(std::move(q));
        return queues;
      },
      ShuttingDown());
}

// --- Nodes -------------------------------------------------------------------------------------

StatusOr<std::vector<v1::Node>> SchedulerImpl::ListNodes() {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  return Call<StatusOr<std::vector<v1::Node>>>(
      [&]() -> StatusOr<std::vector<v1::Node>> {
        std::vector<v1::Node> nodes = engine_->Nodes();
        std::vector<v1::Backend> backends;  // each backend's status once, not once per node.
        for (const std::unique_ptr<PluginBackend>& b : backends_) backends.push_back(b->Status());
        for (v1::Node& node : nodes) {
          v1::NodeStatus* status = node.mutable_status();
          if (!backend_set_) {
            status->set_backend("simulation");
            continue;
          }
          const BackendSet::Member owner = backend_set_->OwnerOf(node.spec().name());
          if (owner < 0) continue;
          const v1::Backend& backend = backends[owner];
          status->set_backend(backend.name());
          // The devices the backend names: GPU UUIDs and, for MIG, each instance's UUID.
          PluginExecutor* executor = backends_[owner]->executor();
          for (v1::GpuDevice& gpu : *node.mutable_spec()->mutable_gpus()) {
            const v1::GpuDevice* device = executor->Device(node.spec().name(), gpu.index());
            if (device == nullptr) continue;
            gpu.set_uuid(device->uuid());
            *gpu.mutable_instances() = device->instances();
          }
          if (!backend.healthy()) {
            status->set_unavailable("backend '" + backend.name() +
                                    "' is unhealthy: " + backend.unhealthy_reason());
          }
        }
        return nodes;
      },
      ShuttingDown());
}

StatusOr<std::vector<v1::Backend>> SchedulerImpl::ListBackends() {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  return Call<StatusOr<std::vector<v1::Backend>>>(
      [&]() -> StatusOr<std::vector<v1::Backend>> {
        std::vector<v1::Backend> list;
        for (size_t i = 0; i < backends_.size(); ++i) {
          v1::Backend backend = backends_[i]->Status();
          backend.set_nodes(static_cast<int32_t>(
              backend_set_->NodesOf(static_cast<BackendSet::Member>(i)).size()));
          list.push_back(std::move(backend));
        }
        return list;
      },
      ShuttingDown());
}

Status SchedulerImpl::CordonNode(const std::string& name, bool cordoned) {
  return SetNodeFlags(name, cordoned, /*draining=*/false, cordoned ? "cordoned" : "uncordoned");
}

Status SchedulerImpl::DrainNode(const std::string& name) {
  return SetNodeFlags(name, /*cordoned=*/true, /*draining=*/true, "draining");
}

Status SchedulerImpl::SetNodeFlags(const std::string& name, bool cordoned, bool draining,
                                   const std::string& reason) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  const Status known = Call<Status>(
      [&] {
        return engine_->HasNode(name) ? Status::Ok()
                                      : NotFoundError("node '" + name + "' does not exist");
      },
      ShuttingDown());
  if (!known.ok()) return known;
  const TimestampUs now = clock_->NowUs();
  return WriteThenApply(
      [name, cordoned, draining, reason, now](store::WriteTransaction& t) -> Status {
        TESSERA_RETURN_IF_ERROR(t.PutNodeFlags(name, cordoned, draining));
        v1::Event event;
        event.set_time_us(now);
        event.set_kind(v1::NODE_UPDATED);
        event.set_node(name);
        event.set_reason(reason);
        return t.AppendEvent(event).status();
      },
      [this, name, cordoned, draining] { return engine_->SetNodeFlags(name, cordoned, draining); });
}

Status SchedulerImpl::ReportTelemetry(const v1::GpuTelemetry& reading) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  return Call<Status>([&] { return engine_->OnTelemetry(reading); }, ShuttingDown());
}

// --- Operations --------------------------------------------------------------------------------

v1::SchedulerStats SchedulerImpl::GetStats() {
  // After Close, the store's figures alone.
  v1::SchedulerStats stats =
      Call<v1::SchedulerStats>([this] { return engine_->Stats(); }, v1::SchedulerStats());
  const store::GroupCommitStats writes = store_->write_stats();
  *stats.mutable_commit_latency() = store_->commit_latency().Summary();
  stats.set_commits(writes.commits);
  stats.set_committed_writes(writes.committed_writes);
  stats.set_store_errors(store_->errors());
  stats.set_last_event_seq(store_->LastEventSeq());
  stats.set_bugs(BugCount());
  return stats;
}

Status SchedulerImpl::Backup(const std::string& path) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  return store_->Backup(path);
}

Status SchedulerImpl::CheckStore(StoreCheck level) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  return store_->Check(level);
}

void SchedulerImpl::PauseDecisions() {
  Post([this] { engine_->Pause(); });
}

void SchedulerImpl::ResumeDecisions() {
  Post([this] { engine_->Resume(); });
}

}  // namespace tessera
