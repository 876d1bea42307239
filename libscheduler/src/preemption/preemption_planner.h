// PreemptionPlanner: which running work to stop so that a job that does not fit can run,
// losing the least.
//
// Like kube-scheduler's preemption it looks at a bounded number of candidate nodes (at least
// kMinCandidateNodes, or kCandidateNodePercent of them, with or without victims), starting
// where the last search stopped so that no node is always first. On each node it stops victims
// cheapest first until as many of the job's tasks fit as the node can take, and then gives back any
// victim that turned out not to be needed. A job whose tasks fit on one node takes the cheapest
// node; a gang across nodes takes nodes in order of cost per task until its minimum is covered.
//
// The result is a plan; the engine gives notice, waits out grace periods and requeues.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "model/cluster.h"
#include "model/task_shape.h"
#include "preemption/victim.h"

namespace tessera {

struct PreemptionPlan {
  std::vector<const Victim*> victims;
  std::vector<NodeIndexId> nodes;  // where the job fits once the victims are gone.
  VictimCost cost;
};

class PreemptionPlanner {
 public:
  static constexpr size_t kMinCandidateNodes = 100;
  static constexpr size_t kCandidateNodePercent = 10;
  // How many nodes one plan looks at in a cluster of `nodes`.
  static size_t CandidateBudget(size_t nodes) {
    return nodes * kCandidateNodePercent / 100 > kMinCandidateNodes
               ? nodes * kCandidateNodePercent / 100
               : kMinCandidateNodes;
  }

  // `victims_on(node)` lists eligible victims holding resources on `node`; `usable(node)`
  // says whether the job may be placed there at all.
  std::optional<PreemptionPlan> Plan(
      const Cluster& cluster, const TaskShape& shape, int min_tasks, bool same_node,
      const std::function<std::vector<const Victim*>(NodeIndexId)>& victims_on,
      const std::function<bool(const NodeState&)>& usable);

 private:
  struct NodeOption {
    NodeIndexId node = 0;
    int tasks = 0;  // of the job that fit once these victims are gone.
    std::vector<const Victim*> victims;
    VictimCost cost;
  };
  // The cheapest victims on `node` that let `wanted` tasks fit (or as many as possible).
  std::optional<NodeOption> EvaluateNode(const NodeState& node, const TaskShape& shape, int wanted,
                                         std::vector<const Victim*> victims) const;

  size_t next_start_ = 0;
};

}  // namespace tessera
