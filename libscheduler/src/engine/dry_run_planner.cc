// DryRunPlanner: what a submit would do now, found without submitting it (Engine::DryRun).
//
// It gives a job that has not arrived the decision an arriving job gets, in TryPlace's order
// and through the same pieces: feasibility (CheckFeasible), its place in its queue's line, the
// quota checks (TasksWithinQuota before placing, KeepWithinQuota on what the placer chose), the
// placer with the reservation filter, the preemption search with the victim rule and its guards
// (SearchVictims), and reservation planning (ShadowStart). What deciding changes is undone or
// given a copy: a placement found is released at once, the preemption search runs on a copy of
// the planner (its rotation stays where it was), and nothing is persisted, published, counted or
// armed. The trial job has an id no job can have (kTrialJobId), so nothing it passes through
// can mistake it for one.
//
// Where an arriving job would be its queue's head, it gets every make-room step a head gets;
// behind other pending jobs of its queue, only what a backfill candidate gets (no preemption),
// and none in a strict FIFO queue without a time limit, where it waits for its turn. Re-shaping
// idle MIG instances (repartition-mig, drain-mig) is not tried: it would change the GPUs' layout.
// A start estimate counts running jobs' time limits and the reservations already made; pending
// jobs of other queues that come first in fair-share order and hold no reservation yet may still
// go first, so it is an estimate, not a promise.
//
// Thread safety: on the decision strand, like every engine call.
#include <algorithm>
#include <limits>

#include "engine/engine.h"
#include "engine/quota_charge.h"
#include "model/placement_terms.h"

namespace tessera {
namespace {

// Job ids come from the store, counting up from 1: this one is never handed out.
constexpr uint64_t kTrialJobId = std::numeric_limits<uint64_t>::max();
// Pending jobs counted ahead of the trial job (DryRunResult.jobs_ahead).
constexpr size_t kMaxJobsAheadCounted = 1000;

std::string SecondsFrom(TimestampUs when, TimestampUs now) {
  return std::to_string((std::max<TimestampUs>(when, now) - now) / 1'000'000) + " s";
}

}  // namespace

class Engine::DryRunPlanner {
 public:
  DryRunPlanner(Engine& engine, QueueId leaf, const v1::Job& job)
      : e_(engine), leaf_(leaf), now_(engine.clock_.NowUs()), models_(engine.cluster_.models()) {
    e_.FillRecord(job, leaf, job_);
    // Names the cluster does not know are added to a copy of its model list, and labels it
    // does not know match no node: the trial job leaves no name behind.
    job_.shape = MakeTaskShape(job.spec(), models_);
    job_.shape.terms = PlacementTerms::Compile(
        job.spec(), static_cast<const LabelDictionary&>(e_.cluster_.label_dictionary()));
    job_.id = kTrialJobId;
    job_.key = PendingKey{job.status().priority(), job.status().submit_time_us(), kTrialJobId};
    job_.preemptible = job.status().preemptible();
    out_.set_queue(job.spec().queue());
    out_.set_priority(job_.key.priority);
    out_.set_preemptible(job_.preemptible);
  }

