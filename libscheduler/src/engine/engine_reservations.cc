// Reservations and time limits: a job that does not fit gets nodes held from the time running
// jobs are expected to free them, and time limits are enforced, since backfill relies on them.

#include "common/check.h"
#include "engine/engine.h"
#include "placement/shadow_time.h"

namespace tessera {
namespace {

std::string SecondsFromNow(TimestampUs when, TimestampUs now) {
  return std::to_string((std::max<TimestampUs>(when, now) - now) / 1'000'000) + " s";
}

}  // namespace

void Engine::PlanReservation() {
  const uint64_t id = reservation_candidate_;
  reservation_candidate_ = 0;
  JobRecord* job = FindJob(id);
  if (!job || !job->in_pending) return;
  const auto start = std::chrono::steady_clock::now();
  TryReserve(*job);
  statistics_.ReservationPlanned(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

void Engine::TryReserve(JobRecord& job) {
  if (job.infeasible || reservations_.Find(job.id)) return;
  // Nodes held for a job its quota does not admit would stay idle for nothing (a re-plan comes
  // here after jobs of its queue started).
  if (RoomWithinQuota(job.queue, job, MinTasksToPlace(job), job.wanted_tasks - job.PlacedTasks())
          .refused) {
    return;
  }
  if (static_cast<int>(reservations_.whole_node_count()) >= options_.engine.max_reservations) {
    // Reservations belong to the jobs first in fair order: take the place of the last holder
    // if this job comes before it (a queue with a smaller share arrived since, say).
    const Reservation* last = nullptr;
    for (const Reservation& r : reservations_.all()) {
      if (!r.whole_nodes()) continue;
      const JobRecord& holder = jobs_.at(r.job);
      if (!last || queues_.Precedes(jobs_.at(last->job).queue, jobs_.at(last->job).key,
                                    holder.queue, holder.key)) {
        last = &r;
      }
    }
    JobRecord& holder = jobs_.at(last->job);
    // Strictly: a tie in share must not pass a reservation back and forth.
    if (!queues_.Precedes(job.queue, job.key, holder.queue, holder.key, /*strictly=*/true)) return;
    holder.reason = "reservation passed to job " + std::to_string(job.id) + ", ahead in fair order";
    Persist(holder, MakeUpdateEvent(holder, holder.reason));
    // Not DropReservation: the nodes pass to the new holder, nobody else gains room.
    reservations_.Remove(holder.id);
    holder.reserved_start_us = 0;
    holder.reserved_nodes.clear();
  }
  const TimestampUs now = clock_.NowUs();
  const uint64_t id = job.id;
  std::optional<ShadowPlan> plan = ShadowStart(job, nullptr);
  if (!plan || plan->nodes.empty()) return;

  // A re-plan that lands on the same nodes only moves the expected start: no event for that.
  const bool same_nodes = job.reserved_nodes == plan->nodes;
  reservations_.Add({id, plan->start_us, plan->nodes, {}, job.shape, plan->tasks});
  job.reserved_start_us = plan->start_us;
  job.reserved_nodes = plan->nodes;
  if (!same_nodes) {
    job.reason = "waiting for capacity: " + std::to_string(plan->nodes.size()) +
                 " node(s) reserved, expected start in " + SecondsFromNow(plan->start_us, now);
    Persist(job, MakeUpdateEvent(job, job.reason));
  }
  if (plan->start_us <= now) {
    // It could start now (it may have taken the reservation over from a job that blocked it):
    // let its queue try again at once rather than at the next release.
    capacity_freed_ = true;
    host_.RequestDecisions();
  }
  // If the estimate was wrong (jobs overran or ended early elsewhere), plan again.
  const TimestampUs start = plan->start_us;
  timers_.Schedule(
      std::max(start, now) + 1'000'000, [this, id, start] { OnReservationDue(id, start); },
      [this, id, start] { return ReservationStillDue(id, start); });
}

std::optional<ShadowPlan> Engine::ShadowStart(const JobRecord& job, bool* from_estimates) const {
  if (from_estimates) *from_estimates = false;
  const TimestampUs now = clock_.NowUs();
  // Tasks in order of expected end. A job past its estimate (it has no time limit) could end at
  // any moment; it is assumed to end soon, and the plan is revisited then, rather than in the
  // past (which would re-plan without end). So: the tasks ending by `soon`, then the overdue
  // ones, then the rest.
  const TimestampUs soon = now + kOverdueReplanUs;
  const auto overdue_end = tasks_by_end_.upper_bound({now, UINT64_MAX, INT32_MAX});
  const auto soon_end = tasks_by_end_.upper_bound({soon, UINT64_MAX, INT32_MAX});
  struct Range {
    std::set<TaskEnd>::const_iterator from, to;
  };
  const Range ranges[] = {{overdue_end, soon_end},
                          {tasks_by_end_.begin(), overdue_end},
                          {soon_end, tasks_by_end_.end()}};
  size_t range = 0;
  auto at = ranges[0].from;
  auto next_to_end = [&]() -> std::optional<RunningTaskEnd> {
    while (range < std::size(ranges)) {
      if (at == ranges[range].to) {
        if (++range < std::size(ranges)) at = ranges[range].from;
        continue;
      }
      const TaskEnd& e = *at++;
      const auto other = jobs_.find(e.job);
      const PlacedTask* task = nullptr;
      if (other != jobs_.end()) {
        for (const PlacedTask& t : other->second.tasks) {
          if (t.index == e.task) task = &t;
        }
      }
      if (!task || task->exited) {
        TESSERA_BUG("task " + std::to_string(e.task) + " of job " + std::to_string(e.job) +
                    " is indexed by end but not live");
        continue;
      }
      // Its end is a guess when its job has no time limit.
      if (from_estimates && other->second.time_limit_us <= 0) *from_estimates = true;
      return RunningTaskEnd{task->allocation, std::max(e.end_us, range == 1 ? soon : now)};
    }
    return std::nullopt;
  };
  const uint64_t id = job.id;
  const TaskShape& shape = job.shape;
  auto usable = [this, id, &shape](const NodeState& n) {
    return n.Schedulable() && Admits(shape, n) && !reservations_.HeldWholeForOther(n.id(), id);
  };
  return PlanShadowStart(cluster_, job.shape, MinTasksToPlace(job), job.same_node, next_to_end,
                         usable, now);
}

void Engine::TasksEndingBy(NodeIndexId node, TimestampUs by,
                           std::vector<TaskAllocation>& out) const {
  if (node >= tasks_by_node_.size()) return;
  const TimestampUs now = clock_.NowUs();
  for (const auto& [job_id, index] : tasks_by_node_[node]) {
    const JobRecord& job = jobs_.at(job_id);
    for (const PlacedTask& t : job.tasks) {
      if (t.index != index || t.exited || !t.by_end) continue;
      // As TryReserve plans: a task past its estimate ends soon.
      const TimestampUs end = (*t.by_end)->end_us;
      if ((end < now ? now + kOverdueReplanUs : end) <= by) out.push_back(t.allocation);
    }
  }
}

void Engine::DropReservation(JobRecord& job) {
  if (!reservations_.Find(job.id)) return;
  reservations_.Remove(job.id);
  job.reserved_start_us = 0;
  job.reserved_nodes.clear();
  // The held nodes are open to everyone again.
  capacity_freed_ = true;
  host_.RequestDecisions();
}

void Engine::DropReservationsOverQuota() {
  // A holder waits for capacity, its quota admitting it. A job of its queue (or of a queue
  // under the same cap) that starts since, or a lowered cap, can take that away: the nodes it
  // holds would then stay idle for nothing. Give them back and say what it waits for now.
  std::vector<std::pair<uint64_t, std::optional<QuotaViolation>>> over;
  for (const Reservation& r : reservations_.all()) {
    const JobRecord& holder = jobs_.at(r.job);
    // One awaiting its victims is placed when they have stopped, and quota is checked then.
    if (!holder.in_pending) continue;
    const QuotaRoom room = RoomWithinQuota(holder.queue, holder, MinTasksToPlace(holder),
                                           holder.wanted_tasks - holder.PlacedTasks());
    if (room.refused) over.emplace_back(holder.id, room.violation);
  }
  for (const auto& [id, violation] : over) {
    JobRecord& holder = jobs_.at(id);
    DropReservation(holder);
    holder.reason = QuotaWaitingReason(holder.queue, violation);
    Persist(holder, MakeUpdateEvent(holder, holder.reason));
  }
}

bool Engine::ReservationStillDue(uint64_t job_id, TimestampUs start_us) const {
  const Reservation* r = reservations_.Find(job_id);
  return r != nullptr && r->start_us == start_us && jobs_.count(job_id) != 0;
}

void Engine::OnReservationDue(uint64_t job_id, TimestampUs start_us) {
  JobRecord* job = FindJob(job_id);
  if (!job) return;
  const Reservation* r = reservations_.Find(job_id);
  if (!r || r->start_us != start_us) return;  // placed, dropped or replanned since.
  if (job->awaiting_victims) {
    // The victims took longer than their notice allowed: back into line to try again.
    FinishWaitingForVictims(*job);
    AddPending(*job);
    DropReservation(*job);
    return;
  }
  // The estimate was wrong. Plan again from what is known now (keeping quiet if the nodes
  // stay the same), and let the job try at once.
  reservations_.Remove(job_id);
  job->reserved_start_us = 0;
  TryReserve(*job);
  if (!reservations_.Find(job_id)) job->reserved_nodes.clear();
  capacity_freed_ = true;
  host_.RequestDecisions();
}

void Engine::ArmTimeLimit(JobRecord& job) {
  if (job.time_limit_us <= 0) return;
  const uint64_t id = job.id;
  const int32_t attempt = job.attempt;
  // Whether the attempt still runs and the limit has not acted on it yet.
  auto running = [this, id, attempt] {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return false;
    const JobRecord& j = it->second;
    return j.attempt == attempt && j.LiveTasks() > 0 && !j.failing;
  };
  timers_.Schedule(job.start_time_us + job.time_limit_us, [this, id, running] {
    if (!running()) return;
    JobRecord* j = FindJob(id);
    j->failing = true;
    j->reason = "time limit of " + std::to_string(j->time_limit_us / 1'000'000) + " s exceeded";
    StopTasks(*j);
    MaybeFinish(*j);
  });
}

}  // namespace tessera
