#include "model/gpu_partition.h"

#include <vector>

#include "tessera/gpu/vgpu_types.h"

namespace tessera {

v1::GpuPartition DescribeShare(const NodeState& node, const TaskAllocation& allocation) {
  v1::GpuPartition p;
  const GpuSlot& gpu = node.gpus()[__builtin_ctz(allocation.gpu_mask)];
  p.set_sharing(static_cast<v1::GpuSharing>(gpu.sharing));
  if (allocation.mig_start >= 0) {
    p.set_mig_profile(MigProfileName(gpu, FindMigInstance(gpu, allocation.mig_start)));
    p.set_mig_start(allocation.mig_start);
  }
  if (allocation.vgpu_framebuffer_gib > 0) {
    p.set_vgpu_type(vgpu::TypeNameFor(*gpu.vgpu_family, allocation.vgpu_framebuffer_gib));
  }
  return p;
}

bool RestoreShare(NodeState& node, const v1::TaskPlacement& placement, TaskAllocation& allocation) {
  if (allocation.gpu_mask == 0 || __builtin_popcount(allocation.gpu_mask) != 1) return false;
  const int index = __builtin_ctz(allocation.gpu_mask);
  if (index >= static_cast<int>(node.gpus().size())) return false;
  const GpuSlot& gpu = node.gpus()[index];
  const v1::GpuPartition& p = placement.partition();
  if (static_cast<GpuSharing>(p.sharing()) != gpu.sharing) return false;
  allocation.share = true;
  if (gpu.sharing == GpuSharing::kVgpu) {
    std::optional<vgpu::TypeName> type = vgpu::ParseType(p.vgpu_type());
    if (!type || gpu.vgpu_family == nullptr || type->family != *gpu.vgpu_family) return false;
    if (gpu.users > 0 && gpu.vgpu_framebuffer_gib != type->framebuffer_gib) return false;
    allocation.vgpu_framebuffer_gib = type->framebuffer_gib;
    return true;
  }
  if (gpu.sharing != GpuSharing::kMig) return true;

  std::optional<mig::ProfileKind> kind = mig::FindProfile(*gpu.mig_model, p.mig_profile());
  if (!kind) return false;
  const mig::Instance wanted{*kind, static_cast<uint8_t>(p.mig_start())};
  int found = FindMigInstance(gpu, p.mig_start());
  if (found >= 0 && gpu.mig[found] == wanted) {
    if ((gpu.mig_busy >> found) & 1u) return false;  // two tasks on one instance.
    allocation.mig_start = static_cast<int8_t>(wanted.start);
    return true;
  }
  if (!gpu.mig_managed) return false;
  // The layout changed while the scheduler was down: make room by removing free instances that
  // overlap the one the task holds.
  std::vector<mig::Instance> layout;
  const uint32_t span = ((1u << mig::Shape(*kind).memory_slices) - 1) << wanted.start;
  for (int i = 0; i < gpu.mig_count; ++i) {
    const mig::Instance& current = gpu.mig[i];
    const uint32_t other = ((1u << mig::Shape(current.kind).memory_slices) - 1) << current.start;
    if ((span & other) != 0) {
      if ((gpu.mig_busy >> i) & 1u) return false;
      continue;
    }
    layout.push_back(current);
  }
  layout.push_back(wanted);
  if (!mig::IsValidLayout(layout)) return false;
  node.SetMigLayout(index, layout);
  allocation.mig_start = static_cast<int8_t>(wanted.start);
  return true;
}

}  // namespace tessera
