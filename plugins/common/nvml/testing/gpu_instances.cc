// The fake NVML's MIG mode and GPU instances. MIG mode has a current and a pending value: a
// change applies at once on an idle GPU (as nvidia-smi's reset does), stays pending with IN_USE
// while processes run, or, with "needs_reset" in the state file, stays pending with
// RESET_REQUIRED until the state file says otherwise; without "root", NO_PERMISSION. GPU
// instances are created as the driver checks them: MIG mode off -> NOT_SUPPORTED, a start the
// profile cannot use -> INVALID_ARGUMENT, overlapping memory slices, the profile's instance
// limit or no compute slices left -> INSUFFICIENT_RESOURCES; destroying one that still has
// compute instances or processes -> IN_USE.
//
// Where it differs from the real driver: GPU instance ids are the lowest free id from 1, and a
// creation without placement takes the lowest free start; the driver chooses both its own way,
// which callers must not assume. The remaining capacity counts instances placed one after
// another at the lowest free start. MIG mode toggles no real reset.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "nvml/nvml_api.h"
#include "nvml/testing/handles.h"
#include "nvml/testing/hardware_model.h"
#include "nvml/testing/state_file.h"

namespace tessera::fake_nvml {
namespace {

// Memory slices and compute slices the GPU's instances hold.
std::pair<uint32_t, unsigned> Used(json& gpu) {
  uint32_t memory = 0;
  unsigned compute = 0;
  for (json& gi : Instances(gpu)) {
    const int row = RowOfId(gi.value("profile_id", 0u));
    if (row < 0) continue;
    memory |= SliceMask(gi.value("start", 0u), kRows[row].memory_slices);
    compute += kRows[row].compute_slices;
  }
  return {memory, compute};
}

unsigned CountOfProfile(json& gpu, unsigned id) {
  unsigned n = 0;
  for (json& gi : Instances(gpu)) n += gi.value("profile_id", ~0u) == id ? 1 : 0;
  return n;
}

// Whether a new instance of row `r` may start at `start` now.
nvmlReturn_t CheckRoom(json& gpu, const ProfileRow& r, unsigned start) {
  if (start >= kMemorySlices || !((r.starts >> start) & 1u)) return NVML_ERROR_INVALID_ARGUMENT;
  auto [memory, compute] = Used(gpu);
  if (memory & SliceMask(start, r.memory_slices)) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (compute + r.compute_slices > kComputeSlices) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (CountOfProfile(gpu, r.id) >= r.instance_count) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  return NVML_SUCCESS;
}

nvmlReturn_t CreateGi(nvmlDevice_t device, unsigned profile_id,
                      const nvmlGpuInstancePlacement_t* placement, nvmlGpuInstance_t* out) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (out == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  const char* call = placement != nullptr ? "nvmlDeviceCreateGpuInstanceWithPlacement"
                                          : "nvmlDeviceCreateGpuInstance";
  if (nvmlReturn_t fault = InjectedFault(state, call); fault != NVML_SUCCESS) return fault;
  json& gpu = *r.gpu;
  if (MigCurrent(gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  const int row = RowOfId(profile_id);
  if (row < 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::optional<unsigned> start;
  if (placement != nullptr) {
    if (placement->size != kRows[row].memory_slices) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t ret = CheckRoom(gpu, kRows[row], placement->start); ret != NVML_SUCCESS) {
      return ret;
    }
    start = placement->start;
  } else {
    for (unsigned s = 0; s < kMemorySlices && !start; ++s) {
      if (CheckRoom(gpu, kRows[row], s) == NVML_SUCCESS) start = s;
    }
    if (!start) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  unsigned id = 1;
  while (FindGi(gpu, id) != nullptr) ++id;
  Instances(gpu).push_back({{"id", id},
                            {"profile_id", profile_id},
                            {"start", *start},
                            {"processes", 0},
                            {"compute_instances", json::array()}});
  state.Save();
  *out = reinterpret_cast<nvmlGpuInstance_t>(HandleFor(Kind::kGpuInstance, r.handle->gpu, id));
  return NVML_SUCCESS;
}

}  // namespace
}  // namespace tessera::fake_nvml

using namespace tessera::fake_nvml;  // NOLINT: the definitions below are NVML's C functions.

// --- MIG mode.

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                                   unsigned int* pending) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (current == nullptr || pending == nullptr || r.handle->kind != Kind::kGpu) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *current = MigCurrent(*r.gpu);
  *pending = r.gpu->value("mig_pending", *current);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                                   nvmlReturn_t* activation_status) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (activation_status == nullptr || r.handle->kind != Kind::kGpu ||
      (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  json& gpu = *r.gpu;
  if (mode == NVML_DEVICE_MIG_DISABLE && !Instances(gpu).empty()) return NVML_ERROR_IN_USE;
  gpu["mig_pending"] = mode;
  if (gpu.value("processes", 0u) > 0) {
    *activation_status = NVML_ERROR_IN_USE;
  } else if (state.needs_reset()) {
    *activation_status = NVML_ERROR_RESET_REQUIRED;
  } else {
    gpu["mig_current"] = mode;
    *activation_status = NVML_SUCCESS;
  }
  state.Save();
  return NVML_SUCCESS;
}

// --- GPU instances.

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t* info) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (info == nullptr || r.handle->kind != Kind::kGpu ||
      profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const ProfileRow* row = RowByEnum(profile);
  const Model* model = ModelOf(*r.gpu);
  if (row == nullptr || model == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  const int i = static_cast<int>(row - kRows);
  *info = {};
  info->id = row->id;
  info->isP2pSupported = 0;
  info->sliceCount = row->compute_slices;
  info->instanceCount = row->instance_count;
  info->multiprocessorCount = model->sms[i];
  info->memorySizeMB = model->memory_mb[i];
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profile_id, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigCurrent(*r.gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  const int row = RowOfId(profile_id);
  if (row < 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<nvmlGpuInstancePlacement_t> all;
  for (unsigned s = 0; s < kMemorySlices; ++s) {
    if ((kRows[row].starts >> s) & 1u) all.push_back({s, kRows[row].memory_slices});
  }
  if (placements == nullptr) {  // a query of the count.
    *count = static_cast<unsigned>(all.size());
    return NVML_SUCCESS;
  }
  if (*count < all.size()) {
    *count = static_cast<unsigned>(all.size());
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  std::copy(all.begin(), all.end(), placements);
  *count = static_cast<unsigned>(all.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                                        unsigned int profile_id,
                                                                        unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigCurrent(*r.gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  const int row = RowOfId(profile_id);
  if (row < 0) return NVML_ERROR_INVALID_ARGUMENT;
  // How many more fit, placed one after another at the lowest free start.
  json copy = *r.gpu;
  unsigned n = 0;
  for (bool placed = true; placed;) {
    placed = false;
    for (unsigned s = 0; s < kMemorySlices && !placed; ++s) {
      if (CheckRoom(copy, kRows[row], s) == NVML_SUCCESS) {
        Instances(copy).push_back({{"id", 1000 + n}, {"profile_id", profile_id}, {"start", s}});
        placed = true;
        ++n;
      }
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device,
                                                          unsigned int profile_id,
                                                          nvmlGpuInstance_t* gpu_instance) {
  return CreateGi(device, profile_id, nullptr, gpu_instance);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profile_id, const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpu_instance) {
  if (placement == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return CreateGi(device, profile_id, placement, gpu_instance);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpu_instance) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (r.handle->kind != Kind::kGpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  if (nvmlReturn_t fault = InjectedFault(state, "nvmlGpuInstanceDestroy"); fault != NVML_SUCCESS) {
    return fault;
  }
  if (!ComputeInstances(*r.gi).empty() || r.gi->value("processes", 0u) > 0) {
    return NVML_ERROR_IN_USE;
  }
  json& list = Instances(*r.gpu);
  const unsigned id = r.handle->gi;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [id](const json& gi) { return gi.value("id", 0u) == id; }),
             list.end());
  state.Save();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device,
                                                        unsigned int profile_id,
                                                        nvmlGpuInstance_t* gpu_instances,
                                                        unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigCurrent(*r.gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  if (RowOfId(profile_id) < 0) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<unsigned> ids;
  for (json& gi : Instances(*r.gpu)) {
    if (gi.value("profile_id", ~0u) == profile_id) ids.push_back(gi.value("id", 0u));
  }
  if (gpu_instances == nullptr || *count < ids.size()) {
    const bool asked_count = gpu_instances == nullptr;
    *count = static_cast<unsigned>(ids.size());
    return asked_count ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    gpu_instances[i] =
        reinterpret_cast<nvmlGpuInstance_t>(HandleFor(Kind::kGpuInstance, r.handle->gpu, ids[i]));
  }
  *count = static_cast<unsigned>(ids.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpu_instance,
                                                     nvmlGpuInstanceInfo_t* info) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (info == nullptr || r.handle->kind != Kind::kGpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  const int row = RowOfId(r.gi->value("profile_id", 0u));
  info->device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, r.handle->gpu));
  info->id = r.handle->gi;
  info->profileId = r.gi->value("profile_id", 0u);
  info->placement = {r.gi->value("start", 0u), row >= 0 ? kRows[row].memory_slices : 0};
  return NVML_SUCCESS;
}
