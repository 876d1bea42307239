#include "placement/fragmentation.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

namespace tessera {

NodeFree NodeFree::Of(const NodeState& node) {
  NodeFree f;
  f.model = node.model();
  f.cpu_milli = node.cpu_free();
  f.memory_mib = node.memory_free();
  f.gpus = static_cast<int>(node.gpus().size());
  for (int i = 0; i < f.gpus; ++i) {
    const GpuSlot& g = node.gpus()[i];
    f.gpu_free[i] = g.healthy ? g.free_milli : 0;
  }
  return f;
}

NodeFree NodeFree::After(const TaskAllocation& a) const {
  NodeFree f = *this;
  f.cpu_milli -= a.cpu_milli;
  f.memory_mib -= a.memory_mib;
  for (uint32_t m = a.gpu_mask; m != 0; m &= m - 1) f.gpu_free[__builtin_ctz(m)] -= a.gpu_milli;
  return f;
}

int64_t NodeFree::TotalGpuFree() const {
  int64_t total = 0;
  for (int i = 0; i < gpus; ++i) total += gpu_free[i];
  return total;
}

int64_t TaskFragmentation(const NodeFree& node, const TaskShape& task, bool check_memory) {
  const int64_t total = node.TotalGpuFree();
  // A task without GPUs, or one not allowed on this model, can use none of them.
  if (!task.needs_gpu() || !task.AllowsModel(node.model)) return total;
  const bool host_fits =
      node.cpu_milli >= task.cpu_milli && (!check_memory || node.memory_mib >= task.memory_mib);
  int usable = 0;
  int64_t too_small = 0;
  for (int i = 0; i < node.gpus; ++i) {
    if (node.gpu_free[i] >= task.gpu_milli) {
      ++usable;
    } else {
      too_small += node.gpu_free[i];
    }
  }
  if (!host_fits || usable < task.gpu_count) return total;
  return too_small;
}

FragmentationMeasure::FragmentationMeasure(WorkloadDistribution workload, Options options)
    : workload_(std::move(workload)), options_(options) {}

const FragmentationMeasure::ModelTable& FragmentationMeasure::TableFor(int model) const {
  if (model >= static_cast<int>(tables_.size())) tables_.resize(model + 1);
  ModelTable& t = tables_[model];
  if (t.built) return t;
  t.built = true;
  std::map<std::pair<int32_t, int32_t>, Group> groups;
  for (const TypicalTask& task : workload_.tasks()) {
    const TaskShape& s = task.shape;
    if (!s.needs_gpu() || !s.AllowsModel(model)) {
      t.unusable_weight += task.weight;
      continue;
    }
    Group& g = groups[{s.gpu_count, s.gpu_milli}];
    g.gpu_count = s.gpu_count;
    g.gpu_milli = s.gpu_milli;
    g.weight += task.weight;
    g.max_cpu_milli = std::max(g.max_cpu_milli, s.cpu_milli);
    g.max_memory_mib = std::max(g.max_memory_mib, s.memory_mib);
    g.members.push_back({s.cpu_milli, s.memory_mib, task.weight});
  }
  for (auto& [key, g] : groups) {
    std::sort(g.members.begin(), g.members.end(),
              [](const Member& a, const Member& b) { return a.cpu_milli < b.cpu_milli; });
    t.groups.push_back(std::move(g));
  }
  return t;
}

int64_t FragmentationMeasure::HostableTasks(const NodeFree& node, const Member& m) const {
  int64_t tasks = m.cpu_milli > 0 ? node.cpu_milli / m.cpu_milli : INT64_MAX;
  if (options_.check_memory && m.memory_mib > 0) {
    tasks = std::min(tasks, node.memory_mib / m.memory_mib);
  }
  return tasks;
}

bool FragmentationMeasure::HostHolds(const NodeFree& node, const Group& g, int64_t tasks) const {
  return node.cpu_milli >= tasks * g.max_cpu_milli &&
         (!options_.check_memory || node.memory_mib >= tasks * g.max_memory_mib);
}

double FragmentationMeasure::Of(const NodeFree& node) const {
  const int64_t total = node.TotalGpuFree();
  if (total == 0 || node.model < 0) return 0;
  const ModelTable& t = TableFor(node.model);
  const double all = static_cast<double>(total);

  std::array<int32_t, NodeState::kMaxGpus> sorted = node.gpu_free;
  std::sort(sorted.begin(), sorted.begin() + node.gpus, std::greater<>());

  double fragmented = t.unusable_weight * all;
  for (const Group& g : t.groups) {
    const bool gpus_fit = g.gpu_count <= node.gpus && sorted[g.gpu_count - 1] >= g.gpu_milli;
    if (!gpus_fit) {
      fragmented += g.weight * all;
      continue;
    }
    int64_t too_small = 0;
    for (int i = node.gpus - 1; i >= 0 && sorted[i] < g.gpu_milli; --i) too_small += sorted[i];
    if (options_.host_limited_weight == 0) {
      // FGD's measure: only whether one task fits on the host matters.
      if (HostHolds(node, g, 1)) {
        fragmented += g.weight * static_cast<double>(too_small);
        continue;
      }
      double host_fits = 0;
      for (const Member& m : g.members) {
        if (m.cpu_milli > node.cpu_milli) break;
        if (!options_.check_memory || m.memory_mib <= node.memory_mib) host_fits += m.weight;
      }
      fragmented += host_fits * static_cast<double>(too_small) + (g.weight - host_fits) * all;
      continue;
    }
    const double usable = static_cast<double>(total - too_small);
    const int64_t per_task_milli = int64_t{g.gpu_count} * g.gpu_milli;
    const double per_task = static_cast<double>(per_task_milli);
    // Tasks that would use all the usable capacity: a host that can feed that many starves
    // nothing, which a multiplication shows without HostableTasks' divisions. A shape that asks
    // for no GPU capacity (a time slice or MPS share without a fraction) uses none up, so one
    // task the host can feed is enough.
    const int64_t enough =
        per_task_milli == 0 ? 1 : (total - too_small + per_task_milli - 1) / per_task_milli;
    if (HostHolds(node, g, enough)) {
      // Most nodes that are not nearly full: the host feeds every member's tasks.
      fragmented += g.weight * static_cast<double>(too_small);
      continue;
    }
    for (const Member& m : g.members) {
      if (node.cpu_milli >= enough * m.cpu_milli &&
          (!options_.check_memory || node.memory_mib >= enough * m.memory_mib)) {
        fragmented += m.weight * static_cast<double>(too_small);
        continue;
      }
      const int64_t hostable = HostableTasks(node, m);
      if (hostable == 0) {
        fragmented += m.weight * all;
        continue;
      }
      const double fed = hostable == INT64_MAX ? usable : static_cast<double>(hostable) * per_task;
      const double starved = std::max(0.0, usable - fed);
      fragmented +=
          m.weight * (static_cast<double>(too_small) + options_.host_limited_weight * starved);
    }
  }
  return fragmented;
}

}  // namespace tessera