  v1::DryRunResult Run() {
    if (std::optional<std::string> why = e_.CheckFeasible(job_, models_)) {
      out_.set_verdict(v1::DryRunResult::INFEASIBLE);
      out_.set_reason(*why);
      return std::move(out_);
    }
    if (e_.paused_ || e_.persist_retries_.degraded() || !e_.superseded_stopping_.empty()) {
      return Wait(v1::DryRunResult::PAUSED,
                  e_.paused_ ? "waiting for decisions to resume: they are paused"
                             : "waiting for decisions to resume: the store is refusing writes, "
                               "or tasks of an earlier run are still being stopped");
    }
    // Its place in line: a new job goes after every pending job of its queue with no lower
    // priority (PendingKey order).
    int ahead = 0;
    for (const PendingKey& key : e_.queues_.PendingJobs(leaf_, kMaxJobsAheadCounted)) {
      if (key < job_.key) ++ahead;
    }
    out_.set_jobs_ahead(ahead);
    MakeRoomAttempt attempt = MakeRoomAttempt::kQueueHead;
    if (ahead > 0) {
      // Behind a head not yet decided, it waits; behind a blocked head it is a backfill
      // candidate, unless it may not be one (Engine::BackfillMayTry).
      const bool strict = e_.queues_.Spec(leaf_).queueing() == v1::STRICT_FIFO;
      if (!e_.queues_.IsBlocked(leaf_) || (strict && job_.time_limit_us <= 0)) {
        return WaitForTurn(strict && job_.time_limit_us <= 0
                               ? " (a strict FIFO queue, where only a job with a time limit "
                                 "may start before those ahead of it)"
                               : "");
      }
      attempt = MakeRoomAttempt::kOther;
    }

    // Quotas first, as TryPlace: caps and borrowing limits along the queue's path, and per
    // GPU model.
    const int min_tasks = MinTasksToPlace(job_);
    const QuotaRoom quota = e_.RoomWithinQuota(leaf_, job_, min_tasks, job_.wanted_tasks);
    if (quota.refused) {
      return Wait(v1::DryRunResult::QUOTA, e_.QuotaWaitingReason(leaf_, quota.violation));
    }

    e_.reservation_filter_->SetPlacing(job_.id, job_.EndsByIfStartedAt(now_));
    e_.placer_.SetBurstAccess(e_.queues_.BurstRefusal(job_.queue).empty(), e_.SpotAllowed(job_));
    PlacementResult result = e_.placer_.Place(quota.narrowed ? *quota.narrowed : job_.shape,
                                              min_tasks, quota.allowed, job_.same_node);
    e_.reservation_filter_->SetPlacing(0, std::nullopt);
    if (result.placed()) {
      // KeepWithinQuota releases what it does not keep; the rest is released below.
      if (std::optional<QuotaViolation> v =
              KeepWithinQuota(e_.queues_, e_.cluster_, leaf_, e_.placer_, result, min_tasks)) {
        return Wait(v1::DryRunResult::QUOTA, e_.QuotaWaitingReason(leaf_, v));
      }
      e_.KeepAllowedSize(job_, result);
      for (size_t i = 0; i < result.tasks.size(); ++i) {
        e_.DescribePlacement(static_cast<int32_t>(i), result.tasks[i], out_.add_placements());
        e_.placer_.Release(result.tasks[i]);
      }
      out_.set_verdict(v1::DryRunResult::STARTS_NOW);
      out_.set_reason("placed " + std::to_string(result.tasks.size()) + " task(s)");
      out_.set_estimated_start_us(now_);
      return std::move(out_);
    }

    std::string preemption_note;
    if (Serves(MakeRoomReach::kQueueHeadOrReclaim, attempt) &&
        now_ >= job_.no_preemption_before_us) {
      VictimSearch search;
      PreemptionPlanner planner = e_.preemption_planner_;  // a copy: its rotation stays.
      e_.SearchVictims(job_, /*reclaim_only=*/false, planner, search);
      if (search.plan) return Preempts(search);
      if (search.retry_at > now_) {
        preemption_note = "; lower-priority work may be stopped for it in " +
                          SecondsFrom(search.retry_at, now_) + " (preemption guards)";
      }
    }
    // What the other steps (burst capacity) know of the wait, without asking them to act.
    for (const std::unique_ptr<MakeRoomStep>& step : e_.make_room_steps_) {
      step->Explain(job_, result.reason);
    }
    if (ahead > 0) return WaitForTurn("; " + result.reason + preemption_note);
    return WaitForRoom(result.reason + preemption_note);
  }

 private:
  v1::DryRunResult Wait(v1::DryRunResult::WaitCause cause, std::string reason) {
    out_.set_verdict(v1::DryRunResult::WAITS);
    out_.set_wait_cause(cause);
    out_.set_reason(std::move(reason));
    if (out_.estimated_start_us() == 0 && out_.start_unknown_reason().empty()) {
      out_.set_start_unknown_reason(cause == v1::DryRunResult::QUOTA
                                        ? "it waits until its queue's usage falls"
                                        : "it waits until decisions resume");
    }
    return std::move(out_);
  }

  v1::DryRunResult WaitForTurn(const std::string& why) {
    const int ahead = out_.jobs_ahead();
    out_.set_start_unknown_reason(std::to_string(ahead) + (ahead >= 1000 ? " or more" : "") +
                                  " job(s) of its queue go first");
    return Wait(v1::DryRunResult::TURN, "waiting for its turn: " + std::to_string(ahead) +
                                            " job(s) ahead of it in queue '" +
                                            e_.queues_.Name(leaf_) + "'" + why);
  }

