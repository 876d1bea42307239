// Preemption in the engine: listing the victims the rule allows (preemption/victim_eligibility),
// carrying out a plan (notice, grace period,
// stop, requeue with the original submit time), and the index of live tasks per node that the
// planner looks through.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "engine/engine.h"
#include "engine/quota_charge.h"
#include "fairshare/service_bands.h"

namespace tessera {

void Engine::IndexTask(const JobRecord& job, PlacedTask& task) {
  const NodeIndexId node = task.allocation.node;
  if (node >= tasks_by_node_.size()) tasks_by_node_.resize(node + 1);
  tasks_by_node_[node].emplace_back(job.id, task.index);
  const TimestampUs end = job.EndsBy().value_or(job.start_time_us + default_runtime_us_);
  // Tasks mostly arrive in order of expected end (start plus a common estimate): the hint makes
  // those inserts constant time.
  task.by_end = tasks_by_end_.insert(tasks_by_end_.end(), {end, job.id, task.index});
}

void Engine::UnindexTask(uint64_t job, PlacedTask& task) {
  if (task.by_end) {
    tasks_by_end_.erase(*task.by_end);
    task.by_end.reset();
  }
  const NodeIndexId node = task.allocation.node;
  if (node >= tasks_by_node_.size()) return;
  auto& list = tasks_by_node_[node];
  auto it = std::find(list.begin(), list.end(), std::make_pair(job, task.index));
  if (it == list.end()) return;
  *it = list.back();
  list.pop_back();
}

int64_t Engine::LostGpuUs(const JobRecord& job, TimestampUs now) const {
  int64_t milli = 0;
  for (const PlacedTask& t : job.tasks) {
    if (!t.exited) milli += int64_t{t.allocation.gpu_count()} * t.allocation.gpu_milli;
  }
  return milli * (now - LastCheckpoint(job, now)) / 1000;
}

TimestampUs Engine::LastCheckpoint(const JobRecord& job, TimestampUs now) const {
  TimestampUs last = std::max(job.last_checkpoint_us, job.start_time_us);
  if (job.checkpoint_every_us > 0 && job.start_time_us > 0 && now > job.start_time_us) {
    // A simulated job checkpoints on its declared period.
    const int64_t periods = (now - job.start_time_us) / job.checkpoint_every_us;
    last = std::max(last, job.start_time_us + periods * job.checkpoint_every_us);
  }
  return last;
}

int32_t Engine::PreemptingBand(const JobRecord& job) const {
  const v1::AttainedServiceOrder* order = ServiceOrderOf(job.queue);
  return order && order->preempt() ? job.key.band : -1;
}

VictimFacts Engine::VictimFactsOf(const JobRecord& job) const {
  VictimFacts facts;
  facts.job = job.id;
  facts.queue = job.queue;
  facts.priority = job.key.priority;
  facts.running = job.state == v1::RUNNING;
  facts.starting = job.state == v1::ADMITTED || job.state == v1::STARTING;
  facts.stopping = job.preempting;
  facts.preemptible = job.preemptible;
  facts.elastic = job.elastic;
  facts.idle_reclaimable = idle_gpus_.Reclaimable(job.id);
  facts.live_tasks = job.LiveTasks();
  facts.gang_min = job.gang_min;
  facts.started_us = job.start_time_us;
  facts.preempted_us = job.preempted_at_us;
  facts.allocated = &job.allocated;
  facts.gpus_by_model = &job.allocated_by_model;
  if (const v1::AttainedServiceOrder* order = ServiceOrderOf(job.queue);
      order && order->preempt()) {
    facts.service_band = ServiceBand(*order, ServiceGpuUs(job, clock_.NowUs()));
  }
  return facts;
}

bool Engine::TryPreempt(JobRecord& job, bool reclaim_only) {
  if (!options_.preemption.enabled || job.awaiting_victims || job.infeasible) return false;
  const TimestampUs now = clock_.NowUs();
  if (now < job.no_preemption_before_us) {
    // A guard said "not yet". One wake-up serves every waiting job, the earliest first: the
    // jobs it woke too soon ask again for theirs, so none is forgotten.
    ArmPreemptionRetry(job.no_preemption_before_us);
    return false;
  }
  const auto started = std::chrono::steady_clock::now();
  VictimSearch search;
  SearchVictims(job, reclaim_only, preemption_planner_, search);
  if (search.searched) {
    statistics_.PreemptionPlanned(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - started)
                                      .count());
  }
  std::optional<PreemptionPlan>& plan = search.plan;
  if (!plan) {
    // A guard said "not yet": look again when it will say yes, even if nothing else happens,
    // and not before (each look costs a bounded but real search).
    if (search.retry_at > now) {
      job.no_preemption_before_us = search.retry_at;
      ArmPreemptionRetry(search.retry_at);
    }
    // A victim still starting may be stopped once it runs: look again then.
    if (search.victim_starting) preemption_retry_on_start_ = true;
    return false;
  }
  preemption_guard_.Record(now, search.whole_jobs);
  WithEarlierShrinkSteps(*plan, search.victims);

