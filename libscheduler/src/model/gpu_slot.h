// GpuSlot: one GPU of a node, how it is shared between tasks, and what share it can give a task.
//
// A GPU is used whole or shared in one of five ways (GpuSharing, mirroring v1::GpuSharing):
// packed fractions (the default), time slices, MPS clients, MIG instances or vGPU devices.
// Whatever the form, what a task holds is counted in the same physical units, a compute share in
// milli-GPUs and MiB of memory, so free_milli and free_memory_mib are the GPU's free capacity
// in every mode, and quotas and DRF compare a MIG instance with a time slice honestly. The
// mode-specific fields say which shares exist (MIG instances, the vGPU type in use, how many
// clients hold a slice).
//
// OfferShare answers "what would this GPU give one fractional task now": the smallest share of
// its form that meets the task's compute and memory asks. TakeShare and ReturnShare apply an
// allocation made from an offer, and nothing else changes a slot.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "model/task_shape.h"
#include "tessera/gpu/mig_profiles.h"

namespace tessera {

enum class GpuSharing : uint8_t { kDefault, kExclusive, kTimeSlice, kMps, kMig, kVgpu };

// The most MPS clients one GPU serves (Volta and later).
inline constexpr int kMaxMpsClients = 48;

struct GpuSlot {
  int64_t memory_mib = 0;
  int64_t free_memory_mib = 0;
  int32_t free_milli = 1000;
  int32_t nvlink_domain = 0;
  bool healthy = true;

  GpuSharing sharing = GpuSharing::kDefault;
  int16_t users = 0;     // tasks holding a share.
  int16_t replicas = 0;  // kTimeSlice: slices per GPU.

  // kMig: the current layout and which instances are held (bit i = mig[i]).
  bool mig_managed = false;
  uint8_t mig_count = 0;
  uint8_t mig_busy = 0;
  std::array<mig::Instance, mig::kMaxInstances> mig{};
  const mig::ModelProfiles* mig_model = nullptr;

  // kVgpu: the family of the GPU's model ("A100", interned by vgpu::InternFamily), the
  // framebuffer of the type in use (0 while no vGPU exists and the type is not fixed) and
  // whether an operator fixed it.
  const std::string* vgpu_family = nullptr;
  int32_t vgpu_framebuffer_gib = 0;
  bool vgpu_fixed = false;

  // True when a whole-GPU task may take this GPU now. A GPU set up for sharing (time slices,
  // MPS, MIG, vGPU) serves only shares, as the device plugins that set those modes do.
  bool TakesWholeTask() const {
    return healthy && free_milli == 1000 && users == 0 &&
           (sharing == GpuSharing::kDefault || sharing == GpuSharing::kExclusive);
  }
};

// What one GPU would give one fractional task.
struct ShareOffer {
  int32_t milli = 0;
  int64_t memory_mib = 0;
  int8_t mig_instance = -1;          // kMig: index into GpuSlot::mig.
  int32_t vgpu_framebuffer_gib = 0;  // kVgpu: the type.
};

// The smallest share of `gpu` that meets a fractional task's asks, or nullopt when the GPU's
// form does not match the task's or nothing free is big enough.
std::optional<ShareOffer> OfferShare(const GpuSlot& gpu, const TaskShape& shape);

// The largest compute share one new fractional task could get from `gpu` now; 0 when none.
// The node index uses it as a cheap necessary condition.
int32_t LargestShare(const GpuSlot& gpu);

// Applies or returns a share taken from an offer (mig_instance and vgpu_framebuffer_gib as the
// offer gave them).
void TakeShare(GpuSlot& gpu, int32_t milli, int64_t memory_mib, int mig_instance,
               int32_t vgpu_framebuffer_gib);
void ReturnShare(GpuSlot& gpu, int32_t milli, int64_t memory_mib, int mig_instance);

// The index of the MIG instance of `gpu` starting at `start`, or -1.
int FindMigInstance(const GpuSlot& gpu, int start);

// `gpu` as it would be with nothing running on it (for feasibility: could it ever serve a task).
GpuSlot IdleCopy(const GpuSlot& gpu);

// The name a task's share has on a GPU in `sharing` mode, for the backend that enforces it.
std::string MigProfileName(const GpuSlot& gpu, int mig_instance);

}  // namespace tessera
