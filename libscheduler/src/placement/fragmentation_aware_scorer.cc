#include "placement/fragmentation_aware_scorer.h"

#include <cmath>
#include <utility>

namespace tessera {
namespace {

// SplitMix64's finaliser: a fixed bijection that scatters similar inputs.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// FNV-1a: the node's name, so that its place in the order survives restarts and does not depend
// on the order in which nodes joined.
uint64_t HashName(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

std::optional<WorkloadLearner::Options> LearnOptions(const PlacementOptions& options) {
  if (!options.learn_workload) return std::nullopt;
  return WorkloadLearner::Options{.coverage = options.expected_coverage,
                                  .half_life_tasks = options.learn_half_life_tasks};
}

}  // namespace

FragmentationAwareScorer::FragmentationAwareScorer(const PlacementOptions& options,
                                                   uint64_t order_seed)
    : FgdScorer(options.expected_tasks, options.expected_coverage,
                FragmentationMeasure::Options{.check_memory = true,
                                              .host_limited_weight = kHostLimitedWeight},
                LearnOptions(options)),
      order_seed_(order_seed),
      candidates_(options.max_candidates > 0 ? options.max_candidates : kAllCandidates) {}

uint32_t FragmentationAwareScorer::OrderOf(const NodeState& node) const {
  if (node.id() >= order_.size()) order_.resize(node.id() + 1);
  auto& [known, place] = order_[node.id()];
  if (!known) {
    place = static_cast<uint32_t>(Mix(HashName(node.name()) ^ Mix(order_seed_)) >> 32);
    known = true;
  }
  return place;
}

int64_t FragmentationAwareScorer::Rank(const NodeState& node, double before, double after,
                                       const TaskAllocation&) const {
  // Whole steps of the fall in fragmentation first, then the earlier node in the order. A step
  // fits in the high half of the score: |F| stays below the node's free milli-GPU times (1 +
  // kHostLimitedWeight), far below 2^31 steps.
  const auto steps = static_cast<int64_t>(std::floor((before - after) / kTolerance));
  return steps * (int64_t{1} << 32) + (int64_t{0xFFFFFFFF} - OrderOf(node));
}

}  // namespace tessera