  // It does not fit now and nothing will be stopped for it: held room (reservation) or lack of
  // it (capacity), and when running jobs' ends are expected to make room.
  v1::DryRunResult WaitForRoom(std::string reason) {
    v1::DryRunResult::WaitCause cause = v1::DryRunResult::CAPACITY;
    if (std::optional<uint64_t> holder = HolderOfRoomItFits()) {
      cause = v1::DryRunResult::RESERVATION;
      const Reservation* r = e_.reservations_.Find(*holder);
      reason = "waiting for a reservation: the room it fits in now is held for job " +
               std::to_string(*holder) + ", from " + SecondsFrom(r->start_us, now_) + " from now" +
               (job_.time_limit_us > 0 ? " (its time limit would end later)"
                                       : " (a time limit ending before then would let it "
                                         "start at once)");
    }
    bool from_estimates = false;
    const std::optional<ShadowPlan> plan = e_.ShadowStart(job_, &from_estimates);
    if (!plan || plan->nodes.empty()) {
      out_.set_start_unknown_reason(
          "no end of running work makes room for it on nodes that are not held for other jobs");
    } else if (from_estimates) {
      out_.set_start_unknown_reason(
          "it needs room that running jobs without a time limit hold (were each to run for "
          "engine.default_runtime_estimate, it would start in " +
          SecondsFrom(plan->start_us, now_) + ")");
    } else {
      out_.set_estimated_start_us(std::max(plan->start_us, now_));
      for (size_t i = 0; i < plan->nodes.size(); ++i) {
        v1::TaskPlacement* p = out_.add_placements();
        p->set_index(static_cast<int32_t>(i));
        p->set_node(e_.cluster_.node(plan->nodes[i]).name());
      }
      reason += ", expected start in " + SecondsFrom(plan->start_us, now_);
    }
    return Wait(cause, std::move(reason));
  }

  // The job holding the reservation without which the trial job would fit now, if any: the
  // free room on the nodes it may use, reservations ignored, fits its gang minimum.
  std::optional<uint64_t> HolderOfRoomItFits() const {
    if (e_.reservations_.size() == 0) return std::nullopt;
    const TaskShape& shape = job_.shape;
    auto usable = [&shape](const NodeState& n) { return n.Schedulable() && Admits(shape, n); };
    const std::optional<ShadowPlan> free_now =
        PlanShadowStart(e_.cluster_, shape, MinTasksToPlace(job_), job_.same_node,
                        std::vector<RunningTaskEnd>(), usable, now_);
    if (!free_now) return std::nullopt;
    for (NodeIndexId node : free_now->nodes) {
      const std::vector<const Reservation*> held = e_.reservations_.On(node);
      if (!held.empty()) return held.front()->job;
    }
    return std::nullopt;
  }

  v1::DryRunResult Preempts(VictimSearch& search) {
    e_.WithEarlierShrinkSteps(*search.plan, search.victims);
    int64_t grace_us = 0;
    // A job's shrink steps are one victim each; the answer lists each job once.
    std::vector<uint64_t> listed;
    for (const Victim* v : search.plan->victims) {
      const JobRecord& victim = e_.jobs_.at(v->job);
      grace_us = std::max(grace_us, victim.grace_ms * 1000);
      auto at = std::find(listed.begin(), listed.end(), v->job);
      if (at != listed.end()) {
        v1::DryRunVictim& seen = *out_.mutable_victims(static_cast<int>(at - listed.begin()));
        seen.set_tasks(seen.tasks() + static_cast<int32_t>(v->tasks.size()));
        continue;
      }
      listed.push_back(v->job);
      v1::DryRunVictim* d = out_.add_victims();
      d->set_job_id(v->job);
      d->set_queue(e_.queues_.Name(victim.queue));
      d->set_priority(victim.key.priority);
      d->set_tasks(static_cast<int32_t>(v->tasks.size()));
      d->set_shrink_only(v->shrink_only);
      d->set_reason((v->shrink_only ? "shrinking " : "preempted ") +
                    e_.WhyVictim(victim, *v, job_, search, "this job"));
    }
    for (size_t i = 0; i < search.plan->nodes.size(); ++i) {
      v1::TaskPlacement* p = out_.add_placements();
      p->set_index(static_cast<int32_t>(i));
      p->set_node(e_.cluster_.node(search.plan->nodes[i]).name());
    }
    out_.set_verdict(v1::DryRunResult::PREEMPTS);
    out_.set_reason("preempting " + std::to_string(search.plan->victims.size()) +
                    " victim(s) to make room");
    // Victims that ignore their notice are stopped at its end.
    out_.set_estimated_start_us(now_ + grace_us);
    return std::move(out_);
  }

  Engine& e_;
  const QueueId leaf_;
  const TimestampUs now_;
  GpuModels models_;  // the cluster's, and models only this job names.
  JobRecord job_;
  v1::DryRunResult out_;
};

StatusOr<v1::DryRunResult> Engine::DryRun(const v1::Job& job) {
  const std::string& queue = job.spec().queue();
  const std::optional<QueueId> leaf = queues_.Find(queue);
  if (!leaf) return NotFoundError("queue: '" + queue + "' does not exist");
  if (!queues_.IsLeaf(*leaf)) {
    return FailedPreconditionError("queue: '" + queue +
                                   "' has child queues; submit to a leaf queue");
  }
  return DryRunPlanner(*this, *leaf, job).Run();
}

}  // namespace tessera
