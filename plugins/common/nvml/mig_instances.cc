#include "nvml/mig_instances.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

namespace tessera::nvml {
namespace {

using mig::ProfileKind;

// The compute instance profiles there are (1, 2, 3, 4 and 7 slices), by enum.
constexpr std::array<unsigned, 5> kComputeProfileEnums = {
    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
    NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
    NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE};

bool Fail(std::string* error, const std::string& what, NvmlLibrary& nvml, nvmlReturn_t result) {
  if (error) *error = what + ": " + nvml.ErrorString(result);
  return false;
}

// The "MIG-" UUID of each (GPU instance id, compute instance id) of `device`.
std::map<std::pair<unsigned, unsigned>, std::string> MigUuids(NvmlLibrary& nvml,
                                                              nvmlDevice_t device) {
  std::map<std::pair<unsigned, unsigned>, std::string> uuids;
  if (!nvml.DeviceGetMaxMigDeviceCount || !nvml.DeviceGetMigDeviceHandleByIndex ||
      !nvml.DeviceGetGpuInstanceId || !nvml.DeviceGetComputeInstanceId) {
    return uuids;
  }
  unsigned count = 0;
  if (nvml.DeviceGetMaxMigDeviceCount(device, &count) != NVML_SUCCESS) return uuids;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t mig_device = nullptr;
    // NOT_FOUND past the last device that exists; the numbering has no gaps.
    if (nvml.DeviceGetMigDeviceHandleByIndex(device, i, &mig_device) != NVML_SUCCESS) break;
    unsigned gi = 0, ci = 0;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (nvml.DeviceGetGpuInstanceId(mig_device, &gi) == NVML_SUCCESS &&
        nvml.DeviceGetComputeInstanceId(mig_device, &ci) == NVML_SUCCESS &&
        nvml.DeviceGetUUID(mig_device, uuid, sizeof(uuid)) == NVML_SUCCESS) {
      uuids[{gi, ci}] = uuid;
    }
  }
  return uuids;
}

}  // namespace

unsigned GpuInstanceProfileEnum(ProfileKind kind) {
  switch (kind) {
    case ProfileKind::k1Slice:
      return NVML_GPU_INSTANCE_PROFILE_1_SLICE;
    case ProfileKind::k1SliceMedia:
      return NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1;
    case ProfileKind::k1SliceDoubleMem:
      return NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2;
    case ProfileKind::k2Slice:
      return NVML_GPU_INSTANCE_PROFILE_2_SLICE;
    case ProfileKind::k3Slice:
      return NVML_GPU_INSTANCE_PROFILE_3_SLICE;
    case ProfileKind::k4Slice:
      return NVML_GPU_INSTANCE_PROFILE_4_SLICE;
    case ProfileKind::k7Slice:
      return NVML_GPU_INSTANCE_PROFILE_7_SLICE;
  }
  return NVML_GPU_INSTANCE_PROFILE_1_SLICE;
}

unsigned ComputeInstanceProfileEnum(int compute_slices) {
  switch (compute_slices) {
    case 2:
      return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3:
      return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4:
      return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    case 7:
      return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
    default:
      return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
  }
}

