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
// serves it (docs/gpu-sharing.md). The scheduler places MIG requests with this table and a
// partitioner plugin carries its layouts out with the same one, so both agree on every name,
// size and placement.
//
// Header-only, constant tables and pure functions: safe to call from any thread. Model names
// are the scheduler's ("A100-80GB"); tessera/gpu/model_names.h turns a driver's device name into
// one.
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

// The seven GPU-instance profile kinds, in the order of NVML's profile names (1_SLICE,
// 1_SLICE_REV1, 1_SLICE_REV2, 2_SLICE, 3_SLICE, 4_SLICE, 7_SLICE; not NVML's enum values).
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

// A GPU model's names and memory sizes for each profile kind.
struct ModelProfiles {
  std::string_view model;  // as nodes report it, e.g. "A100-80GB".
  std::array<std::string_view, kNumProfileKinds> names;
  // Memory of an instance in MiB, as NVML reports it; 0 where NVIDIA publishes no figure we
  // have, in which case it is memory_slices/8 of the GPU's memory (InstanceMemoryMib).
  std::array<int64_t, kNumProfileKinds> memory_mib;
};

namespace table {

// Placements from `nvidia-smi mig -lgipp` on A100 and H100 (backends-reference.md section 1);
// H200 is assumed to follow them.
inline constexpr std::array<ProfileShape, kNumProfileKinds> kShapes = {{
    {1, 1, 7, 0b0111'1111},  // 1_SLICE: starts 0..6.
    {1, 1, 1, 0b0111'1111},  // 1_SLICE_REV1 (+me): starts 0..6, one per GPU.
    {1, 2, 4, 0b0101'0101},  // 1_SLICE_REV2: starts 0, 2, 4, 6.
    {2, 2, 3, 0b0001'0101},  // 2_SLICE: starts 0, 2, 4.
    {3, 4, 2, 0b0001'0001},  // 3_SLICE: starts 0, 4.
    {4, 4, 1, 0b0000'0001},  // 4_SLICE: starts 0.
    {7, 8, 1, 0b0000'0001},  // 7_SLICE: the whole GPU.
}};

// memorySizeMB as NVML reports it for A100 (go-nvml's dgxa100 data). H100-80GB is assumed to
// match the A100-80GB; for the H200 we have no published figures, so its sizes are derived from
// the GPU's memory (a stand-in, see InstanceMemoryMib).
inline constexpr std::array<ModelProfiles, 4> kModels = {{
    {"A100-40GB",
     {"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
     {4864, 4864, 9856, 9856, 19968, 19968, 40192}},
    {"A100-80GB",
     {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
     {9856, 9856, 19968, 19968, 40192, 40192, 80384}},
    {"H100-80GB",
     {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
     {9856, 9856, 19968, 19968, 40192, 40192, 80384}},
    {"H200-141GB",
     {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
     {0, 0, 0, 0, 0, 0, 0}},
}};

}  // namespace table

// What an instance of `kind` takes.
inline const ProfileShape& Shape(ProfileKind kind) {
  return table::kShapes[static_cast<int>(kind)];
}

// Every model with MIG profiles, for listing them (in messages, or to cross-check a driver).
inline std::span<const ModelProfiles> Models() { return table::kModels; }

// The table for a GPU model, or null when the model has no MIG support we know of.
inline const ModelProfiles* FindModel(std::string_view gpu_model) {
  for (const ModelProfiles& m : table::kModels) {
    if (m.model == gpu_model) return &m;
  }
  return nullptr;
}

// The kind named `name` ("3g.40gb", "1g.10gb+me") on a model, or nullopt.
inline std::optional<ProfileKind> FindProfile(const ModelProfiles& model, std::string_view name) {
  for (int k = 0; k < kNumProfileKinds; ++k) {
    if (model.names[k] == name) return static_cast<ProfileKind>(k);
  }
  return std::nullopt;
}

// True when `name` is a profile of any known model; used to validate requests before any node
// reports its model.
inline bool IsKnownProfileName(std::string_view name) {
  for (const ModelProfiles& m : table::kModels) {
    if (FindProfile(m, name)) return true;
  }
  return false;
}

// The compute share of an instance in milli-GPUs.
inline int32_t ComputeMilli(ProfileKind kind) {
  return static_cast<int32_t>(Shape(kind).compute_slices * 1000 / kComputeSlices);
}

// The memory of an instance on a GPU with `gpu_memory_mib` of memory.
inline int64_t InstanceMemoryMib(const ModelProfiles& model, ProfileKind kind,
                                 int64_t gpu_memory_mib) {
  const int64_t published = model.memory_mib[static_cast<int>(kind)];
  if (published > 0) return published;
  return gpu_memory_mib * Shape(kind).memory_slices / kMemorySlices;
}

// The least memory an instance of profile `name` has on any model that names a profile so: what
// a request for it is charged against quotas before a GPU is chosen. 0 when a model with that
// name publishes no figure (its instances' memory depends on the GPU's) or no model has it.
inline int64_t LeastInstanceMemoryMib(std::string_view name) {
  int64_t least = 0;
  for (const ModelProfiles& m : table::kModels) {
    const std::optional<ProfileKind> kind = FindProfile(m, name);
    if (!kind) continue;
    const int64_t published = m.memory_mib[static_cast<int>(*kind)];
    if (published == 0) return 0;
    if (least == 0 || published < least) least = published;
  }
  return least;
}

// One GPU instance of a layout.
struct Instance {
  ProfileKind kind = ProfileKind::k1Slice;
  uint8_t start = 0;  // first memory slice.
  friend bool operator==(const Instance&, const Instance&) = default;
};

// Why a layout is not valid, or empty when it is. A layout is valid when every instance starts
// at an allowed position, no two overlap, their compute slices add up to at most 7, and no kind
// appears more often than its max_per_gpu.
inline std::string LayoutError(std::span<const Instance> layout) {
  if (layout.size() > static_cast<size_t>(kMaxInstances)) {
    return "more than " + std::to_string(kMaxInstances) + " instances";
  }
  uint32_t used_slices = 0;
  int compute = 0;
  std::array<int, kNumProfileKinds> count{};
  for (const Instance& instance : layout) {
    const ProfileShape& shape = Shape(instance.kind);
    if (instance.start >= kMemorySlices || !((shape.allowed_starts >> instance.start) & 1u)) {
      return "an instance of kind " + std::to_string(static_cast<int>(instance.kind)) +
             " cannot start at memory slice " + std::to_string(instance.start);
    }
    const uint32_t span = ((1u << shape.memory_slices) - 1) << instance.start;
    if (used_slices & span) {
      return "instances overlap at memory slice " + std::to_string(instance.start);
    }
    used_slices |= span;
    compute += shape.compute_slices;
    if (++count[static_cast<int>(instance.kind)] > shape.max_per_gpu) {
      return "more than " + std::to_string(shape.max_per_gpu) + " instances of kind " +
             std::to_string(static_cast<int>(instance.kind));
    }
  }
  if (compute > kComputeSlices) {
    return "the instances need " + std::to_string(compute) + " compute slices, the GPU has " +
           std::to_string(kComputeSlices);
  }
  return "";
}
inline bool IsValidLayout(std::span<const Instance> layout) { return LayoutError(layout).empty(); }

}  // namespace tessera::mig
