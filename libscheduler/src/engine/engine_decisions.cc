// The decision loop: serve the queue with the smallest weighted dominant share, place its head
// job or block the queue until something changes.
#include "engine/engine.h"

namespace tessera {

bool Engine::RunDecisions(std::chrono::steady_clock::time_point deadline) {
  if (paused_ || store_degraded_) return false;
  if (capacity_freed_) {
    queues_.UnblockCapacity();
    capacity_freed_ = false;
  }
  while (true) {
    const std::optional<QueueId> leaf = queues_.PickLeaf();
    if (!leaf) return false;
    const std::optional<PendingKey> head = queues_.Head(*leaf);
    JobRecord& job = jobs_.at(head->job_id);
    const auto start = std::chrono::steady_clock::now();
    Decide(*leaf, job);
    const auto end = std::chrono::steady_clock::now();
    decision_latency_.Record(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
    ++decisions_;
    if (end >= deadline) return queues_.PickLeaf().has_value();
  }
}

void Engine::Decide(QueueId leaf, JobRecord& job) {
  const bool first_start = job.PlacedTasks() == 0;
  const int min_tasks = first_start ? job.gang_min : 1;
  const int max_tasks = job.wanted_tasks - job.PlacedTasks();
  const ResourceVector per_task = job.shape.RequestVector();

  // Quotas first: caps and borrowing limits along the queue's path.
  const int allowed = queues_.TasksWithinQuota(leaf, per_task, max_tasks);
  if (allowed < min_tasks) {
    const std::optional<QuotaViolation> v = queues_.CheckQuota(leaf, per_task * min_tasks);
    const QueueId blocker = v ? v->queue : leaf;
    job.reason = "waiting for quota: queue '" + queues_.Name(blocker) + "' " +
                 (v && !v->cap ? "borrowing limit" : "cap") + " on " +
                 ResourceName(v ? v->resource : 0);
    queues_.BlockOnQuota(leaf, blocker);
    return;
  }

  PlacementResult result = placer_.Place(job.shape, min_tasks, allowed, job.same_node);
  if (!result.placed()) {
    job.reason = result.reason;
    queues_.BlockOnCapacity(leaf);
    return;
  }

  ++placements_;
  const TimestampUs now = clock_.NowUs();
  ResourceVector delta;
  std::vector<int32_t> placed;
  for (const TaskAllocation& a : result.tasks) {
    PlacedTask task;
    task.index = job.next_task_index++;
    task.allocation = a;
    placed.push_back(task.index);
    job.tasks.push_back(task);
    delta += a.Vector();
  }
  queues_.AddAllocation(leaf, delta, now);
  job.allocated += delta;
  // An elastic job starts with what fits (at least its minimum) and grows later through the
  // elastic policy; other jobs keep their remaining required tasks pending.
  if (job.elastic || job.PlacedTasks() >= job.wanted_tasks) RemovePending(job);

  const v1::JobState from = job.state;
  std::string reason;
  if (first_start) {
    SetState(job, v1::ADMITTED);
    job.start_time_us = now;
    reason = "placed " + std::to_string(placed.size()) + " task(s)";
  } else {
    reason = "placed " + std::to_string(placed.size()) + " more task(s)";
  }
  job.reason.clear();
  const uint64_t id = job.id;
  const int32_t attempt = job.attempt;
  Persist(job, {MakeEvent(job, from, reason)},
          [this, id, attempt, placed = std::move(placed)](const Status&) {
            Launch(id, attempt, placed);
          });
}

}  // namespace tessera