  // Carry it out. The job leaves its queue's pending order and waits, with the freed nodes
  // reserved for it, until the victims' grace periods are over and their tasks are gone; the
  // jobs behind it may meanwhile make their own room.
  int64_t grace_us = 0;
  const std::string for_job = "job " + std::to_string(job.id);
  std::unordered_map<uint64_t, std::vector<const Victim*>> shrinks;
  for (const Victim* v : plan->victims) {
    JobRecord& victim = jobs_.at(v->job);
    grace_us = std::max(grace_us, victim.grace_ms * 1000);
    statistics_.LostWork(v->cost.lost_gpu_us);
    if (v->shrink_only) {
      shrinks[v->job].push_back(v);
    } else {
      statistics_.Preempted();
      if (v->idle_gpus) statistics_.IdleGpuPreempted();
      Preempt(victim, "preempted " + WhyVictim(victim, *v, job, search, for_job));
    }
  }
  for (const auto& [victim_id, tasks] : shrinks) {
    statistics_.Preempted();
    JobRecord& victim = jobs_.at(victim_id);
    Shrink(victim, tasks, "shrinking " + WhyVictim(victim, *tasks.front(), job, search, for_job));
  }
  // Hold on each node what the victims free there for this job.
  std::vector<ResourceVector> held(plan->nodes.size());
  for (const Victim* v : plan->victims) {
    for (const VictimTask& t : v->tasks) {
      auto at = std::find(plan->nodes.begin(), plan->nodes.end(), t.allocation.node);
      if (at != plan->nodes.end()) held[at - plan->nodes.begin()] += t.allocation.Vector();
    }
  }
  AwaitVictims(job, plan->nodes, std::move(held), grace_us,
               "preempting " + std::to_string(plan->victims.size()) + " victim(s) to make room");
  return true;
}

std::string Engine::WhyVictim(const JobRecord& victim, const Victim& v, const JobRecord& job,
                              const VictimSearch& search, std::string_view for_whom) const {
  // A lower priority, its queue's borrowing while this one is below its guarantee, or (shrinks
  // of an equal priority) tasks above its elastic minimum.
  return "to make room for " + std::string(for_whom) +
         (v.idle_gpus ? " (its GPUs stayed idle)"
          : victim.key.priority < job.key.priority && !search.reclaim_only ? " (higher priority)"
          : v.by_service    ? " (less attained service)"
          : search.claimant ? " (queue below its guarantee)"
                            : " (equal priority; tasks above the elastic minimum give way)");
}

