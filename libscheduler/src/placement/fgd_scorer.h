// FgdScorer: Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation", ATC'23).
// A task goes to the node, and the GPU inside it, whose use grows the node's expected
// fragmentation F_n(M) (fragmentation.h) the least, M being the expected workload.
//
// The score is the simulator's (hkust-adsl/kubernetes-scheduler-simulator, plugin/fgd_score.go),
// so that replays can be checked against the published results:
//
//   score = int(100 * sigmoid((F_n(M) before - F_n(M) after) / 1000))
//
// The truncation to an integer makes nodes whose changes differ by less than about 40 milli-GPU
// tie, and kube-scheduler then picks one of them at random (Placer::BreakTiesRandomly). For a
// share of one GPU every GPU of the node that fits is tried and the lowest-numbered one with the
// best score wins; whole GPUs are all alike to F, so they are the lowest-numbered free ones of
// the tightest NVLink domain (NodeState::Fit). CPU-only tasks are scored the same way: they
// take cpu that GPU tasks may need. As in the simulator, only cpu is checked (check_memory off).
//
// Every fitting node is compared (up to Placer::kMaxVisitsPerTask per GPU model), so a decision
// costs O(nodes) cached lookups: F_n(M) is cached per node and the score of each (node, task
// shape) pair is cached until the node changes (NodeState::stamp), which a replay of one task
// after another hits almost always; the choices of at most kMaxCachedShapes shapes are kept. A
// subclass that compares only a few candidates per task (candidates() bounded) keeps only one
// choice per node, for the shape it was last asked about: such a scorer meets a node again with
// another shape too often for per-shape vectors to pay for their memory traffic (in decide 30 %
// of their lookups hit, each a cache miss into megabytes of choices), while the later tasks of a
// gang, and a job retried, ask again about the same candidates with the same shape.
// With no expected workload given, it can be learned from Observe (workload_learner.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "placement/fragmentation.h"
#include "placement/scorer.h"
#include "placement/workload_learner.h"
#include "tessera/options.h"

namespace tessera {

class FgdScorer : public Scorer {
 public:
  // `expected` is turned into a WorkloadDistribution (keeping `coverage` of it) over the
  // cluster's model ids in Attach. `measure` is FGD's own unless a subclass asks otherwise.
  // When `expected` is empty and `learn` is set, the workload is learned from the shapes passed
  // to Observe (workload_learner.h) instead.
  FgdScorer(std::vector<ExpectedTask> expected, double coverage,
            FragmentationMeasure::Options measure = {},
            std::optional<WorkloadLearner::Options> learn = std::nullopt);
  // A workload already built over the cluster's model ids.
  explicit FgdScorer(WorkloadDistribution workload, FragmentationMeasure::Options measure = {});

  std::string_view name() const override { return "fgd"; }
  IndexOrder order() const override { return IndexOrder::kTightestFirst; }
  DevicePreference device_preference() const override { return DevicePreference::kTightest; }
  int candidates() const override { return kAllCandidates; }
  void Attach(Cluster& cluster) override;
  // Counts the shape when learning; a changed distribution drops every cached F and score.
  void Observe(const TaskShape& shape, int64_t tasks) override;
  int64_t Score(const NodeState& node, const TaskShape& shape,
                const TaskAllocation& allocation) const override;
  std::optional<ScoredAllocation> Choose(const NodeState& node,
                                         const TaskShape& shape) const override;

  const FragmentationMeasure& measure() const { return measure_; }
  // F_n(M) of a node as it is now (cached by stamp).
  double NodeFragmentation(const NodeState& node) const;

 protected:
  // How a candidate is ranked: from the node, its fragmentation before and after the
  // allocation, and the allocation. Higher is better. FGD's own: the truncated sigmoid above.
  virtual int64_t Rank(const NodeState& node, double before, double after,
                       const TaskAllocation& allocation) const;

 private:
  struct Cached {
    uint64_t stamp = 0;  // 0: nothing cached (stamps start at 1).
    int64_t score = 0;
    uint32_t generation = 0;  // of the shape ids; an entry of an older one is stale.
    uint32_t gpu_mask = 0;
    bool fits = false;
  };
  // Fields of a shape that the choice depends on; memory only through the filters. The form of
  // share and the exact MIG profile or vGPU type are part of it: a time slice and a vGPU of the
  // same sizes fit on different GPUs.
  using ShapeKey = std::tuple<int64_t, int64_t, int32_t, int32_t, int64_t, ModelMask, bool, GpuForm,
                              std::string, std::string, int32_t>;
  // Shapes whose choices are cached at once (each a vector over the nodes, 32 bytes a node).
  // Past it every id is given out anew and the vectors are reused, so a workload of ever new
  // shapes (every job its own memory size) neither grows nor reallocates them.
  static constexpr size_t kMaxCachedShapes = 128;

  ShapeKey KeyOf(const TaskShape& shape) const;
  int ShapeId(const TaskShape& shape) const;
  // The cached choice `c` of `shape` on `node` if it is current, else a fresh one, cached.
  std::optional<ScoredAllocation> CachedChoice(Cached& c, const NodeState& node,
                                               const TaskShape& shape) const;
  void UseWorkload(WorkloadDistribution workload);
  std::optional<ScoredAllocation> Evaluate(const NodeState& node, const TaskShape& shape) const;

  std::vector<ExpectedTask> expected_;
  double coverage_ = 1;
  FragmentationMeasure measure_;
  std::optional<WorkloadLearner> learner_;

  mutable std::vector<std::pair<uint64_t, double>> node_fragmentation_;  // by node: stamp, F.
  mutable std::map<ShapeKey, int> shape_ids_;
  mutable std::optional<std::pair<ShapeKey, int>> last_shape_;
  mutable std::vector<std::vector<Cached>> choices_;  // by shape id, then node id.
  mutable uint32_t generation_ = 1;                   // of shape_ids_.
  // With bounded candidates: by node id, the shape last asked about and its choice.
  mutable std::vector<std::pair<ShapeKey, Cached>> last_choice_;
};

}  // namespace tessera
