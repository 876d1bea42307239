#include "placement/placer.h"

#include <algorithm>
#include <limits>

namespace tessera {
namespace {

// A node's place in the random order of a seed: SplitMix64 of seed and id, a bijection of the
// id for a given seed, so no two nodes share a place.
uint64_t TieRank(uint64_t seed, NodeIndexId id) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t{id} + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Placer::Placer(Cluster& cluster, NodeIndex& index, std::unique_ptr<Scorer> scorer,
               std::vector<std::unique_ptr<NodeFilter>> filters)
    : cluster_(cluster), index_(index), scorer_(std::move(scorer)), filters_(std::move(filters)) {
  scorer_->Attach(cluster_);
  if (scorer_->order() == IndexOrder::kGpuSparingFirst) index_.KeepGpuSparingOrder();
}

void Placer::BreakTiesByRandomNodeOrder(uint64_t seed) { tie_order_seed_ = seed; }

void Placer::Apply(const TaskAllocation& allocation) {
  NodeState& node = cluster_.node(allocation.node);
  node.Apply(allocation);
  index_.Update(node, scorer_->TieRank(node));
}

void Placer::Release(const TaskAllocation& allocation) {
  NodeState& node = cluster_.node(allocation.node);
  node.Release(allocation);
  index_.Update(node, scorer_->TieRank(node));
}

void Placer::Refresh(NodeIndexId id) {
  const NodeState& node = cluster_.node(id);
  index_.Update(node, scorer_->TieRank(node));
}

void Placer::Forget(NodeIndexId id) {
  const NodeState& node = cluster_.node(id);
  index_.Update(node, scorer_->TieRank(node));  // absent: it leaves every order.
  scorer_->ForgetNode(id);
}

std::optional<ScoredAllocation> Placer::FitOnNode(const NodeState& node,
                                                  const TaskShape& shape) const {
  if (!Admits(shape, node) || !AdmitsBurst(node)) return std::nullopt;
  for (const auto& filter : filters_) {
    if (!filter->Accept(node, shape)) return std::nullopt;
  }
  return scorer_->Choose(node, shape);
}

bool Placer::Fits(const NodeState& node, const TaskShape& shape) const {
  if (!Admits(shape, node) || !AdmitsBurst(node)) return false;
  for (const auto& filter : filters_) {
    if (!filter->Accept(node, shape)) return false;
  }
  return node.Fits(shape);
}

const std::vector<NodeIndexId>* Placer::LabelledCandidates(const TaskShape& shape) const {
  if (shape.terms == nullptr) return nullptr;
  const std::vector<NodeIndexId>* narrowest = nullptr;
  for (const auto& [key, value] : shape.terms->required_pairs()) {
    const std::vector<NodeIndexId>& nodes = index_.WithLabel(key, value);
    if (narrowest == nullptr || nodes.size() < narrowest->size()) narrowest = &nodes;
  }
  if (narrowest == nullptr || narrowest->size() > static_cast<size_t>(kMaxVisitsPerTask)) {
    return nullptr;
  }
  return narrowest;
}

std::optional<TaskAllocation> Placer::FindOne(const TaskShape& shape,
                                              const std::string& preferred_rack) {
  std::optional<TaskAllocation> best;
  int64_t best_score = std::numeric_limits<int64_t>::min();
  uint64_t best_rank = 0;  // of `best` in the random node order, when ties go by it.
  bool best_in_rack = false;
  // `best` is on a node with a PREFER_NO_SCHEDULE taint the job does not tolerate: any node
  // without one beats it.
  bool best_repelled = false;
  const bool prefer_rack = !preferred_rack.empty();
  const int wanted = scorer_->candidates();
  const int lookahead = wanted > kMaxVisitsPerTask ? wanted : wanted + kRackLookahead;

  // Scores one node that passed the walk's cheap tests; true when it fits.
  auto score = [&](const NodeState& node) {
    std::optional<ScoredAllocation> a = FitOnNode(node, shape);
    if (!a) return false;
    const bool repelled = RepelledSoftly(shape, node);
    const uint64_t rank = tie_order_seed_ ? TieRank(*tie_order_seed_, node.id()) : 0;
    const bool in_rack = prefer_rack && node.rack() == preferred_rack;
    const bool better_rank =
        a->score > best_score || (a->score == best_score && tie_order_seed_ && rank < best_rank);
    const bool better_place = in_rack > best_in_rack || (in_rack == best_in_rack && better_rank);
    if (!best || (best_repelled && !repelled) || (repelled == best_repelled && better_place)) {
      best = a->allocation;
      best_score = a->score;
      best_rank = rank;
      best_in_rack = in_rack;
      best_repelled = repelled;
    }
    return true;
  };
  auto search = [&](int model) {
    int found = 0;
    int visits = 0;
    index_.Visit(shape, model, scorer_->order(), [&](NodeIndexId id) {
      const NodeState& node = cluster_.node(id);
      if (found >= wanted && node.rack() != preferred_rack &&
          (!best_repelled || RepelledSoftly(shape, node))) {
        // Past the scorer's candidates only a node in the rack (or, when the best repels the
        // job softly, one that does not) can win: this one only counts towards the lookahead,
        // without the cost of scoring it.
        if (Fits(node, shape)) ++found;
        return found < lookahead && ++visits < kMaxVisitsPerTask;
      }
      if (score(node)) ++found;
      const bool want_more = found < wanted ||
                             (prefer_rack && !best_in_rack && found < lookahead) ||
                             (best_repelled && found < lookahead);
      return want_more && ++visits < kMaxVisitsPerTask;
    });
  };

  if (const std::vector<NodeIndexId>* labelled = LabelledCandidates(shape)) {
    // A short list: score every node on it.
    for (NodeIndexId id : *labelled) score(cluster_.node(id));
  } else if (!shape.needs_gpu()) {
    search(-1);
  } else {
    const int models = cluster_.models().size();
    for (int m = 0; m < models; ++m) {
      if (shape.AllowsModel(m)) search(m);
    }
  }
  return best;
}

int Placer::PlaceOnNode(const NodeState& node, const TaskShape& shape, int max_tasks,
                        std::vector<TaskAllocation>* out) {
  int placed = 0;
  while (placed < max_tasks) {
    std::optional<ScoredAllocation> a = FitOnNode(node, shape);
    if (!a) break;
    Apply(a->allocation);
    out->push_back(a->allocation);
    ++placed;
  }
  return placed;
}

PlacementResult Placer::Place(const TaskShape& shape, int min_tasks, int max_tasks,
                              bool same_node) {
  PlacementResult result;
  if (same_node) {
    // Collect the scorer's best candidates first: placing changes the index being walked.
    std::vector<NodeIndexId> candidates;
    auto collect = [&](NodeIndexId id) {
      candidates.push_back(id);
      return candidates.size() < kMaxSameNodeCandidates;
    };
    if (const std::vector<NodeIndexId>* labelled = LabelledCandidates(shape)) {
      for (NodeIndexId id : *labelled) {
        if (!collect(id)) break;
      }
    } else if (!shape.needs_gpu()) {
      index_.Visit(shape, -1, scorer_->order(), collect);
    } else {
      for (int m = 0; m < cluster_.models().size(); ++m) {
        if (shape.AllowsModel(m)) index_.Visit(shape, m, scorer_->order(), collect);
      }
    }
    // Nodes that repel the job softly (PREFER_NO_SCHEDULE) are tried last.
    std::stable_partition(candidates.begin(), candidates.end(), [&](NodeIndexId id) {
      return !RepelledSoftly(shape, cluster_.node(id));
    });
    for (NodeIndexId id : candidates) {
      std::vector<TaskAllocation> tasks;
      if (PlaceOnNode(cluster_.node(id), shape, max_tasks, &tasks) >= min_tasks) {
        result.tasks = std::move(tasks);
        break;
      }
      for (const TaskAllocation& a : tasks) Release(a);
    }
  } else {
    std::string rack;  // of the first task: the others prefer it.
    while (static_cast<int>(result.tasks.size()) < max_tasks) {
      std::optional<TaskAllocation> a = FindOne(shape, rack);
      if (!a) break;
      Apply(*a);
      result.tasks.push_back(*a);
      if (result.tasks.size() == 1) rack = cluster_.node(a->node).rack();
    }
  }

  if (static_cast<int>(result.tasks.size()) >= min_tasks && !result.tasks.empty()) {
    result.outcome = PlacementResult::Outcome::kPlaced;
    return result;
  }
  const int got = static_cast<int>(result.tasks.size());
  for (const TaskAllocation& a : result.tasks) Release(a);
  result.tasks.clear();
  result.outcome = PlacementResult::Outcome::kRetryLater;
  result.reason = same_node
                      ? "waiting for one node with room for " + std::to_string(min_tasks) + " tasks"
                      : "waiting for capacity: " + std::to_string(got) + " of " +
                            std::to_string(min_tasks) + " tasks fit now";
  return result;
}

}  // namespace tessera
