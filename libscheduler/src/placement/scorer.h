// Scorer: chooses among the nodes that passed the filters. A scorer states the index order that
// matches it (so the best candidate usually comes first), how many candidates it wants to
// compare, and how to pick GPUs inside a node.
//
// Simple scorers only rank nodes: the node picks its GPUs by the scorer's device preference
// (NodeState::Fit) and Score ranks the result. Scorers whose ranking depends on which GPUs are
// taken (fragmentation awareness) override Choose to weigh the device choices of a node
// themselves. Scorers are used from the decision thread only; those that cache per-node results
// keep them in mutable members keyed by NodeState::stamp().
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "model/cluster.h"
#include "model/node_state.h"
#include "model/task_shape.h"
#include "placement/node_index.h"
#include "tessera/options.h"

namespace tessera {

// A device choice on one node and its score (higher is better).
struct ScoredAllocation {
  TaskAllocation allocation;
  int64_t score = 0;
};

class Scorer {
 public:
  // candidates() value asking to compare every node that passes the filters.
  static constexpr int kAllCandidates = std::numeric_limits<int>::max();

  virtual ~Scorer() = default;
  virtual std::string_view name() const = 0;
  virtual IndexOrder order() const = 0;
  virtual DevicePreference device_preference() const = 0;
  // Candidates to compare before choosing; 1 when the index order already is the score order.
  virtual int candidates() const { return 1; }
  // Among nodes with equal index keys, those of lower rank are visited first (NodeIndex). A
  // scorer that compares only a few candidates and breaks ties by its own node order returns
  // that order here, so the candidates it sees are those it would prefer. Must not change for a
  // node.
  virtual uint32_t TieRank(const NodeState& node) const { return 0; }
  // The node in slot `id` left: a node added later may take the slot under another name, so
  // whatever the scorer keeps by NodeIndexId for it is forgotten.
  virtual void ForgetNode(NodeIndexId id) {}
  // Called once by the Placer with the cluster it places on, before any other call. Scorers
  // that need cluster-wide facts (the largest node, GPU model names) take them here.
  virtual void Attach(Cluster& cluster) {}
  // Tells the scorer that `tasks` tasks of `shape` were submitted (the engine calls it once per
  // job it takes on). Scorers that learn the expected workload count them; others ignore it.
  virtual void Observe(const TaskShape& shape, int64_t tasks) {}
  // Higher is better. Called with the allocation the node would make.
  virtual int64_t Score(const NodeState& node, const TaskShape& shape,
                        const TaskAllocation& allocation) const = 0;
  // Chooses the devices for one task of `shape` on `node`, which passed every filter, and
  // scores that choice; nullopt when the task does not fit. The default takes NodeState::Fit
  // with device_preference() and ranks it with Score.
  virtual std::optional<ScoredAllocation> Choose(const NodeState& node,
                                                 const TaskShape& shape) const;
};

// Fills the fullest node that fits, keeping whole nodes free for large jobs.
class BinpackScorer final : public Scorer {
 public:
  std::string_view name() const override { return "binpack"; }
  IndexOrder order() const override { return IndexOrder::kTightestFirst; }
  DevicePreference device_preference() const override { return DevicePreference::kTightest; }
  int64_t Score(const NodeState& node, const TaskShape& shape,
                const TaskAllocation& allocation) const override;
};

// Uses the emptiest node, spreading load and failure risk.
class SpreadScorer final : public Scorer {
 public:
  std::string_view name() const override { return "spread"; }
  IndexOrder order() const override { return IndexOrder::kLoosestFirst; }
  DevicePreference device_preference() const override { return DevicePreference::kLoosest; }
  int64_t Score(const NodeState& node, const TaskShape& shape,
                const TaskAllocation& allocation) const override;
};

// The scorer of `options.strategy`. The strategies that protect an expected workload (kFgd,
// kFragmentationAware) take options.expected_tasks and learn the cluster's models in Attach.
std::unique_ptr<Scorer> MakeScorer(const PlacementOptions& options);

}  // namespace tessera
