#include "placement/shadow_time.h"

#include <algorithm>
#include <unordered_map>

#include "model/placement_terms.h"

namespace tessera {

int TasksThatFit(const NodeState& node, const TaskShape& shape) {
  if (shape.needs_gpu() && !shape.AllowsModel(node.model())) return 0;
  if (!Admits(shape, node)) return 0;
  // Arithmetic for the common shapes; a copy of the node and real fits for NVLink wishes.
  int64_t host = INT64_MAX;
  if (shape.cpu_milli > 0) host = node.cpu_free() / shape.cpu_milli;
  if (shape.memory_mib > 0) host = std::min<int64_t>(host, node.memory_free() / shape.memory_mib);
  if (!shape.needs_gpu()) return static_cast<int>(std::min<int64_t>(host, 1 << 20));
  if (shape.whole_gpus() && !shape.same_nvlink && shape.gpu_memory_mib == 0) {
    return static_cast<int>(std::min<int64_t>(host, node.whole_free_gpus() / shape.gpu_count));
  }
  // On a full cluster most nodes fit no task at all: say so without copying the node.
  if (!node.Fits(shape)) return 0;
  NodeState copy = node;
  int fit = 0;
  while (fit < NodeState::kMaxGpus * 64) {
    std::optional<TaskAllocation> a = copy.Fit(shape, DevicePreference::kTightest);
    if (!a) break;
    copy.Apply(*a);
    ++fit;
  }
  return fit;
}

std::optional<ShadowPlan> PlanShadowStart(const Cluster& cluster, const TaskShape& shape,
                                          int min_tasks, bool same_node,
                                          std::vector<RunningTaskEnd> running,
                                          const std::function<bool(const NodeState&)>& usable,
                                          TimestampUs now_us) {
  std::sort(running.begin(), running.end(), [](const RunningTaskEnd& a, const RunningTaskEnd& b) {
    return a.expected_end_us < b.expected_end_us;
  });
  size_t next = 0;
  return PlanShadowStart(
      cluster, shape, min_tasks, same_node,
      [&]() -> std::optional<RunningTaskEnd> {
        if (next == running.size()) return std::nullopt;
        return running[next++];
      },
      usable, now_us);
}

std::optional<ShadowPlan> PlanShadowStart(const Cluster& cluster, const TaskShape& shape,
                                          int min_tasks, bool same_node,
                                          const NextRunningTask& next_to_end,
                                          const std::function<bool(const NodeState&)>& usable,
                                          TimestampUs now_us) {
  // Fit counts as things stand; copies are made only for nodes a release touches.
  std::unordered_map<NodeIndexId, int> fit;
  int total = 0;
  int best_single = 0;
  for (const NodeState& n : cluster.nodes()) {
    // Fit first: on a full cluster it is cheap and almost always zero, which makes asking
    // `usable` unnecessary.
    const int f = TasksThatFit(n, shape);
    if (f == 0 || !usable(n)) continue;
    fit[n.id()] = f;
    total += f;
    best_single = std::max(best_single, f);
  }
  auto enough = [&] { return same_node ? best_single >= min_tasks : total >= min_tasks; };

  ShadowPlan plan;
  plan.start_us = now_us;
  if (!enough()) {
    std::unordered_map<NodeIndexId, NodeState> copies;
    bool found = false;
    while (std::optional<RunningTaskEnd> next = next_to_end()) {
      const RunningTaskEnd& r = *next;
      const NodeState& original = cluster.node(r.allocation.node);
      if (!usable(original)) continue;
      auto it = copies.find(r.allocation.node);
      if (it == copies.end()) it = copies.emplace(r.allocation.node, original).first;
      it->second.Release(r.allocation);
      const int f = TasksThatFit(it->second, shape);
      int& old = fit[r.allocation.node];
      total += f - old;
      old = f;
      best_single = std::max(best_single, f);
      if (enough()) {
        plan.start_us = std::max(now_us, r.expected_end_us);
        found = true;
        break;
      }
    }
    if (!found) return std::nullopt;
  }

  // The nodes: the ones that fit the most tasks first, until the gang is covered.
  std::vector<std::pair<int, NodeIndexId>> ranked;
  for (const auto& [node, f] : fit) {
    if (f > 0) ranked.emplace_back(f, node);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  int covered = 0;
  for (const auto& [f, node] : ranked) {
    if (same_node && f < min_tasks) continue;
    plan.nodes.push_back(node);
    plan.tasks.push_back(std::min(f, min_tasks - covered));
    covered += f;
    if (same_node || covered >= min_tasks) break;
  }
  return plan;
}

}  // namespace tessera
