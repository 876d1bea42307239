// WorkloadLearner: the expected workload of fragmentation-aware placement, learned from the task
// shapes the scheduler is asked to run when none is configured (PlacementOptions::
// expected_tasks empty).
//
// Each observed task adds to its shape's count; older observations fade with a half-life of
// `half_life_tasks` tasks, so the distribution follows a workload whose mix drifts. The counts
// are turned into a WorkloadDistribution (WorkloadDistribution::FromCounts, same coverage as
// configured workloads) after 1, 2, 4, ... observations and then every `rebuild_every` of them,
// and the new distribution is offered only when it differs from the one in use: a shape kept or
// dropped, or weights that moved by more than `min_change` in total variation. Every offer makes
// the callers' cached per-node fragmentation stale, so offers are kept rare.
//
// Deterministic: the same observations in the same order give the same distributions.
// Not thread-safe; used from the decision thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

#include "placement/workload_distribution.h"

namespace tessera {

class WorkloadLearner {
 public:
  struct Options {
    double coverage = 0.95;       // as PlacementOptions::expected_coverage.
    double half_life_tasks = 0;   // <= 0: never forget.
    int64_t rebuild_every = 256;  // observations between rebuilds once warmed up.
    double min_change = 0.02;     // total variation below which a rebuild is not offered.
  };

  explicit WorkloadLearner(Options options);

  // Counts `tasks` tasks of `shape` (tasks <= 0 is ignored). Returns the new distribution when
  // this observation completed a rebuild that changed it; nullopt otherwise.
  std::optional<WorkloadDistribution> Observe(const TaskShape& shape, int64_t tasks);

  // The distribution last returned by Observe (empty before the first).
  const WorkloadDistribution& current() const { return current_; }
  int64_t observations() const { return observations_; }

 private:
  // The shape's fields that FromCounts tells apart; memory is averaged, as it does.
  using Key = std::tuple<int64_t, int32_t, int32_t, ModelMask, int64_t, bool>;
  struct Count {
    TaskShape shape;
    double weight = 0;         // scaled by the current unit; see unit_.
    double memory_weight = 0;  // sum of weight * memory_mib, for the mean memory.
  };

  WorkloadDistribution Build() const;
  bool Differs(const WorkloadDistribution& next) const;

  Options options_;
  double growth_ = 1;  // per task: 2^(1 / half_life).
  // Decay is applied by letting each new task weigh more (unit_ grows by growth_ per task)
  // instead of shrinking every old count; all counts are rescaled when unit_ grows large.
  double unit_ = 1;
  std::map<Key, Count> counts_;
  int64_t observations_ = 0;
  int64_t next_rebuild_ = 1;
  WorkloadDistribution current_;
};

}  // namespace tessera
