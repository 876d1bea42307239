#include "model/mig_profiles.h"

namespace tessera::mig {
namespace {

// Placements from `nvidia-smi mig -lgipp` on A100 and H100 (backends-reference.md §1); H200 is
// assumed to follow them.
constexpr std::array<ProfileShape, kNumProfileKinds> kShapes = {{
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
constexpr std::array<ModelProfiles, 4> kModels = {{
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

}  // namespace

const ProfileShape& Shape(ProfileKind kind) { return kShapes[static_cast<int>(kind)]; }

const ModelProfiles* FindModel(std::string_view gpu_model) {
  for (const ModelProfiles& m : kModels) {
    if (m.model == gpu_model) return &m;
  }
  return nullptr;
}

std::optional<ProfileKind> FindProfile(const ModelProfiles& model, std::string_view name) {
  for (int k = 0; k < kNumProfileKinds; ++k) {
    if (model.names[k] == name) return static_cast<ProfileKind>(k);
  }
  return std::nullopt;
}

bool IsKnownProfileName(std::string_view name) {
  for (const ModelProfiles& m : kModels) {
    if (FindProfile(m, name)) return true;
  }
  return false;
}

int32_t ComputeMilli(ProfileKind kind) {
  return static_cast<int32_t>(Shape(kind).compute_slices * 1000 / kComputeSlices);
}

int64_t InstanceMemoryMib(const ModelProfiles& model, ProfileKind kind, int64_t gpu_memory_mib) {
  const int64_t published = model.memory_mib[static_cast<int>(kind)];
  if (published > 0) return published;
  return gpu_memory_mib * Shape(kind).memory_slices / kMemorySlices;
}

int64_t LeastInstanceMemoryMib(std::string_view name) {
  int64_t least = 0;
  for (const ModelProfiles& m : kModels) {
    const std::optional<ProfileKind> kind = FindProfile(m, name);
    if (!kind) continue;
    const int64_t published = m.memory_mib[static_cast<int>(*kind)];
    if (published == 0) return 0;
    if (least == 0 || published < least) least = published;
  }
  return least;
}

std::string LayoutError(std::span<const Instance> layout) {
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

}  // namespace tessera::mig
