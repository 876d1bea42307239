#include "model/gpu_slot.h"

#include <algorithm>
#include <tuple>

#include "common/check.h"
#include "tessera/gpu/vgpu_types.h"

namespace tessera {
namespace {

bool FormAccepts(GpuForm asked, GpuForm offered) {
  return asked == GpuForm::kAny || asked == offered;
}

// A packed fraction or an MPS share: exactly the compute asked for, and the memory asked for or
// the same fraction of the GPU's memory, so that shares that fit by compute also fit by memory.
std::optional<ShareOffer> OfferPacked(const GpuSlot& gpu, const TaskShape& shape) {
  if (shape.gpu_milli <= 0) return std::nullopt;
  const int64_t memory =
      shape.gpu_memory_mib > 0 ? shape.gpu_memory_mib : gpu.memory_mib * shape.gpu_milli / 1000;
  if (gpu.free_milli < shape.gpu_milli || gpu.free_memory_mib < memory) return std::nullopt;
  return ShareOffer{shape.gpu_milli, memory};
}

std::optional<ShareOffer> OfferTimeSlice(const GpuSlot& gpu, const TaskShape& shape) {
  if (gpu.replicas <= 0 || gpu.users >= gpu.replicas) return std::nullopt;
  const int32_t slice = 1000 / gpu.replicas;
  if (slice < shape.gpu_milli) return std::nullopt;
  // Time slices do not isolate memory: reserve what the task asked for, or its slice's part.
  const int64_t memory =
      shape.gpu_memory_mib > 0 ? shape.gpu_memory_mib : gpu.memory_mib / gpu.replicas;
  if (gpu.free_memory_mib < memory) return std::nullopt;
  return ShareOffer{slice, memory};
}

std::optional<ShareOffer> OfferMigInstance(const GpuSlot& gpu, const TaskShape& shape) {
  if (gpu.mig_model == nullptr) return std::nullopt;
  int best = -1;
  auto key = [&](int i) {
    const mig::ProfileKind kind = gpu.mig[i].kind;
    return std::tuple(mig::ComputeMilli(kind),
                      mig::InstanceMemoryMib(*gpu.mig_model, kind, gpu.memory_mib),
                      kind == mig::ProfileKind::k1SliceMedia, gpu.mig[i].start);
  };
  for (int i = 0; i < gpu.mig_count; ++i) {
    if ((gpu.mig_busy >> i) & 1u) continue;
    const mig::ProfileKind kind = gpu.mig[i].kind;
    if (!shape.mig_profile.empty()) {
      if (gpu.mig_model->names[static_cast<int>(kind)] != shape.mig_profile) continue;
    } else if (mig::ComputeMilli(kind) < shape.gpu_milli ||
               mig::InstanceMemoryMib(*gpu.mig_model, kind, gpu.memory_mib) <
                   shape.gpu_memory_mib) {
      continue;
    }
    if (best < 0 || key(i) < key(best)) best = i;
  }
  if (best < 0) return std::nullopt;
  const mig::ProfileKind kind = gpu.mig[best].kind;
  return ShareOffer{mig::ComputeMilli(kind),
                    mig::InstanceMemoryMib(*gpu.mig_model, kind, gpu.memory_mib),
                    static_cast<int8_t>(best)};
}

std::optional<ShareOffer> OfferVgpuOfType(const GpuSlot& gpu, const TaskShape& shape,
                                          int32_t framebuffer_gib) {
  const int instances = vgpu::InstancesPerGpu(framebuffer_gib, gpu.memory_mib);
  if (instances == 0 || gpu.users >= instances) return std::nullopt;
  const int32_t milli = 1000 / instances;
  const int64_t memory =
      std::min<int64_t>(int64_t{framebuffer_gib} * 1024, gpu.memory_mib / instances);
  if (milli < shape.gpu_milli) return std::nullopt;
  if (shape.vgpu_framebuffer_gib == 0 && memory < shape.gpu_memory_mib) return std::nullopt;
  if (gpu.free_memory_mib < memory || gpu.free_milli < milli) return std::nullopt;
  return ShareOffer{milli, memory, -1, framebuffer_gib};
}

std::optional<ShareOffer> OfferVgpu(const GpuSlot& gpu, const TaskShape& shape) {
  if (gpu.vgpu_family == nullptr) return std::nullopt;
  if (!shape.vgpu_family.empty() && shape.vgpu_family != *gpu.vgpu_family) return std::nullopt;
  if (gpu.vgpu_framebuffer_gib > 0) {
    // One type per GPU: the one in use (or fixed by the operator).
    if (shape.vgpu_framebuffer_gib != 0 && shape.vgpu_framebuffer_gib != gpu.vgpu_framebuffer_gib) {
      return std::nullopt;
    }
    return OfferVgpuOfType(gpu, shape, gpu.vgpu_framebuffer_gib);
  }
  if (shape.vgpu_framebuffer_gib != 0)
    return OfferVgpuOfType(gpu, shape, shape.vgpu_framebuffer_gib);
  // An idle GPU: the smallest standard type that meets the asks.
  for (int32_t framebuffer : vgpu::StandardFramebuffers()) {
    if (std::optional<ShareOffer> offer = OfferVgpuOfType(gpu, shape, framebuffer)) return offer;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ShareOffer> OfferShare(const GpuSlot& gpu, const TaskShape& shape) {
  if (!gpu.healthy) return std::nullopt;
  switch (gpu.sharing) {
    case GpuSharing::kExclusive:
      return std::nullopt;
    case GpuSharing::kDefault:
      if (shape.form != GpuForm::kAny) return std::nullopt;
      return OfferPacked(gpu, shape);
    case GpuSharing::kMps:
      if (!FormAccepts(shape.form, GpuForm::kMps) || gpu.users >= kMaxMpsClients) {
        return std::nullopt;
      }
      return OfferPacked(gpu, shape);
    case GpuSharing::kTimeSlice:
      if (!FormAccepts(shape.form, GpuForm::kTimeSlice)) return std::nullopt;
      return OfferTimeSlice(gpu, shape);
    case GpuSharing::kMig:
      if (!FormAccepts(shape.form, GpuForm::kMig)) return std::nullopt;
      return OfferMigInstance(gpu, shape);
    case GpuSharing::kVgpu:
      if (!FormAccepts(shape.form, GpuForm::kVgpu)) return std::nullopt;
      return OfferVgpu(gpu, shape);
  }
  return std::nullopt;
}

int32_t LargestShare(const GpuSlot& gpu) {
  if (!gpu.healthy) return 0;
  switch (gpu.sharing) {
    case GpuSharing::kExclusive:
      return 0;
    case GpuSharing::kDefault:
      return gpu.free_milli;
    case GpuSharing::kMps:
      return gpu.users < kMaxMpsClients ? gpu.free_milli : 0;
    case GpuSharing::kTimeSlice:
      return gpu.replicas > 0 && gpu.users < gpu.replicas ? 1000 / gpu.replicas : 0;
    case GpuSharing::kMig: {
      int32_t largest = 0;
      for (int i = 0; i < gpu.mig_count; ++i) {
        if (!((gpu.mig_busy >> i) & 1u)) {
          largest = std::max(largest, mig::ComputeMilli(gpu.mig[i].kind));
        }
      }
      return largest;
    }
    case GpuSharing::kVgpu: {
      if (gpu.vgpu_framebuffer_gib == 0) return gpu.free_milli;  // idle: any type may be made.
      const int instances = vgpu::InstancesPerGpu(gpu.vgpu_framebuffer_gib, gpu.memory_mib);
      return gpu.users < instances ? 1000 / instances : 0;
    }
  }
  return 0;
}

void TakeShare(GpuSlot& gpu, int32_t milli, int64_t memory_mib, int mig_instance,
               int32_t vgpu_framebuffer_gib) {
  gpu.free_milli -= milli;
  gpu.free_memory_mib -= memory_mib;
  ++gpu.users;
  if (mig_instance >= 0) {
    TESSERA_CHECK(mig_instance < gpu.mig_count && !((gpu.mig_busy >> mig_instance) & 1u),
                  "took a MIG instance that is not free");
    gpu.mig_busy |= uint8_t(1u << mig_instance);
  }
  if (vgpu_framebuffer_gib > 0) gpu.vgpu_framebuffer_gib = vgpu_framebuffer_gib;
  TESSERA_CHECK(gpu.free_milli >= 0 && gpu.free_memory_mib >= 0, "over-allocated a GPU share");
}

void ReturnShare(GpuSlot& gpu, int32_t milli, int64_t memory_mib, int mig_instance) {
  gpu.free_milli += milli;
  gpu.free_memory_mib += memory_mib;
  --gpu.users;
  if (mig_instance >= 0) gpu.mig_busy &= uint8_t(~(1u << mig_instance));
  if (gpu.users == 0 && !gpu.vgpu_fixed) gpu.vgpu_framebuffer_gib = 0;
  TESSERA_CHECK(gpu.users >= 0 && gpu.free_milli <= 1000 && gpu.free_memory_mib <= gpu.memory_mib,
                "returned more of a GPU share than was held");
}

int FindMigInstance(const GpuSlot& gpu, int start) {
  for (int i = 0; i < gpu.mig_count; ++i) {
    if (gpu.mig[i].start == start) return i;
  }
  return -1;
}

GpuSlot IdleCopy(const GpuSlot& gpu) {
  GpuSlot idle = gpu;
  idle.free_milli = 1000;
  idle.free_memory_mib = gpu.memory_mib;
  idle.users = 0;
  idle.mig_busy = 0;
  if (!gpu.vgpu_fixed) idle.vgpu_framebuffer_gib = 0;
  return idle;
}

std::string MigProfileName(const GpuSlot& gpu, int mig_instance) {
  if (gpu.mig_model == nullptr || mig_instance < 0 || mig_instance >= gpu.mig_count) return "";
  return std::string(gpu.mig_model->names[static_cast<int>(gpu.mig[mig_instance].kind)]);
}

}  // namespace tessera
