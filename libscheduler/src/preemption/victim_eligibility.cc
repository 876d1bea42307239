#include "preemption/victim_eligibility.h"

namespace tessera {

VictimVerdict VictimEligibility::Judge(const Preemptor& preemptor, const VictimFacts& victim,
                                       TimestampUs now_us) const {
  VictimVerdict verdict;
  if (victim.job == preemptor.job || !(victim.running || victim.starting) || victim.stopping ||
      !victim.preemptible) {
    return verdict;
  }
  static const GpuModelAmounts kNoGpus;
  const GpuModelAmounts& by_model = victim.gpus_by_model ? *victim.gpus_by_model : kNoGpus;
  bool claimed_models = true;
  for (const auto& [model, milli] : by_model.entries()) {
    if (((preemptor.claimed_models >> model) & 1u) == 0) claimed_models = false;
  }
  const bool by_reclaim =
      preemptor.claimant && claimed_models &&
      queues_.MayReclaimFrom(victim.queue, *preemptor.claimant, *victim.allocated, by_model);
  if (victim.elastic && victim.live_tasks > victim.gang_min &&
      victim.priority <= preemptor.priority && (!preemptor.reclaim_only || by_reclaim)) {
    verdict.extent = VictimVerdict::Extent::kShrink;
  } else {
    const bool by_priority =
        !preemptor.reclaim_only && victim.priority < preemptor.priority &&
        (victim.queue == preemptor.queue ||
         queues_.MayReclaimFrom(victim.queue, preemptor.queue, *victim.allocated, by_model));
    const bool by_service = !by_priority && !preemptor.reclaim_only &&
                            preemptor.service_band >= 0 && victim.queue == preemptor.queue &&
                            victim.priority <= preemptor.priority &&
                            victim.service_band > preemptor.service_band;
    const bool by_idle_gpus = !by_priority && !by_reclaim && !by_service &&
                              victim.idle_reclaimable && !preemptor.reclaim_only;
    if (!by_priority && !by_reclaim && !by_service && !by_idle_gpus) return verdict;
    verdict.extent = VictimVerdict::Extent::kWhole;
    verdict.by_priority = by_priority;
    verdict.by_idle_gpus = by_idle_gpus;
    verdict.by_service = by_service && !by_reclaim;
  }
  // A job is stopped only once it runs: a task being launched cannot be stopped cleanly.
  if (victim.starting) {
    verdict.once_running = true;
    return verdict;
  }
  // A shrink stops tasks like a preemption does: the same guards protect them.
  verdict.allowed_now = guard_.MayPreempt(now_us, victim.started_us, victim.preempted_us);
  if (!verdict.allowed_now) {
    verdict.allowed_at = guard_.AllowedAt(victim.started_us, victim.preempted_us);
  }
  return verdict;
}

}  // namespace tessera