bool ListComputeInstances(NvmlLibrary& nvml, nvmlGpuInstance_t gi,
                          std::vector<ComputeInstanceRef>* out, std::string* error) {
  out->clear();
  for (unsigned profile : kComputeProfileEnums) {
    nvmlComputeInstanceProfileInfo_t info{};
    const nvmlReturn_t r = nvml.GpuInstanceGetComputeInstanceProfileInfo(
        gi, profile, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (r == NVML_ERROR_NOT_SUPPORTED) continue;  // this GPU instance has no such profile.
    if (r != NVML_SUCCESS) return Fail(error, "compute instance profile info", nvml, r);
    std::array<nvmlComputeInstance_t, mig::kComputeSlices> cis{};
    unsigned count = static_cast<unsigned>(cis.size());
    const nvmlReturn_t listed =
        nvml.GpuInstanceGetComputeInstances(gi, info.id, cis.data(), &count);
    if (listed != NVML_SUCCESS) return Fail(error, "listing compute instances", nvml, listed);
    for (unsigned i = 0; i < count; ++i) {
      nvmlComputeInstanceInfo_t ci{};
      const nvmlReturn_t got = nvml.ComputeInstanceGetInfo(cis[i], &ci);
      if (got != NVML_SUCCESS) return Fail(error, "compute instance info", nvml, got);
      out->push_back({ci.id, cis[i]});
    }
  }
  std::sort(out->begin(), out->end(),
            [](const ComputeInstanceRef& a, const ComputeInstanceRef& b) { return a.id < b.id; });
  return true;
}

bool GpuInstanceProfileId(NvmlLibrary& nvml, nvmlDevice_t device, ProfileKind kind, unsigned* id,
                          std::string* error) {
  nvmlGpuInstanceProfileInfo_t info{};
  const nvmlReturn_t r =
      nvml.DeviceGetGpuInstanceProfileInfo(device, GpuInstanceProfileEnum(kind), &info);
  if (r != NVML_SUCCESS) return Fail(error, "GPU instance profile info", nvml, r);
  *id = info.id;
  return true;
}

bool ReadMigInstances(NvmlLibrary& nvml, nvmlDevice_t device, const mig::ModelProfiles& model,
                      std::vector<MigInstanceState>* out, std::string* error) {
  out->clear();
  const std::map<std::pair<unsigned, unsigned>, std::string> uuids = MigUuids(nvml, device);
  for (int k = 0; k < mig::kNumProfileKinds; ++k) {
    const auto kind = static_cast<ProfileKind>(k);
    nvmlGpuInstanceProfileInfo_t info{};
    const nvmlReturn_t r =
        nvml.DeviceGetGpuInstanceProfileInfo(device, GpuInstanceProfileEnum(kind), &info);
    if (r == NVML_ERROR_NOT_SUPPORTED) continue;  // the GPU has no such profile.
    if (r != NVML_SUCCESS) return Fail(error, "GPU instance profile info", nvml, r);
    std::array<nvmlGpuInstance_t, mig::kMaxInstances> gis{};
    unsigned count = static_cast<unsigned>(gis.size());
    const nvmlReturn_t listed = nvml.DeviceGetGpuInstances(device, info.id, gis.data(), &count);
    if (listed != NVML_SUCCESS) return Fail(error, "listing GPU instances", nvml, listed);
    for (unsigned i = 0; i < count; ++i) {
      nvmlGpuInstanceInfo_t gi{};
      const nvmlReturn_t got = nvml.GpuInstanceGetInfo(gis[i], &gi);
      if (got != NVML_SUCCESS) return Fail(error, "GPU instance info", nvml, got);
      MigInstanceState& state = out->emplace_back();
      state.instance = {kind, static_cast<uint8_t>(gi.placement.start)};
      state.profile = std::string(model.names[k]);
      state.gpu_instance_id = gi.id;
      state.handle = gis[i];
      std::vector<ComputeInstanceRef> cis;
      if (!ListComputeInstances(nvml, gis[i], &cis, error)) return false;
      if (!cis.empty()) {
        state.has_compute_instance = true;
        state.compute_instance_id = cis.front().id;
        auto uuid = uuids.find({gi.id, cis.front().id});
        if (uuid != uuids.end()) state.uuid = uuid->second;
      }
    }
  }
  std::sort(out->begin(), out->end(), [](const MigInstanceState& a, const MigInstanceState& b) {
    return a.instance.start < b.instance.start;
  });
  return true;
}

bool CompleteComputeInstances(NvmlLibrary& nvml, nvmlDevice_t device,
                              std::vector<MigInstanceState>* instances, std::string* error) {
  bool made = false;
  for (MigInstanceState& state : *instances) {
    if (state.has_compute_instance) continue;
    const int slices = mig::Shape(state.instance.kind).compute_slices;
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t r = nvml.GpuInstanceGetComputeInstanceProfileInfo(
        state.handle, ComputeInstanceProfileEnum(slices),
        NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (r != NVML_SUCCESS) {
      return Fail(error, "compute instance profile of " + state.profile, nvml, r);
    }
    nvmlComputeInstance_t ci = nullptr;
    r = nvml.GpuInstanceCreateComputeInstance(state.handle, info.id, &ci);
    if (r != NVML_SUCCESS) {
      return Fail(error,
                  "creating the compute instance of " + state.profile + " at " +
                      std::to_string(state.instance.start),
                  nvml, r);
    }
    nvmlComputeInstanceInfo_t ci_info{};
    if (nvml.ComputeInstanceGetInfo(ci, &ci_info) == NVML_SUCCESS) {
      state.compute_instance_id = ci_info.id;
    }
    state.has_compute_instance = true;
    made = true;
  }
  if (!made) return true;
  const std::map<std::pair<unsigned, unsigned>, std::string> uuids = MigUuids(nvml, device);
  for (MigInstanceState& state : *instances) {
    auto uuid = uuids.find({state.gpu_instance_id, state.compute_instance_id});
    if (uuid != uuids.end()) state.uuid = uuid->second;
  }
  return true;
}

}  // namespace tessera::nvml
