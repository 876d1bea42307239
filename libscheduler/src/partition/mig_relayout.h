// MIG re-layout: re-shaping the GPUs whose MIG layout the scheduler manages, for a job that waits
// for an instance no GPU offers free. Two moves, both planned with the layout planner
// (placement/mig_layout_planner.h):
//
//   - RelayoutIdleMig re-shapes the idle instances of managed GPUs (busy ones stay where they
//     are), applying each new layout to the cluster at once; it stops nobody.
//   - PlanMigDrain, when idle instances cannot be re-shaped into enough room, chooses the one
//     GPU where stopping the work on the instances a new layout would replace loses least. It
//     only plans: the caller decides who may be stopped (its `holder_of` says what each busy
//     instance's job would lose, or that it may not be drained), stops them, and re-shapes
//     once they are gone.
//
// Both look at a bounded number of GPUs (kGpusPlannedPerJob), so a job waiting for an instance
// costs a bounded time per decision. They read and write only the cluster they are given;
// telling the backend and recording the change is the caller's (LayoutApplied).
//
// Thread safety: as the cluster they are given (the decision strand).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/cluster.h"
#include "model/task_shape.h"
#include "placement/mig_layout_planner.h"
#include "tessera/v1/node.pb.h"

namespace tessera {

// At most this many managed MIG GPUs are planned for one job.
inline constexpr int kMigGpusPlannedPerJob = 8;
// A drain loses at most this much work (milli-GPU x microseconds): one GPU-hour.
inline constexpr int64_t kMaxMigDrainLostGpuUs = 3600LL * 1'000'000;

// A layout RelayoutIdleMig applied to `gpu` of `node`, as the backend is told it (`layout`)
// and as an event describes it (`described`: "3g.40gb@0 4g.40gb@4"); `offered` instances of
// the wanted kind it now offers.
struct MigLayoutChange {
  NodeState* node = nullptr;
  int gpu = 0;
  std::vector<v1::MigInstance> layout;
  std::string described;
  int offered = 0;
};
using LayoutApplied = std::function<void(const MigLayoutChange&)>;

// Re-shapes idle instances of managed MIG GPUs so that `min_tasks` tasks of `shape` find
// instances they accept, on nodes `usable` allows (and that fit the shape's host needs and
// model), the GPUs with the most idle compute first. Calls `applied` after each layout it sets.
// Returns true when some layout changed (a placement is worth a retry).
bool RelayoutIdleMig(Cluster& cluster, const TaskShape& shape, int min_tasks,
                     const std::function<bool(const NodeState&)>& usable,
                     const LayoutApplied& applied);

// The job on a busy instance and what draining it would lose (GPU-microseconds), or -1 when it
// may not be drained.
struct MigInstanceHolder {
  uint64_t job = 0;
  int64_t cost = -1;
};
using MigHolderOf = std::function<MigInstanceHolder(const NodeState&, int gpu, int instance)>;

struct MigDrainPlan {
  NodeIndexId node = 0;
  int gpu = 0;
  MigLayoutPlan plan;             // the layout once the victims are gone, and its cost.
  std::vector<uint64_t> victims;  // the jobs to stop, each once, by id.
};

// The GPU (of at most kMigGpusPlannedPerJob busy managed GPUs with a drainable instance) whose
// drain serves most of `min_tasks` tasks of `shape` at the least cost, or nullopt.
std::optional<MigDrainPlan> PlanMigDrain(const Cluster& cluster, const TaskShape& shape,
                                         int min_tasks, const MigHolderOf& holder_of);

}  // namespace tessera
