#include "model/cluster.h"

#include "model/vgpu_family.h"
#include "tessera/gpu/vgpu_types.h"

namespace tessera {
namespace {

BurstMarket BurstMarketOf(const v1::NodeSpec& spec) {
  auto it = spec.labels().find(kBurstMarketLabel);
  if (it == spec.labels().end()) return BurstMarket::kNone;
  return it->second == "spot" ? BurstMarket::kSpot : BurstMarket::kOnDemand;
}

}  // namespace

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
    TESSERA_RETURN_IF_ERROR(ValidateGpuSharing(g, field));
  }
  for (const auto& [key, value] : spec.labels()) {
    if (key.empty() || key.size() > 253) {
      return InvalidArgumentError(where + "labels: keys must be 1..253 bytes");
    }
    if (value.size() > 1024) {
      return InvalidArgumentError(where + "labels[" + key + "]: at most 1024 bytes");
    }
  }
  if (spec.zone().size() > 253) return InvalidArgumentError(where + "zone: at most 253 bytes");
  auto zone_label = spec.labels().find(std::string(kZoneLabel));
  if (!spec.zone().empty() && zone_label != spec.labels().end() &&
      zone_label->second != spec.zone()) {
    return InvalidArgumentError(where + "zone: '" + spec.zone() + "' differs from labels[zone] '" +
                                zone_label->second + "'");
  }
  for (int i = 0; i < spec.taints_size(); ++i) {
    const v1::Taint& t = spec.taints(i);
    const std::string field = where + "taints[" + std::to_string(i) + "].";
    if (t.key().empty() || t.key().size() > 253) {
      return InvalidArgumentError(field + "key: must be 1..253 bytes");
    }
    if (t.value().size() > 1024) return InvalidArgumentError(field + "value: at most 1024 bytes");
    if (!v1::TaintEffect_IsValid(t.effect()) || t.effect() == v1::TAINT_EFFECT_UNSPECIFIED) {
      return InvalidArgumentError(
          field + "effect: must be NO_SCHEDULE, PREFER_NO_SCHEDULE or NO_EXECUTE, got " +
          std::to_string(t.effect()));
    }
  }
  return Status::Ok();
}

Status ValidateGpuSharing(const v1::GpuDevice& g, const std::string& field) {
  if (!v1::GpuSharing_IsValid(g.sharing())) {
    return InvalidArgumentError(field + "sharing: unknown mode " + std::to_string(g.sharing()));
  }
  if (g.sharing() == v1::GPU_SHARING_TIME_SLICE && (g.replicas() < 2 || g.replicas() > 1000)) {
    return InvalidArgumentError(field + "replicas: a time-sliced GPU needs 2..1000 replicas, got " +
                                std::to_string(g.replicas()));
  }
  if (g.sharing() != v1::GPU_SHARING_TIME_SLICE && g.replicas() != 0) {
    return InvalidArgumentError(field + "replicas: set, but sharing is not GPU_SHARING_TIME_SLICE");
  }
  if (g.sharing() != v1::GPU_SHARING_MIG && (g.mig_instances_size() > 0 || g.mig_managed())) {
    return InvalidArgumentError(field + "mig_instances: set, but sharing is not GPU_SHARING_MIG");
  }
  if (g.sharing() != v1::GPU_SHARING_VGPU && !g.vgpu_type().empty()) {
    return InvalidArgumentError(field + "vgpu_type: set, but sharing is not GPU_SHARING_VGPU");
  }
  if (g.sharing() == v1::GPU_SHARING_MIG) {
    const mig::ModelProfiles* model = mig::FindModel(g.model());
    if (model == nullptr) {
      return InvalidArgumentError(field + "sharing: model '" + g.model() +
                                  "' has no MIG profiles (known: A100-40GB, A100-80GB, "
                                  "H100-80GB, H200-141GB)");
    }
    std::vector<mig::Instance> layout;
    for (int j = 0; j < g.mig_instances_size(); ++j) {
      const v1::MigInstance& m = g.mig_instances(j);
      std::optional<mig::ProfileKind> kind = mig::FindProfile(*model, m.profile());
      if (!kind) {
        return InvalidArgumentError(field + "mig_instances[" + std::to_string(j) + "].profile: '" +
                                    m.profile() + "' is not a profile of " + g.model());
      }
      if (m.start() < 0 || m.start() >= mig::kMemorySlices) {
        return InvalidArgumentError(field + "mig_instances[" + std::to_string(j) +
                                    "].start: must be 0..7, got " + std::to_string(m.start()));
      }
      layout.push_back({*kind, static_cast<uint8_t>(m.start())});
    }
    const std::string error = mig::LayoutError(layout);
    if (!error.empty()) return InvalidArgumentError(field + "mig_instances: " + error);
  }
  if (g.sharing() == v1::GPU_SHARING_VGPU && !g.vgpu_type().empty()) {
    std::optional<vgpu::TypeName> type = vgpu::ParseType(g.vgpu_type());
    if (!type || type->family != vgpu::Family(g.model()) ||
        vgpu::InstancesPerGpu(type->framebuffer_gib, g.memory_mib()) == 0) {
      return InvalidArgumentError(field + "vgpu_type: '" + g.vgpu_type() +
                                  "' is not a vGPU type of " + g.model() + " with " +
                                  std::to_string(g.memory_mib()) + " MiB");
    }
  }
  return Status::Ok();
}

