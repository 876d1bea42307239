// The decision loop: serve the queue with the smallest weighted dominant share, place its head
// job or block the queue until something changes.
#include "engine/engine.h"

#include <cstdio>
#include <unordered_set>

#include "engine/failed_shapes.h"
#include "engine/quota_charge.h"

namespace tessera {
namespace {

// Why a backfill candidate skipped for a failed job like it waits.
constexpr char kTwinDoesNotFit[] = "waiting for capacity: a job asking no less does not fit now";

}  // namespace

bool Engine::RunDecisions(std::chrono::steady_clock::time_point deadline) {
  if (paused_ || persist_retries_.degraded() || !superseded_stopping_.empty()) return false;
  if (capacity_freed_) {
    if (!reshapes_due_.empty()) ApplyDueReshapes();
    queues_.UnblockCapacity();
    capacity_freed_ = false;
    // Jobs holding reservations were first in line when they blocked: they go first.
    PlaceReservationHolders();
    backfill_due_ = true;
    growth_due_ = !elastic_jobs_.empty();
  }
  while (true) {
    const std::optional<QueueId> leaf = queues_.PickLeaf();
    if (!leaf) {
      if (backfill_due_) {
        backfill_due_ = false;
        arrived_behind_blocked_.clear();  // the pass looks at them too.
        Backfill();
      } else if (!arrived_behind_blocked_.empty()) {
        BackfillArrivals();
      }
      PlanReservation();
      // What no pending job could use is idle: elastic jobs may grow into it.
      if (growth_due_) {
        growth_due_ = false;
        GrowElastic();
      }
      return false;
    }
    const std::optional<PendingKey> head = queues_.Head(*leaf);
    JobRecord& job = jobs_.at(head->job_id);
    const auto start = std::chrono::steady_clock::now();
    Decide(*leaf, job);
    const auto end = std::chrono::steady_clock::now();
    statistics_.Decided(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
    if (end >= deadline) {
      PlanReservation();
      return queues_.PickLeaf().has_value() || backfill_due_;
    }
  }
}

void Engine::PlaceReservationHolders() {
  std::vector<uint64_t> holders;
  for (const Reservation& r : reservations_.all()) holders.push_back(r.job);
  for (uint64_t id : holders) {
    JobRecord* job = FindJob(id);
    // Pending, or set aside while its victims stop.
    if (!job || (!job->in_pending && !job->awaiting_victims)) continue;
    TryPlace(job->queue, *job, MakeRoomAttempt::kOther);
  }
}

void Engine::Backfill() {
  // Jobs behind a head that does not fit: any job of a best-effort queue, and in strict queues
  // only jobs that promise to end (a time limit). On nodes reserved whole for another job, a
  // job goes only if it ends before the reservation starts (the filter checks).
  int tried = 0;
  FailedShapes failed;
  for (QueueId leaf : queues_.LeavesWithPending()) {
    int misses = 0;
    bool reclaim_left = true;
    for (const PendingKey& key : queues_.PendingJobs(leaf, kBackfillDepthPerQueue)) {
      if (tried >= kBackfillAttemptsPerPass) return;
      if (misses >= kBackfillMissesPerQueue) break;
      JobRecord& job = jobs_.at(key.job_id);
      if (!BackfillMayTry(leaf, job)) continue;
      // A twin of a failure is skipped for free; a job needing more counts as tried and missed,
      // as it would have been, without its search.
      if (failed.HasTwinOf(job, MinTasksToPlace(job))) {
        PublishWaitingReason(job, kTwinDoesNotFit);
        continue;
      }
      ++tried;
      if (TryBackfill(leaf, job, failed, reclaim_left)) {
        misses = 0;
      } else {
        ++misses;
      }
    }
  }
}

bool Engine::TryBackfill(QueueId leaf, JobRecord& job, FailedShapes& failed, bool& reclaim_left) {
  const int min_tasks = MinTasksToPlace(job);
  // The queue's head was decided and no make-room step could serve it (it needs a failed GPU, a
  // drained node): if the queue is owed its guarantee, the first job behind it may reclaim it,
  // or the queue would wait for its guarantee as long as its head cannot run. Twins that failed
  // elsewhere failed without reclaim, so they do not excuse this attempt.
  bool may_reclaim = reclaim_left && options_.preemption.enabled && options_.preemption.reclaim &&
                     queues_.IsBlocked(leaf);
  if (may_reclaim) {
    const std::optional<PendingKey> head = queues_.Head(leaf);
    may_reclaim = head && head->job_id != job.id;
  }
  if (!may_reclaim && failed.Covers(job, min_tasks)) {
    PublishWaitingReason(job, kTwinDoesNotFit);
    return false;
  }
  if (may_reclaim) reclaim_left = false;
  const PlaceAttempt attempt = TryPlace(
      leaf, job, may_reclaim ? MakeRoomAttempt::kBehindHeadReclaim : MakeRoomAttempt::kOther);
  if (attempt == PlaceAttempt::kDoesNotFit) failed.Add(job, min_tasks);
  return attempt == PlaceAttempt::kPlaced;
}

bool Engine::BackfillMayTry(QueueId leaf, const JobRecord& job) const {
  const bool strict = queues_.Spec(leaf).queueing() == v1::STRICT_FIFO;
  return !(strict && job.time_limit_us <= 0) && !reservations_.Find(job.id);
}

void Engine::BackfillArrivals() {
  std::vector<uint64_t> arrivals;
  arrivals.swap(arrived_behind_blocked_);
  FailedShapes failed;
  std::unordered_set<QueueId> reclaim_tried;  // queues whose reclaim attempt was used.
  for (uint64_t id : arrivals) {
    JobRecord* job = FindJob(id);
    // Placed, cancelled or first in line since (the head is the decision loop's).
    if (!job || !job->in_pending || !queues_.IsBlocked(job->queue)) continue;
    const std::optional<PendingKey> head = queues_.Head(job->queue);
    if (head && head->job_id == id) continue;
    if (!BackfillMayTry(job->queue, *job)) continue;
    bool reclaim_left = !reclaim_tried.count(job->queue);
    TryBackfill(job->queue, *job, failed, reclaim_left);
    if (!reclaim_left) reclaim_tried.insert(job->queue);
  }
}

void Engine::Decide(QueueId leaf, JobRecord& job) {
  TryPlace(leaf, job, MakeRoomAttempt::kQueueHead);
}

Engine::PlaceAttempt Engine::TryPlace(QueueId leaf, JobRecord& job, MakeRoomAttempt attempt) {
  const bool on_failure_block_and_reserve = attempt == MakeRoomAttempt::kQueueHead;
  const int min_tasks = MinTasksToPlace(job);
  const int max_tasks = job.wanted_tasks - job.PlacedTasks();

  auto over_quota = [&](const std::optional<QuotaViolation>& v) {
    // Every job that waits says why, the ones behind a blocked head included.
    PublishWaitingReason(job, QuotaWaitingReason(leaf, v));
    if (on_failure_block_and_reserve) queues_.BlockOnQuota(leaf, v ? v->queue : leaf);
    return PlaceAttempt::kOverQuota;
  };
  // Quotas first: caps and borrowing limits along the queue's path, and per GPU model.
  const QuotaRoom quota = RoomWithinQuota(leaf, job, min_tasks, max_tasks);
  if (quota.refused) return over_quota(quota.violation);
  const int allowed = quota.allowed;
  const std::optional<TaskShape>& narrowed = quota.narrowed;

  // Nodes reserved for another job are open to this one only if it ends before they are needed.
  reservation_filter_->SetPlacing(job.id, job.EndsByIfStartedAt(clock_.NowUs()));
  placer_.SetBurstAccess(queues_.BurstRefusal(job.queue).empty(), SpotAllowed(job));
  // Where it does not fit, the make-room steps try in order (engine_make_room.cc); the queue's
  // head gets every step, other attempts only those that stop nobody (and reclaim, behind a
  // head no step could serve).
  PlacementAfterSteps placement =
      PlaceMakingRoom(job, narrowed ? *narrowed : job.shape, min_tasks, allowed, attempt);
  // A job that preempts (or drains) waits aside, with the freed room held for it; the next job
  // of its queue may then try, so the queue is not blocked.
  if (placement.room_coming) return PlaceAttempt::kDoesNotFit;
  PlacementResult& result = placement.result;
  if (!result.placed()) {
    PublishWaitingReason(job, std::move(result.reason));
    if (on_failure_block_and_reserve) {
      queues_.BlockOnCapacity(leaf);
      // Jobs behind this head may fit where it does not.
      if (queues_.PendingCount(leaf) > 1) backfill_due_ = true;
    }
    return PlaceAttempt::kDoesNotFit;
  }
  // Charged what the chosen GPUs give, which the check above could only bound from below.
  if (std::optional<QuotaViolation> v =
          KeepWithinQuota(queues_, cluster_, leaf, placer_, result, min_tasks)) {
    return over_quota(v);
  }
  KeepAllowedSize(job, result);
  PlaceResult(leaf, job, std::move(result));
  return PlaceAttempt::kPlaced;
}

Engine::QuotaRoom Engine::RoomWithinQuota(QueueId leaf, const JobRecord& job, int min_tasks,
                                          int max_tasks) const {
  QuotaRoom room;
  const ResourceVector per_task = job.shape.RequestVector();
  room.allowed = queues_.TasksWithinQuota(leaf, per_task, max_tasks);
  if (room.allowed < min_tasks) {
    room.refused = true;
    room.violation = queues_.CheckQuota(leaf, per_task * min_tasks);
    return room;
  }
  // Per GPU model: the job is placed only on models whose quotas admit its minimum.
  const ModelsInQuota in_quota =
      ModelsWithinQuota(queues_, cluster_.models(), leaf, job.shape, min_tasks);
  if (in_quota.narrowed && in_quota.models == 0) {
    room.refused = true;
    room.violation = in_quota.refusal;
    return room;
  }
  if (in_quota.narrowed) {
    room.narrowed = job.shape;
    room.narrowed->models = in_quota.models;
  }
  return room;
}

std::string Engine::QuotaWaitingReason(QueueId leaf, const std::optional<QuotaViolation>& v) const {
  const QueueId blocker = v ? v->queue : leaf;
  const bool per_model = v && v->model >= 0;
  return "waiting for quota: queue '" + queues_.Name(blocker) + "' " +
         (v && !v->cap ? "borrowing limit" : "cap") + " on " +
         (per_model ? cluster_.models().Name(v->model) + " " : "") +
         ResourceName(v ? v->resource : 0);
}

void Engine::KeepAllowedSize(const JobRecord& job, PlacementResult& result) {
  // An elastic job starts at the largest count its size rule allows of what was placed (at
  // least its smallest allowed count, which was the placement's minimum).
  if (!job.elastic) return;
  const int live = job.LiveTasks();
  const int placed = static_cast<int>(result.tasks.size());
  const int keep = job.sizes.AtMost(live + placed).value_or(live + placed) - live;
  for (int i = keep; i < placed; ++i) placer_.Release(result.tasks[i]);
  result.tasks.resize(keep);
}

void Engine::PlaceResult(QueueId leaf, JobRecord& job, PlacementResult result) {
  const bool first_start = job.PlacedTasks() == 0;
  bool backfilled = false;
  for (const TaskAllocation& a : result.tasks) {
    if (reservations_.HeldWholeForOther(a.node, job.id)) {
      backfilled = true;
      break;
    }
  }
  statistics_.Placed(backfilled);
  if (reservations_.Find(job.id)) DropReservation(job);
  const TimestampUs now = clock_.NowUs();
  ResourceCharge delta;
  // A placement's tasks get consecutive indices.
  const int32_t first_task = job.next_task_index;
  const int32_t placed = static_cast<int32_t>(result.tasks.size());
  // Before the tasks are indexed (by expected end) and SetState (which indexes running jobs by
  // start).
  if (first_start) job.start_time_us = now;
  for (const TaskAllocation& a : result.tasks) {
    PlacedTask task;
    task.index = job.next_task_index++;
    task.allocation = a;
    task.placed_us = now;
    IndexTask(job, task);
    job.tasks.push_back(task);
    delta += ChargeOf(cluster_, a);
  }
  FinishWaitingForVictims(job);
  queues_.AddAllocation(leaf, delta.resources, now, delta.gpus_by_model);
  job.allocated += delta.resources;
  job.allocated_by_model += delta.gpus_by_model;
  if (!reservations_.all().empty()) DropReservationsOverQuota();
  // An elastic job starts with what fits (at least its minimum) and grows later through the
  // elastic policy; other jobs keep their remaining required tasks pending.
  if (job.elastic || job.PlacedTasks() >= job.wanted_tasks) RemovePending(job);

  const v1::JobState from = job.state;
  if (first_start && job.elastic) {
    elastic_jobs_.insert(job.id);
    growth_due_ = true;
  }
  if (first_start) {
    SetState(job, v1::ADMITTED);
    ArmServiceBandCrossing(job);
  }
  // Formatted on the stack: this runs for every placement.
  char reason[48];
  const int length = std::snprintf(reason, sizeof(reason), "placed %d %stask(s)", placed,
                                   first_start ? "" : "more ");
  job.reason.clear();
  const uint64_t id = job.id;
  const int32_t attempt = job.attempt;
  // More tasks of a job that has started change no state: a JOB_UPDATED (a resize).
  const std::string_view what(reason, static_cast<size_t>(length));
  Persist(job, first_start ? MakeEvent(job, from, what) : MakeUpdateEvent(job, what),
          [this, id, attempt, first_task, placed](const Status&) {
            Launch(id, attempt, first_task, placed);
          });
}

}  // namespace tessera
