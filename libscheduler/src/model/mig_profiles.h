// MIG profiles: the GPU-instance shapes NVIDIA Multi-Instance GPU offers on A100-40GB,
// A100-80GB, H100-80GB and H200-141GB, and the rules a layout of instances must follow.
//
// A MIG-capable GPU has 7 compute slices and 8 memory slices. A GPU instance of a profile takes
// a fixed number of each and may start only at certain memory-slice positions (NVIDIA's
// "placements", `nvidia-smi mig -lgipp`). The same profile kind has a different name on each
// model because its memory differs: the 3-slice instance is "3g.20gb" on an A100-40GB,
// "3g.40gb" on an A100-80GB or H100-80GB and "3g.71gb" on an H200-141GB.
//
// For accounting an instance counts as compute_slices/7 of the GPU (in milli-GPUs, rounded
// down, so seven 1g instances count 994, not 1000) and its memory in MiB, whichever backend
// serves it (ARCHITECTURE.md, "quota in physical units").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tessera::mig {

inline constexpr int kComputeSlices = 7;
inline constexpr int kMemorySlices = 8;
// At most 7 instances: each takes at least one compute slice.
inline constexpr int kMaxInstances = 7;

// The seven GPU-instance profile kinds, in NVML's order (1_SLICE, 1_SLICE_REV1, 1_SLICE_REV2,
// 2_SLICE, 3_SLICE, 4_SLICE, 7_SLICE).
enum class ProfileKind : uint8_t {
  k1Slice,           // 1 compute, 1 memory slice.
  k1SliceMedia,      // "+me": 1 compute, 1 memory slice, the GPU's media engines; one per GPU.
  k1SliceDoubleMem,  // 1 compute, 2 memory slices (1g.10gb on A100-40GB, 1g.20gb on 80GB).
  k2Slice,
  k3Slice,
  k4Slice,
  k7Slice,
};
inline constexpr int kNumProfileKinds = 7;

// What a profile kind takes, the same on every model.
struct ProfileShape {
  int compute_slices;
  int memory_slices;  // also the width of its placement, in memory-slice positions.
  int max_per_gpu;
  uint8_t allowed_starts;  // bit p set: the instance may start at memory slice p.
};
const ProfileShape& Shape(ProfileKind kind);

// A GPU model's names and memory sizes for each profile kind.
struct ModelProfiles {
  std::string_view model;  // as nodes report it, e.g. "A100-80GB".
  std::array<std::string_view, kNumProfileKinds> names;
  // Memory of an instance in MiB, as NVML reports it; 0 where NVIDIA publishes no figure we
  // have, in which case it is memory_slices/8 of the GPU's memory (InstanceMemoryMib).
  std::array<int64_t, kNumProfileKinds> memory_mib;
};

// The table for a GPU model, or null when the model has no MIG support we know of.
const ModelProfiles* FindModel(std::string_view gpu_model);
// The kind named `name` ("3g.40gb", "1g.10gb+me") on a model, or nullopt.
std::optional<ProfileKind> FindProfile(const ModelProfiles& model, std::string_view name);
// True when `name` is a profile of any known model; used to validate requests before any node
// reports its model.
bool IsKnownProfileName(std::string_view name);

// The compute share of an instance in milli-GPUs.
int32_t ComputeMilli(ProfileKind kind);
// The memory of an instance on a GPU with `gpu_memory_mib` of memory.
int64_t InstanceMemoryMib(const ModelProfiles& model, ProfileKind kind, int64_t gpu_memory_mib);
// The least memory an instance of profile `name` has on any model that names a profile so: what
// a request for it is charged against quotas before a GPU is chosen. 0 when a model with that
// name publishes no figure (its instances' memory depends on the GPU's) or no model has it.
int64_t LeastInstanceMemoryMib(std::string_view name);

// One GPU instance of a layout.
struct Instance {
  ProfileKind kind = ProfileKind::k1Slice;
  uint8_t start = 0;  // first memory slice.
  friend bool operator==(const Instance&, const Instance&) = default;
};

// Why a layout is not valid, or empty when it is. A layout is valid when every instance starts
// at an allowed position, no two overlap, their compute slices add up to at most 7, and no kind
// appears more often than its max_per_gpu.
std::string LayoutError(std::span<const Instance> layout);
inline bool IsValidLayout(std::span<const Instance> layout) { return LayoutError(layout).empty(); }

}  // namespace tessera::mig
