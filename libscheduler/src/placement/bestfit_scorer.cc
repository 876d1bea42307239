#include "placement/bestfit_scorer.h"

#include <algorithm>

namespace tessera {

void BestFitScorer::RefreshLargest() const {
  if (cluster_ == nullptr || cluster_->size() == nodes_seen_) return;
  nodes_seen_ = cluster_->size();
  for (const NodeState& node : cluster_->nodes()) {
    const ResourceVector cap = node.Capacity();
    max_cpu_milli_ = std::max(max_cpu_milli_, cap.cpu_milli());
    max_gpu_milli_ = std::max(max_gpu_milli_, cap.gpu_milli());
  }
}

int64_t BestFitScorer::Score(const NodeState& node, const TaskShape&,
                             const TaskAllocation& allocation) const {
  RefreshLargest();
  int64_t gpu_free = 0;
  for (const GpuSlot& g : node.gpus()) {
    if (g.healthy) gpu_free += g.free_milli;
  }
  const double cpu_left = static_cast<double>(node.cpu_free() - allocation.cpu_milli);
  const double gpu_left =
      static_cast<double>(gpu_free - int64_t{allocation.gpu_count()} * allocation.gpu_milli);
  const double left = 0.5 * cpu_left / static_cast<double>(max_cpu_milli_) +
                      0.5 * gpu_left / static_cast<double>(max_gpu_milli_);
  return static_cast<int64_t>((1.0 - left) * 100.0);
}

}  // namespace tessera