void Engine::SearchVictims(const JobRecord& job, bool reclaim_only, PreemptionPlanner& planner,
                           VictimSearch& out) {
  out.reclaim_only = reclaim_only;
  if (!options_.preemption.enabled || job.awaiting_victims || job.infeasible) return;
  const TimestampUs now = clock_.NowUs();
  const int min_tasks = MinTasksToPlace(job);
  // Room is made only on GPU models the job may use and its queues' per-model quotas admit.
  ModelMask models = job.shape.models == 0 ? kEveryModel : job.shape.models;
  if (const ModelsInQuota in_quota =
          ModelsWithinQuota(queues_, cluster_.models(), job.queue, job.shape, min_tasks);
      in_quota.narrowed) {
    models = in_quota.models;
  }
  if (models == 0) return;
  // Reclaim takes back at most up to the guarantee of the job's queue or of a queue above it,
  // counting what earlier preemptions are already freeing for that queue's subtree, and only
  // on the models that guarantee covers.
  const ResourceVector wanted = job.shape.RequestVector() * min_tasks;
  std::optional<ReclaimClaim> claim;
  if (options_.preemption.reclaim) {
    claim = queues_.ReclaimingQueue(job.queue, wanted, models, [this](QueueId q) {
      ResourceCharge under;
      for (const auto& [leaf, amount] : incoming_) {
        if (queues_.IsWithin(leaf, q)) under += amount;
      }
      return under;
    });
  }
  out.claimant = claim ? std::optional<QueueId>(claim->queue) : std::nullopt;
  const std::optional<QueueId>& claimant = out.claimant;
  const bool reclaim = claimant.has_value();
  if (reclaim_only && !reclaim) return;
  // Before searching nodes: is there any lower-priority job old enough to be a victim? If
  // not, and no reclaim is due and nothing can shrink, there is nothing to find until the
  // oldest of them passes the minimum runtime.
  const int64_t min_runtime_us =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.preemption.min_runtime)
          .count();
  bool old_enough_runs = false;
  TimestampUs first_eligible = 0;
  for (const auto& [priority, starts] : preemptible_running_) {
    if (priority >= job.key.priority) break;
    const TimestampUs eligible = starts.Earliest() + min_runtime_us;
    if (eligible <= now) {
      old_enough_runs = true;
      break;
    }
    if (first_eligible == 0 || eligible < first_eligible) first_eligible = eligible;
  }
  // In a queue ordered by attained service, running jobs of its own may give way to a lower
  // band: only the search can tell.
  const bool by_service = PreemptingBand(job) >= 0 && !reclaim_only;
  if (!old_enough_runs && !reclaim && !by_service && elastic_jobs_.empty() &&
      !idle_gpus_.AnyReclaimable()) {
    out.retry_at = first_eligible;
    return;
  }
  out.searched = true;

  // Victims are built once per plan, on first sight, and shared by every node they touch: a
  // whole job, or each elastic task above its job's minimum (a shrink loses nothing).
  std::unordered_map<uint64_t, std::vector<Victim>>& victims = out.victims;
  // The planner looks at a bounded number of nodes; room for their jobs avoids rehashing.
  victims.reserve(planner.CandidateBudget(cluster_.size()) * 8);
  TimestampUs& retry_at = out.retry_at;  // when a guard that refused a victim will allow it.
  const Preemptor preemptor{job.id,
                            job.queue,
                            job.key.priority,
                            claimant,
                            reclaim_only,
                            claim ? claim->models : kEveryModel,
                            PreemptingBand(job)};
  auto victims_of = [&](uint64_t id) -> const std::vector<Victim>& {
    auto [it, inserted] = victims.try_emplace(id);
    if (!inserted) return it->second;
    const JobRecord& v = jobs_.at(id);
    const VictimVerdict verdict = victim_eligibility_.Judge(preemptor, VictimFactsOf(v), now);
    if (verdict.extent == VictimVerdict::Extent::kNone) return it->second;
    if (verdict.once_running) {
      // A victim refused only because it has not started yet.
      out.victim_starting = true;
      return it->second;
    }
    if (!verdict.allowed_now) {
      if (retry_at == 0 || verdict.allowed_at < retry_at) retry_at = verdict.allowed_at;
      return it->second;
    }
    if (verdict.extent == VictimVerdict::Extent::kShrink) {
      // One victim per step down to the next count its size rule allows (one task each when it
      // has none), the last tasks first; a plan that takes a step takes the steps before it
      // too (WithEarlierShrinkSteps).
      // Counted without the tasks already stopping (a shrink under way): it lands below them.
      int size = 0;
      for (const PlacedTask& p : v.tasks) size += p.exited || p.stopping ? 0 : 1;
      auto t = v.tasks.rbegin();
      for (std::optional<int> next = v.sizes.Below(size); next && *next >= v.gang_min;
           size = *next, next = v.sizes.Below(size)) {
        Victim victim;
        victim.job = id;
        victim.shrink_only = true;
        victim.cost.priority = v.key.priority;
        for (; t != v.tasks.rend() && static_cast<int>(victim.tasks.size()) < size - *next; ++t) {
          if (!t->exited && !t->stopping) victim.tasks.push_back({t->index, t->allocation});
        }
        if (static_cast<int>(victim.tasks.size()) < size - *next) break;
        it->second.push_back(std::move(victim));
      }
      return it->second;
    }
    Victim victim;
    victim.job = id;
    victim.idle_gpus = verdict.by_idle_gpus;
    victim.by_service = verdict.by_service;
    victim.tasks.reserve(v.tasks.size());
    for (const PlacedTask& t : v.tasks) {
      if (!t.exited) victim.tasks.push_back({t.index, t.allocation});
    }
    victim.cost.whole_jobs = 1;
    victim.cost.lost_gpu_us = LostGpuUs(v, now);
    victim.cost.runtime_us = now - v.start_time_us;
    victim.cost.priority = v.key.priority;
    it->second.push_back(std::move(victim));
    return it->second;
  };
  auto victims_on = [&](NodeIndexId node) {
    std::vector<const Victim*> found;
    if (node >= tasks_by_node_.size()) return found;
    for (const auto& [id, index] : tasks_by_node_[node]) {
      for (const Victim& v : victims_of(id)) {
        const bool here = std::any_of(v.tasks.begin(), v.tasks.end(), [node](const VictimTask& t) {
          return t.allocation.node == node;
        });
        if (here && std::find(found.begin(), found.end(), &v) == found.end()) found.push_back(&v);
      }
    }
    return found;
  };
  // A node held whole for a job this one could preempt (or reclaim from) is no shelter: the
  // holder would be a victim itself were it running. Nor is it for a job whose time limit ends
  // before the reservation starts, as for backfill (ReservationFilter).
  const std::optional<TimestampUs> ends_by = job.EndsByIfStartedAt(now);
  auto usable = [&](const NodeState& n) {
    // Only nodes the preemptor may run on: stopping victims elsewhere frees nothing it can use.
    if (!n.Schedulable() || !Admits(job.shape, n)) return false;
    if (job.shape.needs_gpu() && models != kEveryModel && ((models >> n.model()) & 1u) == 0) {
      return false;
    }
    for (const Reservation* r : reservations_.On(n.id())) {
      if (r->whole_nodes() && r->job != job.id && !(ends_by && *ends_by <= r->start_us) &&
          !ReservationYields(jobs_.at(r->job), job, claimant)) {
        return false;
      }
    }
    return true;
  };
  out.plan = planner.Plan(cluster_, job.shape, min_tasks, job.same_node, victims_on, usable);
  if (!out.plan) return;
  for (const Victim* v : out.plan->victims) out.whole_jobs += v->shrink_only ? 0 : 1;
  if (!preemption_guard_.WithinRate(now, out.whole_jobs)) {
    retry_at = preemption_guard_.RateAllowsAt(now, out.whole_jobs);
    out.plan.reset();
  }
}

