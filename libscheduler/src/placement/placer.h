// Placer: finds nodes and GPUs for the tasks of one job.
//
// Candidates come from the NodeIndex in the scorer's order, pass every filter, get devices
// chosen by the scorer (Scorer::Choose), and the scorer picks among the first few, or among all
// of them when it asks to. Equal scores go to the candidate met first in index order, or, once
// BreakTiesByRandomNodeOrder is called, to the first in a random order of nodes fixed by a seed.
// A job's tasks are placed one after another, the later ones preferring the rack of the first
// (node label "rack"): a fitting node in that rack beats any node outside it, however they
// score, so a gang's tasks talk over the rack's switch. To find one, the walk goes up to
// kRackLookahead fitting nodes past the scorer's candidates, scoring only those in the rack.
// Only nodes that admit the job are tried (model/placement_terms.h; checked before the filters
// rather than as one, which would cost a virtual call per candidate). A node with a
// PREFER_NO_SCHEDULE taint the job does not tolerate loses to any other fitting node met in that
// walk, rack or not. A job whose selector names a label few nodes have (at most
// kMaxVisitsPerTask) scores every node with that label instead of walking the index. If
// fewer than the gang minimum fit, every tentative allocation is undone, so a gang never holds
// part of the cluster while it waits (no partial holds, no deadlock).
//
// The outcome is a value, not an error: placed, or retry later with the reason.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/cluster.h"
#include "model/placement_terms.h"
#include "placement/node_filter.h"
#include "placement/node_index.h"
#include "placement/scorer.h"

namespace tessera {

struct PlacementResult {
  enum class Outcome { kPlaced, kRetryLater };
  Outcome outcome = Outcome::kRetryLater;
  std::vector<TaskAllocation> tasks;  // applied to the cluster when placed.
  std::string reason;                 // why not, when retrying later.

  bool placed() const { return outcome == Outcome::kPlaced; }
};

class Placer {
 public:
  // A walk of the index stops after this many candidates, bounding the cost of one decision when
  // many nodes pass the index but fail a filter; the job is then retried later.
  static constexpr int kMaxVisitsPerTask = 2048;
  // Nodes tried for a job whose tasks must share one node.
  static constexpr size_t kMaxSameNodeCandidates = 256;
  // Extra fitting candidates looked at, beyond what the scorer wants, to find one in the rack
  // a job's earlier tasks went to.
  static constexpr int kRackLookahead = 64;

  Placer(Cluster& cluster, NodeIndex& index, std::unique_ptr<Scorer> scorer,
         std::vector<std::unique_ptr<NodeFilter>> filters = DefaultFilters());

  // Places at least `min_tasks` and at most `max_tasks` tasks of `shape`, all on one node when
  // `same_node`. On success the allocations are applied to the cluster and the index.
  PlacementResult Place(const TaskShape& shape, int min_tasks, int max_tasks, bool same_node);

  // Which burst nodes (NodeState::burst) the job about to be placed may use: any (its queue is
  // within its burst budget), and of those the spot ones only if it may run on spot. Private
  // nodes take every job. Holds until the next call.
  void SetBurstAccess(bool burst, bool spot) {
    burst_allowed_ = burst;
    spot_allowed_ = spot;
  }

  // Applies or releases one allocation, keeping the index current.
  void Apply(const TaskAllocation& allocation);
  void Release(const TaskAllocation& allocation);

  // Tells the scorer that `tasks` tasks of `shape` were submitted (Scorer::Observe).
  void Observe(const TaskShape& shape, int64_t tasks) { scorer_->Observe(shape, tasks); }

  // Re-indexes a node after a change outside the placer (cordon, health, new node).
  void Refresh(NodeIndexId node);
  // Takes a removed node out of the index and out of the scorer's per-node memory, so that a
  // node added later in its slot starts afresh.
  void Forget(NodeIndexId node);

  // From now on, of equally scored candidates the one first in a random order of all nodes wins,
  // the order being fixed by `seed`. The FGD paper's simulator breaks ties so (its
  // kube-scheduler picks the smallest node name, and node names start with a random
  // permutation), and replays that compare with it need the same: a fixed order packs tied
  // tasks onto the same nodes, where a fresh random pick per task would spread them.
  void BreakTiesByRandomNodeOrder(uint64_t seed);

  const Scorer& scorer() const { return *scorer_; }

 private:
  // The best node for one task, or nullopt; a node in `preferred_rack` (unless empty) first.
  std::optional<TaskAllocation> FindOne(const TaskShape& shape, const std::string& preferred_rack);
  // For a job whose selector only a few nodes match: the nodes with its rarest required label,
  // when there are at most kMaxVisitsPerTask of them; else nullptr (walk the index).
  const std::vector<NodeIndexId>* LabelledCandidates(const TaskShape& shape) const;
  std::optional<ScoredAllocation> FitOnNode(const NodeState& node, const TaskShape& shape) const;
  // Whether one task of `shape` fits on `node` (filters and devices), without scoring it.
  bool Fits(const NodeState& node, const TaskShape& shape) const;
  int PlaceOnNode(const NodeState& node, const TaskShape& shape, int max_tasks,
                  std::vector<TaskAllocation>* out);

  Cluster& cluster_;
  NodeIndex& index_;
  std::unique_ptr<Scorer> scorer_;
  std::vector<std::unique_ptr<NodeFilter>> filters_;
  std::optional<uint64_t> tie_order_seed_;
  bool burst_allowed_ = true;
  bool spot_allowed_ = true;
  bool AdmitsBurst(const NodeState& node) const {
    switch (node.burst()) {
      case BurstMarket::kNone:
        return true;
      case BurstMarket::kOnDemand:
        return burst_allowed_;
      case BurstMarket::kSpot:
        return burst_allowed_ && spot_allowed_;
    }
    return true;
  }
};

}  // namespace tessera
