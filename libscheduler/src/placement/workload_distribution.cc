#include "placement/workload_distribution.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace tessera {
namespace {

// What tells two expected shapes apart. Memory is left out, as in the FGD simulator, so shapes
// that differ only in memory pool their counts.
using ShapeKey = std::tuple<int64_t, int32_t, int32_t, ModelMask, int64_t, bool>;

ShapeKey KeyOf(const TaskShape& s) {
  const int32_t milli = s.gpu_count > 0 ? s.gpu_milli : 0;
  return {s.cpu_milli, milli, s.gpu_count, s.models, s.gpu_memory_mib, s.same_nvlink};
}

}  // namespace

WorkloadDistribution WorkloadDistribution::FromCounts(
    const std::vector<std::pair<TaskShape, double>>& counts, double coverage) {
  std::map<ShapeKey, std::pair<TaskShape, double>> merged;
  std::map<ShapeKey, double> memory_sum;  // count-weighted, for the mean memory of a shape.
  double total = 0;
  for (const auto& [shape, count] : counts) {
    if (count <= 0) continue;
    const ShapeKey key = KeyOf(shape);
    auto [it, inserted] = merged.try_emplace(key, shape, 0.0);
    it->second.second += count;
    memory_sum[key] += count * static_cast<double>(shape.memory_mib);
    total += count;
  }
  for (auto& [key, entry] : merged) {
    entry.first.memory_mib = std::llround(memory_sum[key] / entry.second);
  }
  WorkloadDistribution d;
  if (total <= 0) return d;

  std::vector<std::pair<ShapeKey, std::pair<TaskShape, double>>> ranked(merged.begin(),
                                                                        merged.end());
  // Most frequent first; among equal counts the larger key first (the simulator sorts by
  // count, then by cpu, share, GPU count, model, and reverses the whole order).
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (a.second.second != b.second.second) return a.second.second > b.second.second;
    return a.first > b.first;
  });

  const double wanted = std::clamp(coverage, 0.0, 1.0) * total;
  double kept = 0;
  for (const auto& [key, entry] : ranked) {
    if (kept >= wanted && !d.tasks_.empty()) break;
    d.tasks_.push_back({entry.first, entry.second});
    kept += entry.second;
  }
  for (TypicalTask& t : d.tasks_) t.weight /= kept;
  d.covered_ = kept / total;
  return d;
}

}  // namespace tessera
