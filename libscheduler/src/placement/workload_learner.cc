#include "placement/workload_learner.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace tessera {
namespace {

// Rescale all counts once a new task would weigh this much, far from double's range.
constexpr double kMaxUnit = 1e100;

// What tells two typical tasks apart (as WorkloadDistribution does).
using TypicalKey = std::tuple<int64_t, int32_t, int32_t, ModelMask, int64_t, bool>;

TypicalKey KeyOf(const TaskShape& s) {
  return {s.cpu_milli,  s.gpu_count > 0 ? s.gpu_milli : 0, s.gpu_count, s.models, s.gpu_memory_mib,
          s.same_nvlink};
}

}  // namespace

WorkloadLearner::WorkloadLearner(Options options) : options_(options) {
  if (options_.half_life_tasks > 0) growth_ = std::exp2(1.0 / options_.half_life_tasks);
  options_.rebuild_every = std::max<int64_t>(1, options_.rebuild_every);
}

std::optional<WorkloadDistribution> WorkloadLearner::Observe(const TaskShape& shape,
                                                             int64_t tasks) {
  if (tasks <= 0) return std::nullopt;
  auto [it, inserted] = counts_.try_emplace(KeyOf(shape));
  if (inserted) it->second.shape = shape;
  const double weight = static_cast<double>(tasks) * unit_;
  it->second.weight += weight;
  it->second.memory_weight += weight * static_cast<double>(shape.memory_mib);
  if (growth_ > 1) {
    unit_ *= std::pow(growth_, static_cast<double>(tasks));
    if (unit_ > kMaxUnit) {
      // Shapes not seen for many half-lives are forgotten, which bounds the map in a
      // long-running scheduler whose jobs keep asking for new shapes.
      std::erase_if(counts_,
                    [&](const auto& entry) { return entry.second.weight < 1e-12 * unit_; });
      for (auto& [k, c] : counts_) {
        c.weight /= unit_;
        c.memory_weight /= unit_;
      }
      unit_ = 1;
    }
  }

  const int64_t before = observations_;
  observations_ += tasks;
  if (observations_ < next_rebuild_) return std::nullopt;
  // Doubling while the counts are few, so that a fresh scheduler learns fast; then steady.
  next_rebuild_ = before < options_.rebuild_every ? std::max(observations_ + 1, 2 * observations_)
                                                  : observations_ + options_.rebuild_every;
  next_rebuild_ = std::min(next_rebuild_, observations_ + options_.rebuild_every);

  WorkloadDistribution next = Build();
  if (!Differs(next)) return std::nullopt;
  current_ = next;
  return next;
}

WorkloadDistribution WorkloadLearner::Build() const {
  std::vector<std::pair<TaskShape, double>> counts;
  counts.reserve(counts_.size());
  for (const auto& [key, c] : counts_) {
    TaskShape shape = c.shape;
    shape.memory_mib = std::llround(c.memory_weight / c.weight);
    counts.emplace_back(shape, c.weight);
  }
  return WorkloadDistribution::FromCounts(counts, options_.coverage);
}

bool WorkloadLearner::Differs(const WorkloadDistribution& next) const {
  if (current_.empty()) return !next.empty();
  std::map<TypicalKey, double> delta;
  for (const TypicalTask& t : current_.tasks()) delta[KeyOf(t.shape)] += t.weight;
  for (const TypicalTask& t : next.tasks()) delta[KeyOf(t.shape)] -= t.weight;
  double variation = 0;
  for (const auto& [key, d] : delta) variation += std::abs(d);
  return variation / 2 > options_.min_change;
}

}  // namespace tessera
