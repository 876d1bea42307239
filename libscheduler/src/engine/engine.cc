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
              .count(),
          &cluster_.models(), options.fair_share.gpu_model_weights),
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
  DropReservationsOverQuota();  // a lowered cap.
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
  stats.set_idle_gpu_jobs(idle_gpus_.flagged_jobs());
  statistics_.Fill(stats);
  return stats;
}

}  // namespace tessera