void Engine::WithEarlierShrinkSteps(
    PreemptionPlan& plan, const std::unordered_map<uint64_t, std::vector<Victim>>& victims) const {
  // Per job, the deepest step the plan takes (its steps are listed in order, the first from
  // the job's present count).
  std::map<uint64_t, size_t> deepest;
  for (const Victim* v : plan.victims) {
    if (!v->shrink_only || !jobs_.at(v->job).sizes.HasRule()) continue;
    const std::vector<Victim>& steps = victims.at(v->job);
    const size_t step = static_cast<size_t>(v - steps.data());
    auto [at, inserted] = deepest.try_emplace(v->job, step);
    if (!inserted) at->second = std::max(at->second, step);
  }
  for (const auto& [job, step] : deepest) {
    const std::vector<Victim>& steps = victims.at(job);
    for (size_t i = 0; i < step; ++i) {
      if (std::find(plan.victims.begin(), plan.victims.end(), &steps[i]) == plan.victims.end()) {
        plan.victims.push_back(&steps[i]);
      }
    }
  }
}

bool Engine::ReservationYields(const JobRecord& holder, const JobRecord& job,
                               std::optional<QueueId> claimant) const {
  if (holder.key.priority < job.key.priority) return true;
  // Were the holder running, what it took would be borrowed if its queues hold their
  // guarantees already.
  return claimant && queues_.MayReclaimFrom(holder.queue, *claimant, ResourceVector());
}

