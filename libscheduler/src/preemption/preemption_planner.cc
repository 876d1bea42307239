#include "preemption/preemption_planner.h"

#include <algorithm>

#include "placement/shadow_time.h"

namespace tessera {
namespace {

// Frees on `node` (a copy) what `victim` holds there.
void ReleaseOn(NodeState& node, const Victim& victim) {
  for (const VictimTask& t : victim.tasks) {
    if (t.allocation.node == node.id()) node.Release(t.allocation);
  }
}

void HoldOn(NodeState& node, const Victim& victim) {
  for (const VictimTask& t : victim.tasks) {
    if (t.allocation.node == node.id()) node.Apply(t.allocation);
  }
}

}  // namespace

std::optional<PreemptionPlanner::NodeOption> PreemptionPlanner::EvaluateNode(
    const NodeState& node, const TaskShape& shape, int wanted,
    std::vector<const Victim*> victims) const {
  std::sort(victims.begin(), victims.end(),
            [](const Victim* a, const Victim* b) { return a->cost < b->cost; });
  NodeState copy = node;
  NodeOption option;
  option.node = node.id();
  option.tasks = TasksThatFit(copy, shape);
  const int before = option.tasks;
  for (const Victim* v : victims) {
    if (option.tasks >= wanted) break;
    ReleaseOn(copy, *v);
    option.victims.push_back(v);
    option.tasks = TasksThatFit(copy, shape);
  }
  if (option.tasks <= before) return std::nullopt;  // stopping them would not help here.
  // Give back, most expensive first, every victim the job does not need.
  for (size_t i = option.victims.size(); i-- > 0;) {
    const Victim* v = option.victims[i];
    HoldOn(copy, *v);
    const int tasks = TasksThatFit(copy, shape);
    if (tasks >= std::min(wanted, option.tasks)) {
      option.victims.erase(option.victims.begin() + static_cast<std::ptrdiff_t>(i));
      option.tasks = tasks;
    } else {
      ReleaseOn(copy, *v);
    }
  }
  for (const Victim* v : option.victims) option.cost += v->cost;
  return option;
}

std::optional<PreemptionPlan> PreemptionPlanner::Plan(
    const Cluster& cluster, const TaskShape& shape, int min_tasks, bool same_node,
    const std::function<std::vector<const Victim*>(NodeIndexId)>& victims_on,
    const std::function<bool(const NodeState&)>& usable) {
  const size_t n = cluster.size();
  if (n == 0) return std::nullopt;
  const size_t budget = CandidateBudget(n);
  // On one node we want all the tasks the job may place there: its minimum.
  const int wanted = min_tasks;

  std::vector<NodeOption> options;
  size_t evaluated = 0;
  size_t i = 0;
  for (; i < n && evaluated < budget; ++i) {
    const NodeState& node = cluster.node(static_cast<NodeIndexId>((next_start_ + i) % n));
    if (!usable(node)) continue;
    // Every node looked at counts, victims or not, so the cost stays bounded when eligible
    // victims are rare.
    ++evaluated;
    std::vector<const Victim*> victims = victims_on(node.id());
    if (victims.empty()) {
      // Room that is free already counts toward a gang spread over nodes.
      if (!same_node && min_tasks > 1) {
        if (const int free_tasks = TasksThatFit(node, shape); free_tasks > 0) {
          options.push_back({node.id(), free_tasks, {}, {}});
        }
      }
      continue;
    }
    std::optional<NodeOption> option = EvaluateNode(node, shape, wanted, std::move(victims));
    if (option) options.push_back(std::move(*option));
  }
  next_start_ = (next_start_ + i) % n;
  if (options.empty()) return std::nullopt;

  PreemptionPlan plan;
  if (same_node || min_tasks == 1) {
    const NodeOption* best = nullptr;
    for (const NodeOption& o : options) {
      if (o.tasks < min_tasks) continue;
      if (!best || o.cost < best->cost) best = &o;
    }
    if (!best) return std::nullopt;
    plan.victims = best->victims;
    plan.nodes = {best->node};
    plan.cost = best->cost;
    return plan;
  }
  // A gang across nodes: cheapest per task first. A victim on several of the chosen nodes is
  // listed once.
  std::sort(options.begin(), options.end(), [](const NodeOption& a, const NodeOption& b) {
    if (a.cost.whole_jobs * b.tasks != b.cost.whole_jobs * a.tasks) {
      return a.cost.whole_jobs * b.tasks < b.cost.whole_jobs * a.tasks;
    }
    return a.cost.lost_gpu_us * b.tasks < b.cost.lost_gpu_us * a.tasks;
  });
  int covered = 0;
  for (const NodeOption& o : options) {
    plan.nodes.push_back(o.node);
    for (const Victim* v : o.victims) {
      if (std::find(plan.victims.begin(), plan.victims.end(), v) == plan.victims.end()) {
        plan.victims.push_back(v);
        plan.cost += v->cost;
      }
    }
    covered += o.tasks;
    if (covered >= min_tasks) return plan;
  }
  return std::nullopt;
}

}  // namespace tessera
