#include "engine/idle_gpu_watch.h"

namespace tessera {

IdleGpuRule ResolveIdleGpuRule(const QueueTree& queues, QueueId leaf, bool job_exempt) {
  IdleGpuRule rule;
  for (QueueId q = leaf; q != QueueTree::kRoot; q = queues.Parent(q)) {
    const v1::QueueSpec& spec = queues.Spec(q);
    if (!spec.has_idle_gpus()) continue;
    const v1::IdleGpuPolicy& p = spec.idle_gpus();
    rule.from = q;
    if (p.below_pct() <= 0) return rule;  // off for this subtree.
    if (job_exempt && p.allow_exemption()) return rule;
    rule.watched = true;
    rule.exemption_refused = job_exempt;
    rule.policy.below_pct = p.below_pct();
    rule.policy.idle_for_us = p.idle_for_s() * 1'000'000;
    rule.policy.reclaim = p.reclaim();
    rule.policy.warning_us = p.warning_s() * 1'000'000;
    return rule;
  }
  return rule;
}

IdleGpuWatch::Verdict IdleGpuWatch::Judge(JobIdle& state, const Policy& policy, TimestampUs time_us,
                                          const std::vector<GpuRef>& gpus) {
  Verdict verdict;
  if (gpus.empty()) return verdict;
  TimestampUs idle_since = 0;
  for (const GpuRef& g : gpus) {
    auto it = state.below_since.find(g);
    if (it == state.below_since.end()) return verdict;  // not every GPU is idle (or known).
    if (it->second > idle_since) idle_since = it->second;
  }
  verdict.idle_since = idle_since;
  verdict.gpus = static_cast<int>(gpus.size());
  if (!state.flagged) {
    if (time_us - idle_since < policy.idle_for_us) return verdict;
    state.flagged = true;
    state.flagged_at = time_us;
    ++flagged_;
    verdict.flagged = true;
    // Without a warning period a reclaiming policy makes it a victim at once.
    if (!policy.reclaim || policy.warning_us > 0) return verdict;
  } else if (!policy.reclaim || time_us - state.flagged_at < policy.warning_us) {
    return verdict;
  }
  state.reclaimable = true;
  ++reclaimable_;
  verdict.reclaimable = true;
  return verdict;
}

void IdleGpuWatch::ClearFlag(JobIdle& state) {
  if (state.flagged) --flagged_;
  if (state.reclaimable) --reclaimable_;
  state.flagged = false;
  state.reclaimable = false;
  state.flagged_at = 0;
}

void IdleGpuWatch::Forget(uint64_t job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  ClearFlag(it->second);
  jobs_.erase(it);
}

bool IdleGpuWatch::Flagged(uint64_t job) const {
  auto it = jobs_.find(job);
  return it != jobs_.end() && it->second.flagged;
}

bool IdleGpuWatch::Reclaimable(uint64_t job) const {
  auto it = jobs_.find(job);
  return it != jobs_.end() && it->second.reclaimable;
}

}  // namespace tessera
