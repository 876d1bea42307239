#include "model/cluster.h"

namespace tessera {

Status ValidateNodeSpec(const v1::NodeSpec& spec) {
  if (spec.name().empty()) return InvalidArgumentError("node.name: must not be empty");
  const std::string where = "node '" + spec.name() + "': ";
  if (spec.cpu_milli() <= 0) return InvalidArgumentError(where + "cpu_milli: must be > 0");
  if (spec.memory_mib() <= 0) return InvalidArgumentError(where + "memory_mib: must be > 0");
  if (spec.gpus_size() > NodeState::kMaxGpus) {
    return InvalidArgumentError(where + "gpus: at most " + std::to_string(NodeState::kMaxGpus) +
                                " GPUs per node, got " + std::to_string(spec.gpus_size()));
  }
  for (int i = 0; i < spec.gpus_size(); ++i) {
    const v1::GpuDevice& g = spec.gpus(i);
    const std::string field = where + "gpus[" + std::to_string(i) + "].";
    if (g.model().empty()) return InvalidArgumentError(field + "model: must not be empty");
    if (g.model() != spec.gpus(0).model()) {
      return InvalidArgumentError(field + "model: all GPUs of a node must be one model ('" +
                                  spec.gpus(0).model() + "'), got '" + g.model() + "'");
    }
    if (g.memory_mib() <= 0) return InvalidArgumentError(field + "memory_mib: must be > 0");
    if (g.memory_mib() != spec.gpus(0).memory_mib()) {
      return InvalidArgumentError(field +
                                  "memory_mib: all GPUs of a node must have the same memory");
    }
  }
  return Status::Ok();
}

StatusOr<NodeIndexId> Cluster::AddNode(const v1::NodeSpec& spec) {
  TESSERA_RETURN_IF_ERROR(ValidateNodeSpec(spec));
  int model = -1;
  std::vector<GpuSlot> gpus;
  for (const v1::GpuDevice& g : spec.gpus()) {
    std::optional<int> id = models_.Intern(g.model());
    if (!id) {
      return InvalidArgumentError("node '" + spec.name() + "': gpus.model: more than " +
                                  std::to_string(GpuModels::kMaxModels) + " distinct GPU models");
    }
    model = *id;
    GpuSlot slot;
    slot.memory_mib = g.memory_mib();
    slot.free_memory_mib = g.memory_mib();
    slot.nvlink_domain = g.nvlink_domain();
    gpus.push_back(slot);
  }
  auto rack_it = spec.labels().find("rack");
  std::string rack = rack_it == spec.labels().end() ? "" : rack_it->second;

  auto existing = by_name_.find(spec.name());
  NodeIndexId id;
  if (existing != by_name_.end()) {
    if (nodes_[existing->second].present()) {
      return AlreadyExistsError("node '" + spec.name() + "' already exists");
    }
    id = existing->second;
    nodes_[id] = NodeState(id, spec.name(), spec.cpu_milli(), spec.memory_mib(), model,
                           std::move(gpus), std::move(rack));
  } else {
    id = static_cast<NodeIndexId>(nodes_.size());
    nodes_.emplace_back(id, spec.name(), spec.cpu_milli(), spec.memory_mib(), model,
                        std::move(gpus), std::move(rack));
    by_name_.emplace(spec.name(), id);
  }
  capacity_ += nodes_[id].Capacity();
  return id;
}

void Cluster::RemoveNode(NodeIndexId id) {
  NodeState& n = nodes_[id];
  if (!n.present()) return;
  capacity_ -= n.Capacity();
  n.set_present(false);
}

NodeState* Cluster::Find(const std::string& name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &nodes_[it->second];
}

const NodeState* Cluster::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &nodes_[it->second];
}

}  // namespace tessera