GpuSlot MakeGpuSlot(const v1::GpuDevice& g) {
  GpuSlot slot;
  slot.memory_mib = g.memory_mib();
  slot.free_memory_mib = g.memory_mib();
  slot.nvlink_domain = g.nvlink_domain();
  slot.sharing = static_cast<GpuSharing>(g.sharing());
  slot.replicas = static_cast<int16_t>(g.replicas());
  if (slot.sharing == GpuSharing::kMig) {
    slot.mig_model = mig::FindModel(g.model());
    slot.mig_managed = g.mig_managed();
    for (const v1::MigInstance& m : g.mig_instances()) {
      slot.mig[slot.mig_count++] = {*mig::FindProfile(*slot.mig_model, m.profile()),
                                    static_cast<uint8_t>(m.start())};
    }
  }
  if (slot.sharing == GpuSharing::kVgpu) {
    slot.vgpu_family = vgpu::InternFamily(vgpu::Family(g.model()));
    if (!g.vgpu_type().empty()) {
      slot.vgpu_framebuffer_gib = vgpu::ParseType(g.vgpu_type())->framebuffer_gib;
      slot.vgpu_fixed = true;
    }
  }
  return slot;
}

void DescribeGpu(const GpuSlot& gpu, v1::GpuDevice& out) {
  out.set_memory_mib(gpu.memory_mib);
  out.set_nvlink_domain(gpu.nvlink_domain);
  out.set_healthy(gpu.healthy);
  out.set_sharing(static_cast<v1::GpuSharing>(gpu.sharing));
  if (gpu.sharing == GpuSharing::kTimeSlice) out.set_replicas(gpu.replicas);
  if (gpu.sharing == GpuSharing::kMig) {
    out.set_mig_managed(gpu.mig_managed);
    for (int i = 0; i < gpu.mig_count; ++i) {
      v1::MigInstance* m = out.add_mig_instances();
      m->set_profile(MigProfileName(gpu, i));
      m->set_start(gpu.mig[i].start);
    }
  }
  if (gpu.sharing == GpuSharing::kVgpu && gpu.vgpu_framebuffer_gib > 0) {
    out.set_vgpu_type(vgpu::TypeNameFor(*gpu.vgpu_family, gpu.vgpu_framebuffer_gib));
  }
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
    gpus.push_back(MakeGpuSlot(g));
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
    free_slots_.erase(id);
    nodes_[id] = NodeState(id, spec.name(), spec.cpu_milli(), spec.memory_mib(), model,
                           std::move(gpus), std::move(rack));
  } else if (!free_slots_.empty()) {
    // A new name takes an absent node's slot; that node's name is forgotten.
    id = *free_slots_.begin();
    free_slots_.erase(free_slots_.begin());
    by_name_.erase(nodes_[id].name());
    by_name_.emplace(spec.name(), id);
    nodes_[id] = NodeState(id, spec.name(), spec.cpu_milli(), spec.memory_mib(), model,
                           std::move(gpus), std::move(rack));
  } else {
    id = static_cast<NodeIndexId>(nodes_.size());
    nodes_.emplace_back(id, spec.name(), spec.cpu_milli(), spec.memory_mib(), model,
                        std::move(gpus), std::move(rack));
    by_name_.emplace(spec.name(), id);
    labels_.emplace_back();
    taints_and_zone_.emplace_back();
  }
  labels_[id] = {spec.labels().begin(), spec.labels().end()};
  taints_and_zone_[id].Clear();
  *taints_and_zone_[id].mutable_taints() = spec.taints();
  taints_and_zone_[id].set_zone(spec.zone());
  nodes_[id].set_labels(
      std::make_shared<const NodeLabels>(MakeNodeLabels(spec, label_dictionary_)));
  nodes_[id].set_burst(BurstMarketOf(spec));
  capacity_ += nodes_[id].Capacity();
  capacity_by_model_.Add(nodes_[id].model(), nodes_[id].Capacity().gpu_milli());
  return id;
}

void Cluster::RemoveNode(NodeIndexId id) {
  NodeState& n = nodes_[id];
  if (!n.present()) return;
  capacity_ -= n.Capacity();
  capacity_by_model_.Add(n.model(), -n.Capacity().gpu_milli());
  n.set_present(false);
  free_slots_.insert(id);
}

void Cluster::SetLabelsAndTaints(NodeIndexId id, const v1::NodeSpec& spec) {
  labels_[id] = {spec.labels().begin(), spec.labels().end()};
  auto rack = spec.labels().find("rack");
  nodes_[id].set_rack(rack == spec.labels().end() ? "" : rack->second);
  taints_and_zone_[id].Clear();
  *taints_and_zone_[id].mutable_taints() = spec.taints();
  taints_and_zone_[id].set_zone(spec.zone());
  nodes_[id].set_labels(
      std::make_shared<const NodeLabels>(MakeNodeLabels(spec, label_dictionary_)));
  nodes_[id].set_burst(BurstMarketOf(spec));
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
