// WorkloadDistribution: the task shapes a cluster expects and the share of tasks each makes up.
// Fragmentation-aware placement (fragmentation.h) measures a node's free GPUs against it: a GPU
// share is only useful if the tasks that will arrive can use it.
//
// It follows the "typical pods" of the FGD paper's simulator (hkust-adsl/
// kubernetes-scheduler-simulator, utils.GetTypicalPods, with the settings of its experiments:
// popularity threshold 95%, increase step 1, CPU-only pods included, no GPU weighting):
//   - shapes are told apart by cpu, GPU count, share per GPU and allowed GPU models; memory is
//     not part of the key (the simulator's PodResource has no memory), and a kept shape asks for
//     the mean memory of the tasks it stands for (which only measures that check memory use);
//   - shapes are ranked by count, most frequent first, and the smallest prefix of that ranking
//     whose count reaches `coverage` of all tasks is kept (ties in count go to the larger cpu,
//     then share, then GPU count, as the simulator's reverse sort does);
//   - the kept shapes' shares are renormalised to sum to 1.
//
// Immutable once built; safe to share between threads.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/task_shape.h"

namespace tessera {

struct TypicalTask {
  TaskShape shape;
  double weight = 0;  // share of the expected tasks; the weights of a distribution sum to 1.
};

class WorkloadDistribution {
 public:
  WorkloadDistribution() = default;

  // Merges equal shapes of `counts` (shape, how many tasks), keeps the most frequent ones that
  // together reach `coverage` (0..1] of the total count, and normalises their weights. Entries
  // with a non-positive count are ignored. The memory_mib of a kept shape is the count-weighted
  // mean of its entries'.
  static WorkloadDistribution FromCounts(const std::vector<std::pair<TaskShape, double>>& counts,
                                         double coverage);

  const std::vector<TypicalTask>& tasks() const { return tasks_; }
  bool empty() const { return tasks_.empty(); }
  // Share of the counted tasks that the kept shapes stand for (before renormalising).
  double covered() const { return covered_; }

 private:
  std::vector<TypicalTask> tasks_;
  double covered_ = 0;
};

}  // namespace tessera
