// Scorer: chooses among the nodes that passed the filters. A scorer states the index order that
// matches it (so the best candidate usually comes first), how many candidates it wants to
// compare, and how to pick GPUs inside a node.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "model/node_state.h"
#include "model/task_shape.h"
#include "placement/node_index.h"
#include "tessera/options.h"

namespace tessera {

class Scorer {
 public:
  virtual ~Scorer() = default;
  virtual std::string_view name() const = 0;
  virtual IndexOrder order() const = 0;
  virtual DevicePreference device_preference() const = 0;
  // Candidates to compare before choosing; 1 when the index order already is the score order.
  virtual int candidates() const { return 1; }
  // Higher is better. Called with the allocation the node would make.
  virtual int64_t Score(const NodeState& node, const TaskShape& shape,
                        const TaskAllocation& allocation) const = 0;
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

std::unique_ptr<Scorer> MakeScorer(const PlacementOptions& options);

}  // namespace tessera
