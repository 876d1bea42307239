#include "sim_partitioner.h"

#include <cstdint>
#include <cstdio>

namespace tessera::sim {
namespace {

using plugin::PluginStatus;

uint64_t Fnv1a(const std::string& text, uint64_t seed) {
  uint64_t hash = 1469598103934665603ull ^ seed;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// A UUID-shaped "MIG-..." name, the same for the same node, GPU and GPU instance id.
std::string MigUuid(const std::string& node, int gpu, int gpu_instance_id) {
  const std::string key = node + "/" + std::to_string(gpu) + "/" + std::to_string(gpu_instance_id);
  const uint64_t a = Fnv1a(key, 0);
  const uint64_t b = Fnv1a(key, 0x5bd1e995);
  char text[48];
  std::snprintf(text, sizeof(text), "MIG-%08x-%04x-%04x-%04x-%012llx",
                static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xffff),
                static_cast<unsigned>(a & 0xffff), static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffull));
  return text;
}

bool SameInstance(const v1::MigInstance& a, const v1::MigInstance& b) {
  return a.profile() == b.profile() && a.start() == b.start();
}

}  // namespace

PluginStatus SimPartitioner::Apply(const v1::PartitionLayoutRequest& request, bool failing,
                                   v1::NodeSpec* node, v1::PartitionLayoutResult* result) {
  if (request.gpu() < 0 || request.gpu() >= node->gpus_size()) {
    result->set_error("node '" + node->name() + "' has no GPU " + std::to_string(request.gpu()));
    return PluginStatus::Ok();
  }
  const v1::PartitionLayout& layout = request.layout();
  for (int j = 0; j < layout.mig_instances_size(); ++j) {
    const v1::MigInstance& m = layout.mig_instances(j);
    const std::string field = "layout.mig_instances[" + std::to_string(j) + "].";
    if (m.profile().empty()) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, field + "profile: must not be empty");
    }
    if (m.start() < 0 || m.start() > 7) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 field + "start: must be 0..7, got " + std::to_string(m.start()));
    }
  }
  v1::GpuDevice* gpu = node->mutable_gpus(request.gpu());
  if (gpu->sharing() != layout.sharing()) {
    result->set_error("GPU " + std::to_string(request.gpu()) + " of node '" + node->name() +
                      "' is shared as " + v1::GpuSharing_Name(gpu->sharing()) + ", not " +
                      v1::GpuSharing_Name(layout.sharing()));
  } else if (failing) {
    result->set_error("partitioning fails on node '" + node->name() +
                      "' (failing_partition_nodes)");
  } else if (layout.sharing() == v1::GPU_SHARING_MIG) {
    *gpu->mutable_mig_instances() = layout.mig_instances();
  } else if (layout.sharing() == v1::GPU_SHARING_VGPU) {
    gpu->set_vgpu_type(layout.vgpu_type());
  } else if (layout.sharing() == v1::GPU_SHARING_TIME_SLICE) {
    gpu->set_replicas(layout.replicas());
  }
  DescribeDevices(node);
  *result->mutable_applied() = LayoutOf(*gpu);
  *result->mutable_instances() = gpu->instances();
  return PluginStatus::Ok();
}

void SimPartitioner::DescribeDevices(v1::NodeSpec* node) {
  for (v1::GpuDevice& gpu : *node->mutable_gpus()) {
    if (gpu.sharing() != v1::GPU_SHARING_MIG) continue;
    int& last_id = last_gpu_instance_id_[{node->name(), gpu.index()}];
    google::protobuf::RepeatedPtrField<v1::PartitionInstance> devices;
    for (const v1::MigInstance& m : gpu.mig_instances()) {
      const v1::PartitionInstance* kept = nullptr;
      for (const v1::PartitionInstance& old : gpu.instances()) {
        if (SameInstance(old.mig(), m)) kept = &old;
      }
      v1::PartitionInstance* device = devices.Add();
      if (kept != nullptr) {
        *device = *kept;
        continue;
      }
      *device->mutable_mig() = m;
      device->set_gpu_instance_id(++last_id);
      device->set_compute_instance_id(0);
      device->set_uuid(MigUuid(node->name(), gpu.index(), device->gpu_instance_id()));
    }
    *gpu.mutable_instances() = std::move(devices);
  }
}

v1::PartitionLayout SimPartitioner::LayoutOf(const v1::GpuDevice& gpu) {
  v1::PartitionLayout layout;
  layout.set_sharing(gpu.sharing());
  if (gpu.sharing() == v1::GPU_SHARING_MIG) {
    *layout.mutable_mig_instances() = gpu.mig_instances();
  } else if (gpu.sharing() == v1::GPU_SHARING_VGPU) {
    layout.set_vgpu_type(gpu.vgpu_type());
  } else if (gpu.sharing() == v1::GPU_SHARING_TIME_SLICE) {
    layout.set_replicas(gpu.replicas());
  }
  return layout;
}

}  // namespace tessera::sim
