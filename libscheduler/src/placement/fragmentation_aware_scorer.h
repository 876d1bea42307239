// FragmentationAwareScorer: Tessera's fragmentation-aware placement (PlacementOptions::
// kFragmentationAware). It is FGD (fgd_scorer.h) with three changes, each of which lowered the
// GPUs left unallocated on the Alibaba GPU-sharing traces (docs/placement.md has the numbers):
//
//   1. The fragmentation measure sees the host. A task shape that the node lacks the memory for
//      cannot use its GPUs (FGD checks cpu only), and usable GPU capacity that the node's free
//      cpu and memory cannot feed counts as fragment at weight kHostLimitedWeight
//      (FragmentationMeasure::Options). In the replays most pods that fail near full load fail
//      for cpu or memory on the nodes whose GPUs are free, not for GPUs.
//   2. Changes in fragmentation smaller than kTolerance milli-GPU are treated as equal: the
//      score is the fall in F_n(M) in whole steps of kTolerance. FGD's sigmoid truncated to
//      0..100 does the same with steps of about 40 near zero; exact scores are much worse (every
//      tiny difference between two nodes decides, and tasks scatter), and coarser steps pack
//      more, which helps most traces as long as the step stays below what opening a whole node
//      costs the workload's large tasks.
//   3. Equal steps go to the node that comes first in a pseudo-random order of nodes fixed by
//      the node's name and a seed, i.e. first fit in that order: tasks fill a few nodes and
//      leave the others whole, and a random order mixes GPU models and node shapes (an order by
//      id or by free capacity fills one node shape after another and is far worse).
//
// The constants were chosen on the openb replays (bench/openb_bench.cc) once for all traces;
// none depends on a trace.
//
// It is the library's default strategy. Two options make it usable as one: with no
// expected_tasks it learns the workload from the submitted shapes (PlacementOptions::
// learn_workload, workload_learner.h), and it compares at most PlacementOptions::max_candidates
// fitting nodes per GPU model (default 4), the tightest in the node index, so a decision costs
// O(K log nodes) instead of O(nodes).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "placement/fgd_scorer.h"

namespace tessera {

class FragmentationAwareScorer final : public FgdScorer {
 public:
  // Weight of GPU capacity that the host's free cpu and memory cannot feed (0: FGD's measure).
  static constexpr double kHostLimitedWeight = 0.75;
  // Changes in F_n(M) below this many milli-GPU do not separate two candidates.
  static constexpr double kTolerance = 200;

  // Takes expected_tasks, expected_coverage, learn_workload, learn_half_life_tasks and
  // max_candidates from `options`. `order_seed` picks the node order that breaks ties; any
  // value works, and replays vary it the way the FGD experiments vary node names.
  explicit FragmentationAwareScorer(const PlacementOptions& options, uint64_t order_seed = 0);

  std::string_view name() const override { return "fragmentation-aware"; }
  IndexOrder order() const override { return IndexOrder::kGpuSparingFirst; }
  int candidates() const override { return candidates_; }
  // The tie order below, so that a bounded candidate list holds the nodes it prefers.
  uint32_t TieRank(const NodeState& node) const override { return OrderOf(node); }
  void ForgetNode(NodeIndexId id) override {
    if (id < order_.size()) order_[id] = {false, 0};
  }

 protected:
  int64_t Rank(const NodeState& node, double before, double after,
               const TaskAllocation& allocation) const override;

 private:
  // The node's place in the tie-breaking order (lower first), cached by node id.
  uint32_t OrderOf(const NodeState& node) const;

  uint64_t order_seed_;
  int candidates_;
  mutable std::vector<std::pair<bool, uint32_t>> order_;  // by node id: known, place.
};

}  // namespace tessera
