// NodeFilter: a yes/no test of whether a node may take one more task of a shape. Filters narrow
// the candidates the index proposes; a Scorer then chooses among the survivors.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "model/node_state.h"
#include "model/task_shape.h"

namespace tessera {

class NodeFilter {
 public:
  virtual ~NodeFilter() = default;
  virtual std::string_view name() const = 0;
  virtual bool Accept(const NodeState& node, const TaskShape& shape) const = 0;
};

// Present, not cordoned, not draining.
class SchedulableFilter final : public NodeFilter {
 public:
  std::string_view name() const override { return "schedulable"; }
  bool Accept(const NodeState& node, const TaskShape&) const override { return node.Schedulable(); }
};

// Enough free cpu and memory for one task.
class HostCapacityFilter final : public NodeFilter {
 public:
  std::string_view name() const override { return "host-capacity"; }
  bool Accept(const NodeState& node, const TaskShape& shape) const override {
    return node.HostFits(shape);
  }
};

// The node's GPU model is one the task allows.
class GpuModelFilter final : public NodeFilter {
 public:
  std::string_view name() const override { return "gpu-model"; }
  bool Accept(const NodeState& node, const TaskShape& shape) const override {
    return !shape.needs_gpu() || shape.AllowsModel(node.model());
  }
};

// The filters every placement applies, cheapest first.
std::vector<std::unique_ptr<NodeFilter>> DefaultFilters();

}  // namespace tessera
