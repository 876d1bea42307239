// BestFitScorer: the node left with the least free capacity after the task, cpu and GPU weighed
// equally. It is the BestFit baseline of the FGD paper, kept as its simulator scores it
// (hkust-adsl/kubernetes-scheduler-simulator, plugin/best_fit_score.go), so that replays can be
// checked against the published numbers:
//
//   score = 100 * (1 - (0.5 * (free_cpu - cpu) / max_cpu + 0.5 * (free_gpu - gpu) / max_gpu)),
//
// truncated to an integer, where free_gpu is the node's total free milli-GPU, gpu the task's
// total, and max_cpu / max_gpu the capacity of the cluster's largest node (the simulator's
// constants, 128 cores and 8 GPUs, are exactly openb's largest node). The simulator then
// rescales the scores of a decision to 0..100, which keeps their order and ties since they
// already span at most 100, so that is not repeated here. Memory plays no part.
//
// GPUs inside the node: the fullest GPU that fits a share, the lowest-numbered free GPUs for
// whole GPUs, as the simulator's "best" GPU selection does (NodeState::Fit, kTightest). Ties
// between nodes are frequent (one point is 160 milli-GPU or 2.56 cores); the simulator breaks
// them by a random node order fixed per run (Placer::BreakTiesByRandomNodeOrder).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "placement/scorer.h"

namespace tessera {

class BestFitScorer final : public Scorer {
 public:
  std::string_view name() const override { return "bestfit"; }
  IndexOrder order() const override { return IndexOrder::kTightestFirst; }
  DevicePreference device_preference() const override { return DevicePreference::kTightest; }
  int candidates() const override { return kAllCandidates; }
  void Attach(Cluster& cluster) override { cluster_ = &cluster; }
  int64_t Score(const NodeState& node, const TaskShape& shape,
                const TaskAllocation& allocation) const override;

 private:
  // Finds the largest node again when nodes were added since the last look.
  void RefreshLargest() const;

  const Cluster* cluster_ = nullptr;
  mutable size_t nodes_seen_ = 0;
  mutable int64_t max_cpu_milli_ = 1;
  mutable int64_t max_gpu_milli_ = 1;
};

}  // namespace tessera
