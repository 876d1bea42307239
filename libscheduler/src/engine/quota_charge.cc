#include "engine/quota_charge.h"

namespace tessera {

std::optional<QuotaViolation> KeepWithinQuota(const QueueTree& queues, QueueId leaf, Placer& placer,
                                              PlacementResult& result, int min_tasks) {
  ResourceVector charged;
  size_t kept = 0;
  std::optional<QuotaViolation> violation;
  for (; kept < result.tasks.size(); ++kept) {
    violation = queues.CheckQuota(leaf, charged + result.tasks[kept].Vector());
    if (violation) break;
    charged += result.tasks[kept].Vector();
  }
  if (kept == result.tasks.size()) return std::nullopt;
  const bool enough = kept >= static_cast<size_t>(min_tasks);
  for (size_t i = enough ? kept : 0; i < result.tasks.size(); ++i) {
    placer.Release(result.tasks[i]);
  }
  if (enough) {
    result.tasks.resize(kept);
    return std::nullopt;
  }
  result.tasks.clear();
  result.outcome = PlacementResult::Outcome::kRetryLater;
  return violation;
}

}  // namespace tessera
