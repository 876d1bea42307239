// MIG re-partitioning in the engine: the planning and the layouts are partition/mig_relayout's;
// the engine supplies who may be drained (the victim rule), tells the backend of each new
// layout, records it, and carries a drain out (notice, the freed room held for the job).
#include <algorithm>

#include "common/log.h"
#include "engine/engine.h"
#include "partition/mig_relayout.h"

namespace tessera {

bool Engine::RepartitionMigFor(const JobRecord& job, int min_tasks) {
  // A node whose free room is held for another job (a drain or preemption under way) is not
  // re-shaped for this one.
  auto usable = [&](const NodeState& node) { return reservation_filter_->Accept(node, job.shape); };
  auto applied = [&](const MigLayoutChange& change) {
    const NodeState& node = *change.node;
    executor_->ApplyMigLayout(node.name(), change.gpu, change.layout);
    PersistNodeEvent(node.name(),
                     "GPU " + std::to_string(change.gpu) + " re-partitioned to " +
                         change.described + " for job " + std::to_string(job.id),
                     v1::MIG_LAYOUT_CHANGED);
    placer_.Refresh(node.id());
    LogInfo(options_.log, "re-partitioned MIG GPU {} of {} for job {}: {} instance(s) now offered",
            change.gpu, node.name(), job.id, change.offered);
  };
  return RelayoutIdleMig(cluster_, job.shape, min_tasks, usable, applied);
}

bool Engine::DrainMigFor(JobRecord& job, int min_tasks) {
  if (!options_.preemption.enabled) return false;
  const TimestampUs now = clock_.NowUs();

  TimestampUs retry_at = 0;      // when a guard that refused a holder will allow it.
  bool victim_starting = false;  // a holder was refused only because it has not started yet.
  // Who may be drained is the victim rule's call, as for preemption; a drain reclaims no
  // guarantee, so it has no claimant.
  Preemptor preemptor{job.id, job.queue, job.key.priority, std::nullopt};
  preemptor.service_band = PreemptingBand(job);
  // The job on each busy instance, and what stopping it would lose.
  auto holder_of = [&](const NodeState& node, int gpu, int instance) {
    MigInstanceHolder h;
    if (node.id() >= tasks_by_node_.size()) return h;
    for (const auto& [id, index] : tasks_by_node_[node.id()]) {
      const JobRecord& v = jobs_.at(id);
      const PlacedTask* t = nullptr;
      for (const PlacedTask& p : v.tasks) {
        if (p.index == index && !p.exited) t = &p;
      }
      if (t == nullptr || t->allocation.node != node.id() ||
          t->allocation.mig_start != node.gpus()[gpu].mig[instance].start ||
          !((t->allocation.gpu_mask >> gpu) & 1u)) {
        continue;
      }
      h.job = id;
      // A drain stops whole jobs: an elastic job the rule would only shrink is left alone.
      const VictimVerdict verdict = victim_eligibility_.Judge(preemptor, VictimFactsOf(v), now);
      if (verdict.MayStopNow(VictimVerdict::Extent::kWhole)) {
        h.cost = LostGpuUs(v, now);
      } else if (verdict.extent == VictimVerdict::Extent::kWhole && verdict.once_running) {
        victim_starting = true;
      } else if (verdict.extent == VictimVerdict::Extent::kWhole) {
        if (retry_at == 0 || verdict.allowed_at < retry_at) retry_at = verdict.allowed_at;
      }
      return h;
    }
    return h;
  };

  std::optional<MigDrainPlan> best = PlanMigDrain(cluster_, job.shape, min_tasks, holder_of);
  // A guard said "not yet": look again when it allows, even if nothing else happens.
  if (!best) {
    if (retry_at > now) ArmPreemptionRetry(retry_at);
    if (victim_starting) preemption_retry_on_start_ = true;
    return false;
  }
  const int whole = static_cast<int>(best->victims.size());
  if (!preemption_guard_.WithinRate(now, whole)) {
    ArmPreemptionRetry(preemption_guard_.RateAllowsAt(now, whole));
    return false;
  }
  preemption_guard_.Record(now, whole);
  const std::string why = "preempted to re-partition MIG GPU " + std::to_string(best->gpu) +
                          " of node '" + cluster_.node(best->node).name() + "' for job " +
                          std::to_string(job.id);
  statistics_.LostWork(best->plan.drain_cost);
  int64_t grace_us = 0;
  ResourceVector freed;  // what the victims free on the drained GPU's node.
  for (uint64_t id : best->victims) {
    JobRecord& victim = jobs_.at(id);
    grace_us = std::max(grace_us, victim.grace_ms * 1000);
    for (const PlacedTask& t : victim.tasks) {
      if (!t.exited && t.allocation.node == best->node) freed += t.allocation.Vector();
    }
    statistics_.Preempted();
    Preempt(victim, why);
  }
  LogInfo(options_.log, "draining {} job(s) on MIG GPU {} of {} for job {}", whole, best->gpu,
          cluster_.node(best->node).name(), job.id);
  // The freed room is held for this job, so a job that fits it first cannot take it.
  AwaitVictims(job, {best->node}, {freed}, grace_us, "waiting for MIG instances being drained");
  return true;
}

}  // namespace tessera
