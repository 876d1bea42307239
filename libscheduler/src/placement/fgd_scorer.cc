#include "placement/fgd_scorer.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tessera {
namespace {

// ExpectedTask, in the units and model ids of TaskShape; nullopt when a model cannot be interned
// (such a task could never run, so it is no workload to keep room for).
std::optional<TaskShape> ShapeOf(const ExpectedTask& t, GpuModels& models) {
  TaskShape s;
  s.cpu_milli = t.cpu_milli;
  s.memory_mib = t.memory_mib;
  s.gpu_count = std::max(0, t.gpu_count);
  s.gpu_milli = s.gpu_count == 0 ? 0 : std::clamp(t.gpu_milli, 1, 1000);
  for (const std::string& name : t.gpu_models) {
    std::optional<int> id = models.Intern(name);
    if (!id) return std::nullopt;
    s.models |= ModelMask{1} << *id;
  }
  return s;
}

}  // namespace

FgdScorer::FgdScorer(std::vector<ExpectedTask> expected, double coverage,
                     FragmentationMeasure::Options measure,
                     std::optional<WorkloadLearner::Options> learn)
    : expected_(std::move(expected)),
      coverage_(coverage),
      measure_(WorkloadDistribution(), measure) {
  if (expected_.empty() && learn) {
    learn->coverage = coverage;
    learner_.emplace(*learn);
  }
}

FgdScorer::FgdScorer(WorkloadDistribution workload, FragmentationMeasure::Options measure)
    : measure_(std::move(workload), measure) {}

void FgdScorer::Attach(Cluster& cluster) {
  if (expected_.empty()) return;
  std::vector<std::pair<TaskShape, double>> counts;
  for (const ExpectedTask& t : expected_) {
    if (std::optional<TaskShape> s = ShapeOf(t, cluster.models())) counts.emplace_back(*s, t.count);
  }
  UseWorkload(WorkloadDistribution::FromCounts(counts, coverage_));
}

void FgdScorer::Observe(const TaskShape& shape, int64_t tasks) {
  if (!learner_) return;
  if (std::optional<WorkloadDistribution> next = learner_->Observe(shape, tasks)) {
    UseWorkload(std::move(*next));
  }
}

void FgdScorer::UseWorkload(WorkloadDistribution workload) {
  measure_ = FragmentationMeasure(std::move(workload), measure_.options());
  // Every cached F_n(M) and score was measured against the old workload.
  node_fragmentation_.clear();
  ++generation_;
}

double FgdScorer::NodeFragmentation(const NodeState& node) const {
  if (node.id() >= node_fragmentation_.size()) node_fragmentation_.resize(node.id() + 1);
  auto& [stamp, value] = node_fragmentation_[node.id()];
  if (stamp != node.stamp()) {
    stamp = node.stamp();
    value = measure_.Of(NodeFree::Of(node));
  }
  return value;
}

int64_t FgdScorer::Rank(const NodeState&, double before, double after,
                        const TaskAllocation&) const {
  // The simulator's score: the fall in fragmentation through a sigmoid scaled to 0..100 and
  // truncated (framework.MaxNodeScore = 100).
  const double x = (before - after) / 1000.0;
  return static_cast<int64_t>(100.0 / (1.0 + std::exp(-x)));
}

int64_t FgdScorer::Score(const NodeState& node, const TaskShape&,
                         const TaskAllocation& allocation) const {
  const double before = NodeFragmentation(node);
  return Rank(node, before, measure_.Of(NodeFree::Of(node).After(allocation)), allocation);
}

FgdScorer::ShapeKey FgdScorer::KeyOf(const TaskShape& s) const {
  return {s.cpu_milli,           measure_.options().check_memory ? s.memory_mib : 0,
          s.gpu_count,           s.gpu_milli,
          s.gpu_memory_mib,      s.models,
          s.same_nvlink,         s.form,
          s.mig_profile,         s.vgpu_family,
          s.vgpu_framebuffer_gib};
}

int FgdScorer::ShapeId(const TaskShape& s) const {
  const ShapeKey key = KeyOf(s);
  if (last_shape_ && last_shape_->first == key) return last_shape_->second;
  auto it = shape_ids_.find(key);
  if (it == shape_ids_.end()) {
    if (shape_ids_.size() >= kMaxCachedShapes) {
      shape_ids_.clear();
      ++generation_;
    }
    it = shape_ids_.emplace(key, static_cast<int>(shape_ids_.size())).first;
    if (choices_.size() < shape_ids_.size()) choices_.emplace_back();
  }
  last_shape_.emplace(key, it->second);
  return it->second;
}

std::optional<ScoredAllocation> FgdScorer::Choose(const NodeState& node,
                                                  const TaskShape& shape) const {
  if (!node.HostFits(shape)) return std::nullopt;
  if (candidates() != kAllCandidates) {
    // Only the choice for the shape last asked about (see the file comment).
    if (node.id() >= last_choice_.size()) last_choice_.resize(node.id() + 1);
    auto& [key, c] = last_choice_[node.id()];
    const ShapeKey wanted = KeyOf(shape);
    if (key != wanted) {
      key = wanted;
      c.stamp = 0;
    }
    return CachedChoice(c, node, shape);
  }
  std::vector<Cached>& by_node = choices_[ShapeId(shape)];
  if (node.id() >= by_node.size()) by_node.resize(node.id() + 1);
  return CachedChoice(by_node[node.id()], node, shape);
}

std::optional<ScoredAllocation> FgdScorer::CachedChoice(Cached& c, const NodeState& node,
                                                        const TaskShape& shape) const {
  if (c.stamp != node.stamp() || c.generation != generation_) {
    std::optional<ScoredAllocation> fresh = Evaluate(node, shape);
    c.stamp = node.stamp();
    c.generation = generation_;
    c.fits = fresh.has_value();
    if (fresh) {
      c.score = fresh->score;
      c.gpu_mask = fresh->allocation.gpu_mask;
    }
    return fresh;
  }
  if (!c.fits) return std::nullopt;
  std::optional<TaskAllocation> a = node.FitOn(shape, c.gpu_mask);
  if (!a) return std::nullopt;
  return ScoredAllocation{*a, c.score};
}

std::optional<ScoredAllocation> FgdScorer::Evaluate(const NodeState& node,
                                                    const TaskShape& shape) const {
  const double before = NodeFragmentation(node);
  const NodeFree now = NodeFree::Of(node);
  if (!shape.fractional_gpu()) {
    std::optional<TaskAllocation> a = node.Fit(shape, device_preference());
    if (!a) return std::nullopt;
    return ScoredAllocation{*a, Rank(node, before, measure_.Of(now.After(*a)), *a)};
  }
  // A share: try each GPU it fits on. GPUs with the same free share leave the same node state,
  // so only the lowest-numbered of each is measured.
  std::optional<ScoredAllocation> best;
  std::array<int32_t, NodeState::kMaxGpus> seen{};
  int num_seen = 0;
  for (int i = 0; i < static_cast<int>(node.gpus().size()); ++i) {
    const int32_t free = now.gpu_free[i];
    if (std::find(seen.begin(), seen.begin() + num_seen, free) != seen.begin() + num_seen) {
      continue;
    }
    std::optional<TaskAllocation> a = node.FitOn(shape, 1u << i);
    if (!a) continue;
    seen[num_seen++] = free;
    const int64_t score = Rank(node, before, measure_.Of(now.After(*a)), *a);
    if (!best || score > best->score) best = ScoredAllocation{*a, score};
  }
  return best;
}

}  // namespace tessera
