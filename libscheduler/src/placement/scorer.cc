#include "placement/scorer.h"

#include "placement/bestfit_scorer.h"
#include "placement/fgd_scorer.h"
#include "placement/fragmentation_aware_scorer.h"

namespace tessera {
namespace {

// Free capacity in the dimension the index orders this shape by, on a scale where larger
// means emptier.
int64_t FreeInKeyDimension(const NodeState& node, const TaskShape& shape) {
  if (!shape.needs_gpu()) return node.cpu_free();
  if (shape.whole_gpus()) return node.whole_free_gpus();
  return node.max_free_milli();
}

}  // namespace

std::optional<ScoredAllocation> Scorer::Choose(const NodeState& node,
                                               const TaskShape& shape) const {
  std::optional<TaskAllocation> a = node.Fit(shape, device_preference());
  if (!a) return std::nullopt;
  return ScoredAllocation{*a, Score(node, shape, *a)};
}

int64_t BinpackScorer::Score(const NodeState& node, const TaskShape& shape,
                             const TaskAllocation&) const {
  return -FreeInKeyDimension(node, shape);
}

int64_t SpreadScorer::Score(const NodeState& node, const TaskShape& shape,
                            const TaskAllocation&) const {
  return FreeInKeyDimension(node, shape);
}

std::unique_ptr<Scorer> MakeScorer(const PlacementOptions& options) {
  switch (options.strategy) {
    case PlacementOptions::Strategy::kSpread:
      return std::make_unique<SpreadScorer>();
    case PlacementOptions::Strategy::kBestFit:
      return std::make_unique<BestFitScorer>();
    case PlacementOptions::Strategy::kFgd:
      return std::make_unique<FgdScorer>(
          options.expected_tasks, options.expected_coverage, FragmentationMeasure::Options{},
          options.learn_workload ? std::optional(WorkloadLearner::Options{
                                       .coverage = options.expected_coverage,
                                       .half_life_tasks = options.learn_half_life_tasks})
                                 : std::nullopt);
    case PlacementOptions::Strategy::kFragmentationAware:
      return std::make_unique<FragmentationAwareScorer>(options);
    case PlacementOptions::Strategy::kBinpack:
      break;
  }
  return std::make_unique<BinpackScorer>();
}

}  // namespace tessera