void Engine::AwaitVictims(JobRecord& job, std::vector<NodeIndexId> nodes,
                          std::vector<ResourceVector> held, int64_t grace_us, std::string reason) {
  const TimestampUs now = clock_.NowUs();
  // Whole-node plans of other jobs on these nodes no longer hold: they are made again.
  std::vector<uint64_t> displaced;
  for (NodeIndexId n : nodes) {
    for (const Reservation* r : reservations_.On(n)) {
      if (r->whole_nodes() && r->job != job.id) displaced.push_back(r->job);
    }
  }
  for (uint64_t holder_id : displaced) {
    JobRecord& holder = jobs_.at(holder_id);
    if (!reservations_.Find(holder_id)) continue;  // listed twice.
    DropReservation(holder);
    holder.reason =
        "reservation given up: job " + std::to_string(job.id) + " preempts on its node(s)";
    Persist(holder, MakeUpdateEvent(holder, holder.reason));
  }
  const int min_tasks = MinTasksToPlace(job);
  RemovePending(job);
  job.awaiting_victims = true;
  job.awaited = ResourceCharge();
  job.awaited.resources = job.shape.RequestVector() * min_tasks;
  // Its GPUs will be on the models of the nodes where its victims free them.
  int64_t gpus_left = job.awaited.resources.gpu_milli();
  for (size_t i = 0; i < nodes.size() && gpus_left > 0; ++i) {
    const int64_t here = std::min(gpus_left, held[i].gpu_milli());
    job.awaited.gpus_by_model.Add(cluster_.node(nodes[i]).model(), here);
    gpus_left -= here;
  }
  incoming_[job.queue] += job.awaited;
  reservations_.Add({job.id, now + grace_us, std::move(nodes), std::move(held), job.shape, {}});
  job.reserved_start_us = now + grace_us;
  job.reason = std::move(reason);
  Persist(job, MakeUpdateEvent(job, job.reason));
  const uint64_t id = job.id;
  const TimestampUs start = job.reserved_start_us;
  // Victims that ignore their notice are killed after the grace period; allow for that.
  timers_.Schedule(
      start + 5'000'000, [this, id, start] { OnReservationDue(id, start); },
      [this, id, start] { return ReservationStillDue(id, start); });
}

void Engine::FinishWaitingForVictims(JobRecord& job) {
  if (!job.awaiting_victims) return;
  job.awaiting_victims = false;
  auto it = incoming_.find(job.queue);
  if (it != incoming_.end()) {
    it->second -= job.awaited;
    if (it->second.IsZero()) incoming_.erase(it);
  }
  job.awaited = ResourceCharge();
}

void Engine::ArmPreemptionRetry(TimestampUs at) {
  if (preemption_retry_at_ != 0 && preemption_retry_at_ <= at) return;
  preemption_retry_at_ = at;
  timers_.Schedule(
      at,
      [this, at] {
        if (preemption_retry_at_ != at) return;
        preemption_retry_at_ = 0;
        capacity_freed_ = true;  // blocked queues look again, and may preempt now.
        host_.RequestDecisions();
      },
      // Looking again decides something only for a job that waits.
      [this, at] { return preemption_retry_at_ == at && pending_jobs_ > 0; });
}

void Engine::Preempt(JobRecord& victim, const std::string& reason, bool count_as_preemption) {
  const v1::JobState from = victim.state;
  victim.preempting = true;
  if (count_as_preemption) {
    victim.preempted_at_us = clock_.NowUs();
    ++victim.preemptions;
  }
  victim.reason = reason;
  RemovePending(victim);
  SetState(victim, v1::PREEMPTING);
  Persist(victim, MakeEvent(victim, from, reason));
  for (PlacedTask& t : victim.tasks) {
    if (!t.exited) t.stopping = true;
  }
  StopTasks(victim);
  MaybeFinish(victim);
}

void Engine::Shrink(JobRecord& victim, const std::vector<const Victim*>& tasks,
                    const std::string& reason) {
  const int before = victim.LiveTasks();
  int stopped = 0;
  for (const Victim* v : tasks) {
    for (const VictimTask& vt : v->tasks) {
      PlacedTask* t = FindTask(victim, TaskRef{victim.id, victim.attempt, vt.index});
      if (!t || t->exited) continue;
      t->stopping = true;
      ++stopped;
      if (t->launched) {
        executor_->Stop(TaskRef{victim.id, victim.attempt, t->index}, victim.grace_ms);
      } else {
        ReleaseTask(victim, *t);
      }
    }
  }
  executor_->Resize(TaskRef{victim.id, victim.attempt, 0}, before - stopped);
  victim.reason =
      reason + ": " + std::to_string(before) + " -> " + std::to_string(before - stopped) + " tasks";
  Persist(victim, MakeUpdateEvent(victim, victim.reason));
}

void Engine::RequeuePreempted(JobRecord& job) {
  const v1::JobState from = job.state;
  elastic_jobs_.erase(job.id);
  const int64_t run_us = job.start_time_us > 0 ? clock_.NowUs() - job.start_time_us : 0;
  job.tasks.clear();
  job.next_task_index = 0;
  job.preempting = false;
  job.failing = false;
  job.start_time_us = 0;
  ++job.attempt;
  SetState(job, v1::PENDING);
  job.reason = "requeued after preemption (attempt " + std::to_string(job.attempt) + ")";
  // It keeps its priority and original submit time; its service band follows what it ran.
  RankByServiceOnRequeue(job, run_us);
  AddPending(job);
  Persist(job, MakeEvent(job, from, job.reason));
}

}  // namespace tessera
