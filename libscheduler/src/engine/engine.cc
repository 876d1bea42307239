#include "engine/engine.h"

#include "fairshare/drf.h"

namespace tessera {

namespace {

// The standard filters plus the one that keeps reserved nodes for their job.
std::vector<std::unique_ptr<NodeFilter>> EngineFilters(const ReservationBook& book,
                                                       ReservationFilter** reservation_filter) {
  std::vector<std::unique_ptr<NodeFilter>> filters = DefaultFilters();
  auto reservation = std::make_unique<ReservationFilter>(book);
  *reservation_filter = reservation.get();
  filters.push_back(std::move(reservation));
  return filters;
}

}  // namespace

Engine::Engine(const Options& options, const Clock& clock, EngineHost& host)
    : options_(options),
      clock_(clock),
      host_(host),
      preemption_guard_(options.preemption),
      gpu_health_(options.gpu_health),
      default_runtime_us_(std::chrono::duration_cast<std::chrono::microseconds>(
                              options.engine.default_runtime_estimate)
                              .count()),
      placer_(cluster_, index_, MakeScorer(options.placement),
              EngineFilters(reservations_, &reservation_filter_)),
      queues_(
          std::chrono::duration_cast<std::chrono::microseconds>(options.fair_share.usage_half_life)
              .count()),
      feasibility_(std::make_shared<FeasibilityChecker>()) {
  paused_ = options.engine.start_paused;
  make_room_steps_ = DefaultMakeRoomSteps();
  reservation_filter_->SetEndingBy(
      [this](NodeIndexId node, TimestampUs by, std::vector<TaskAllocation>& out) {
        TasksEndingBy(node, by, out);
      });
  if (options.fair_share.usage_half_life.count() > 0) ArmUsageRefresh(clock_.NowUs());
}

// Decayed usage changes with time alone, so the queue order is refreshed periodically, at
// `last_us` + k periods whenever the clock passed them: a virtual-time driver that skips ticks
// while no job waits (the refresh orders only pending jobs, so NextWakeup ignores it then)
// keeps the same phase as one that stops at every tick.
void Engine::ArmUsageRefresh(TimestampUs last_us) {
  const int64_t period_us = std::max<int64_t>(
      1000, std::chrono::duration_cast<std::chrono::microseconds>(options_.fair_share.usage_refresh)
                .count());
  const TimestampUs now = clock_.NowUs();
  const TimestampUs next =
      last_us + period_us * (std::max<int64_t>(now - last_us, 0) / period_us + 1);
  timers_.Schedule(
      next,
      [this, next] {
        queues_.RefreshUsage(clock_.NowUs());
        host_.RequestDecisions();
        ArmUsageRefresh(next);
      },
      [this] { return pending_jobs_ > 0; });
}

Engine::~Engine() = default;

// --- Inventory -----------------------------------------------------------------------------

Status Engine::AddNode(const v1::NodeSpec& spec) { return AddNodes({spec}); }

Status Engine::AddNodes(const std::vector<v1::NodeSpec>& specs) {
  Status status;
  for (const v1::NodeSpec& spec : specs) {
    StatusOr<NodeIndexId> id = cluster_.AddNode(spec);
    if (!id.ok()) {
      status = id.status();
      break;
    }
    placer_.Refresh(*id);
    for (const GpuSlot& gpu : cluster_.node(*id).gpus()) managed_mig_gpus_ += gpu.mig_managed;
  }
  // Even after an error, the nodes added so far are real: account for them.
  InventoryUpdated();
  return status;
}

Status Engine::SetNodeFlags(const std::string& name, bool cordoned, bool draining) {
  NodeState* node = cluster_.Find(name);
  if (!node || !node->present()) return NotFoundError("node '" + name + "' does not exist");
  if (!cordoned && !draining) ClearFailedGpus(*node);  // an operator vouches for the node again.
  cordoned_by_loss_.erase(node->id());  // the operator's word wins over a plugin's recovery.
  node->set_cordoned(cordoned || draining);
  node->set_draining(draining);
  placer_.Refresh(node->id());
  if (node->Schedulable()) {
    capacity_freed_ = true;
    host_.RequestDecisions();
  }
  return Status::Ok();
}

bool Engine::HasNode(const std::string& name) const {
  const NodeState* node = cluster_.Find(name);
  return node && node->present();
}

std::vector<v1::Node> Engine::Nodes() const {
  std::vector<v1::Node> out;
  for (const NodeState& n : cluster_.nodes()) {
    if (!n.present()) continue;
    v1::Node node;
    v1::NodeSpec* spec = node.mutable_spec();
    const ResourceVector cap = n.Capacity();
    spec->set_name(n.name());
    spec->set_cpu_milli(cap.cpu_milli());
    spec->set_memory_mib(cap.memory_mib());
    spec->mutable_labels()->insert(cluster_.labels(n.id()).begin(), cluster_.labels(n.id()).end());
    for (size_t i = 0; i < n.gpus().size(); ++i) {
      v1::GpuDevice* gpu = spec->add_gpus();
      gpu->set_index(static_cast<int32_t>(i));
      gpu->set_model(cluster_.models().Name(n.model()));
      DescribeGpu(n.gpus()[i], *gpu);
    }
    v1::NodeStatus* status = node.mutable_status();
    status->set_cordoned(n.cordoned());
    status->set_draining(n.draining());
    *status->mutable_allocated() = n.Allocated().ToProto();
    status->set_running_tasks(n.running_tasks());
    for (size_t i = 0; i < n.gpus().size(); ++i) {
      if (const v1::GpuState* gpu = gpu_health_.Find(n.id(), static_cast<int>(i))) {
        *status->add_gpus() = *gpu;
      }
    }
    out.push_back(std::move(node));
  }
  return out;
}

void Engine::InventoryUpdated() {
  queues_.SetCapacity(cluster_.capacity());
  feasibility_ = std::make_shared<FeasibilityChecker>(cluster_);
  host_.InventoryChanged(feasibility_);
  // Jobs that no node could run may fit the new inventory.
  std::vector<uint64_t> recheck(infeasible_jobs_.begin(), infeasible_jobs_.end());
  for (uint64_t id : recheck) {
    JobRecord* job = FindJob(id);
    if (!job || CheckFeasible(*job)) continue;
    infeasible_jobs_.erase(id);
    job->infeasible = false;
    job->reason.clear();
    AddPending(*job);
    Persist(*job, MakeUpdateEvent(*job, "feasible with the new inventory"));
  }
  capacity_freed_ = true;
  host_.RequestDecisions();
}

// --- Queues --------------------------------------------------------------------------------

bool Engine::QueueHoldsJobs(QueueId q) const {
  // Infeasible jobs count as pending (QueueTree::AdjustPendingJobs).
  const v1::QueueStatus status = queues_.StatusOf(q);
  return status.pending_jobs() > 0 || status.running_jobs() > 0;
}

Status Engine::CheckQueueChange(const v1::QueueSpec& spec, bool create) const {
  const std::optional<QueueId> existing = queues_.Find(spec.name());
  if (!create) {
    if (!existing) return NotFoundError("queue '" + spec.name() + "' does not exist");
    return Status::Ok();
  }
  if (existing) return AlreadyExistsError("queue '" + spec.name() + "' already exists");
  const size_t slash = spec.name().rfind('/');
  if (slash == std::string::npos) return Status::Ok();
  const std::string parent = spec.name().substr(0, slash);
  const std::optional<QueueId> p = queues_.Find(parent);
  if (!p) {
    return NotFoundError("queue '" + spec.name() + "': parent queue '" + parent +
                         "' does not exist");
  }
  if (queues_.IsLeaf(*p) && QueueHoldsJobs(*p)) {
    return FailedPreconditionError("queue '" + spec.name() + "': parent '" + parent +
                                   "' holds jobs, so it must stay a leaf queue");
  }
  return Status::Ok();
}

Status Engine::CheckQueueDelete(const std::string& name) const {
  const std::optional<QueueId> q = queues_.Find(name);
  if (!q) return NotFoundError("queue '" + name + "' does not exist");
  if (!queues_.IsLeaf(*q)) {
    return FailedPreconditionError("queue '" + name + "' has child queues; delete them first");
  }
  if (QueueHoldsJobs(*q)) {
    return FailedPreconditionError("queue '" + name + "' has unfinished jobs");
  }
  return Status::Ok();
}

Status Engine::CreateQueue(const v1::QueueSpec& spec) {
  TESSERA_ASSIGN_OR_RETURN(QueueId q, queues_.Create(spec));
  (void)q;
  host_.RequestDecisions();
  return Status::Ok();
}

Status Engine::UpdateQueue(const v1::QueueSpec& spec) {
  TESSERA_RETURN_IF_ERROR(queues_.Update(spec));
  host_.RequestDecisions();
  return Status::Ok();
}

Status Engine::DeleteQueue(const std::string& name) { return queues_.Delete(name); }

StatusOr<v1::Queue> Engine::Queue(const std::string& name) const {
  const std::optional<QueueId> q = queues_.Find(name);
  if (!q) return NotFoundError("queue '" + name + "' does not exist");
  v1::Queue queue;
  *queue.mutable_spec() = queues_.Spec(*q);
  *queue.mutable_status() = queues_.StatusOf(*q);
  return queue;
}

std::vector<v1::Queue> Engine::Queues() const {
  std::vector<v1::Queue> out;
  for (QueueId q : queues_.All()) {
    v1::Queue queue;
    *queue.mutable_spec() = queues_.Spec(q);
    *queue.mutable_status() = queues_.StatusOf(q);
    out.push_back(std::move(queue));
  }
  return out;
}

// --- Time and decisions ----------------------------------------------------------------------

void Engine::OnTimeAdvanced() { timers_.RunDue(clock_.NowUs()); }

void Engine::Resume() {
  paused_ = false;
  host_.RequestDecisions();
}

bool Engine::HasDecisionWork() const {
  if (paused_ || persist_retries_.degraded() || !superseded_stopping_.empty()) return false;
  return capacity_freed_ || queues_.PickLeaf().has_value();
}

v1::SchedulerStats Engine::Stats() const {
  v1::SchedulerStats stats;
  stats.set_pending_jobs(pending_jobs_);
  stats.set_running_jobs(running_jobs_);
  int64_t nodes = 0;
  for (const NodeState& n : cluster_.nodes()) nodes += n.present() ? 1 : 0;
  stats.set_nodes(nodes);
  stats.set_queues(static_cast<int64_t>(queues_.All().size()));
  stats.set_reservations(static_cast<int64_t>(reservations_.size()));
  statistics_.Fill(stats);
  return stats;
}

}  // namespace tessera
