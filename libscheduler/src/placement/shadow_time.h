// ShadowTime: when could a job that does not fit now start, and on which nodes, if running
// tasks end when their time limits say? The answer backs a reservation: those nodes are held
// for the job from then on, and other jobs may only use them if they end before it starts
// (backfill). The name follows Slurm's backfill ("shadow time").
//
// The simulation releases running tasks in order of their expected end on copies of the nodes
// they hold, until enough of the job's tasks fit. It reads the cluster and never changes it.
// Cost: O(N) for N nodes plus the running tasks that must end before the job fits, when they
// come ordered; done once per reservation, not per decision.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "model/cluster.h"
#include "model/task_shape.h"
#include "tessera/clock.h"

namespace tessera {

struct RunningTaskEnd {
  TaskAllocation allocation;
  TimestampUs expected_end_us = 0;
};

struct ShadowPlan {
  TimestampUs start_us = 0;        // when the job is expected to fit.
  std::vector<NodeIndexId> nodes;  // where; enough of them for its gang minimum.
  std::vector<int> tasks;          // parallel to nodes: how many of its tasks go there.
};

// How many tasks of `shape` fit on `node` as it is (node is not changed).
int TasksThatFit(const NodeState& node, const TaskShape& shape);

// Running tasks in order of expected end, one per call; nullopt when none is left. The plan
// stops asking once the job fits, so a caller that keeps its tasks ordered pays only for the
// ones that must end.
using NextRunningTask = std::function<std::optional<RunningTaskEnd>()>;

// The earliest expected start of `min_tasks` tasks of `shape` (all on one node when
// `same_node`), considering only nodes `usable` accepts. nullopt when even all listed tasks
// ending would not make room.
std::optional<ShadowPlan> PlanShadowStart(const Cluster& cluster, const TaskShape& shape,
                                          int min_tasks, bool same_node,
                                          const NextRunningTask& next_to_end,
                                          const std::function<bool(const NodeState&)>& usable,
                                          TimestampUs now_us);
// The same for tasks in any order (they are sorted first).
std::optional<ShadowPlan> PlanShadowStart(const Cluster& cluster, const TaskShape& shape,
                                          int min_tasks, bool same_node,
                                          std::vector<RunningTaskEnd> running,
                                          const std::function<bool(const NodeState&)>& usable,
                                          TimestampUs now_us);

}  // namespace tessera
