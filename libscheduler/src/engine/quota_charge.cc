#include "engine/quota_charge.h"

namespace tessera {

ResourceCharge ChargeOf(const Cluster& cluster, const TaskAllocation& allocation) {
  ResourceCharge charge;
  charge.resources = allocation.Vector();
  charge.gpus_by_model.Add(cluster.node(allocation.node).model(), charge.resources.gpu_milli());
  return charge;
}

ModelsInQuota ModelsWithinQuota(const QueueTree& queues, const GpuModels& models, QueueId leaf,
                                const TaskShape& shape, int tasks) {
  ModelsInQuota out;
  if (!shape.needs_gpu() || !queues.HasModelLimits(leaf)) return out;
  const int64_t gpu_milli = shape.RequestVector().gpu_milli() * tasks;
  bool all = true;
  for (int m = 0; m < models.size(); ++m) {
    if (!shape.AllowsModel(m)) continue;
    if (std::optional<QuotaViolation> v = queues.CheckModelQuota(leaf, m, gpu_milli)) {
      if (!out.refusal) out.refusal = v;
      all = false;
    } else {
      out.models |= ModelMask{1} << m;
    }
  }
  out.narrowed = !all;
  return out;
}

std::optional<QuotaViolation> KeepWithinQuota(const QueueTree& queues, const Cluster& cluster,
                                              QueueId leaf, Placer& placer, PlacementResult& result,
                                              int min_tasks) {
  const bool by_model = queues.HasModelLimits(leaf);
  ResourceVector charged;
  GpuModelAmounts charged_by_model;  // only with limits per model.
  size_t kept = 0;
  std::optional<QuotaViolation> violation;
  for (; kept < result.tasks.size(); ++kept) {
    const ResourceVector task = result.tasks[kept].Vector();
    const int model = cluster.node(result.tasks[kept].node).model();
    violation = queues.CheckQuota(leaf, charged + task);
    if (!violation && by_model && task.gpu_milli() > 0) {
      violation =
          queues.CheckModelQuota(leaf, model, charged_by_model.Get(model) + task.gpu_milli());
    }
    if (violation) break;
    charged += task;
    if (by_model) charged_by_model.Add(model, task.gpu_milli());
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
