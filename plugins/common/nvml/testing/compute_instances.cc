// The fake NVML's compute instances: the compute instance profiles a GPU instance offers (ids
// equal to their NVML enum, 1, 2, 3, 4 or 7 slices as hardware_model.h allows), and their
// creation, listing, information and destruction. Creating one needs root and free compute
// slices in its GPU instance (else INSUFFICIENT_RESOURCES); destroying one is IN_USE while its
// GPU instance has processes.
//
// Where it differs from the real driver: compute instances are placed first fit within their GPU
// instance, ids are the lowest free from 0, only the shared engine profile exists, and a compute
// instance's multiprocessors are its share of its GPU instance's.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "nvml/nvml_api.h"
#include "nvml/testing/handles.h"
#include "nvml/testing/hardware_model.h"
#include "nvml/testing/state_file.h"

using namespace tessera::fake_nvml;  // NOLINT: the definitions below are NVML's C functions.

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpu_instance, unsigned int profile, unsigned int eng_profile,
    nvmlComputeInstanceProfileInfo_t* info) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (info == nullptr || r.handle->kind != Kind::kGpuInstance ||
      eng_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const int row = RowOfId(r.gi->value("profile_id", 0u));
  const unsigned ci_slices = CiSlicesOfProfile(profile);
  if (row < 0 || ci_slices == 0 || !CiProfileAllowed(ci_slices, kRows[row].compute_slices)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  const Model* model = ModelOf(*r.gpu);
  *info = {};
  info->id = profile;  // compute instance profile IDs equal their enum.
  info->sliceCount = ci_slices;
  info->instanceCount = kRows[row].compute_slices / ci_slices;
  info->multiprocessorCount = model ? model->sms[row] * ci_slices / kRows[row].compute_slices : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
                                     nvmlComputeInstance_t* compute_instance) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (compute_instance == nullptr || r.handle->kind != Kind::kGpuInstance) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  if (nvmlReturn_t fault = InjectedFault(state, "nvmlGpuInstanceCreateComputeInstance");
      fault != NVML_SUCCESS) {
    return fault;
  }
  const int row = RowOfId(r.gi->value("profile_id", 0u));
  const unsigned size = CiSlicesOfProfile(profile_id);
  if (row < 0 || size == 0 || !CiProfileAllowed(size, kRows[row].compute_slices)) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  uint32_t used = 0;
  for (json& ci : ComputeInstances(*r.gi)) {
    used |= SliceMask(ci.value("start", 0u), ci.value("size", 1u));
  }
  std::optional<unsigned> start;
  for (unsigned s = 0; s + size <= kRows[row].compute_slices && !start; ++s) {
    if ((used & SliceMask(s, size)) == 0) start = s;
  }
  if (!start) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  unsigned id = 0;
  while (FindCi(*r.gi, id) != nullptr) ++id;
  ComputeInstances(*r.gi).push_back({{"id", id},
                                     {"profile_id", profile_id},
                                     {"start", *start},
                                     {"size", size},
                                     {"uuid", NewMigUuid(state, r.handle->gpu, *r.gpu)}});
  state.Save();
  *compute_instance = reinterpret_cast<nvmlComputeInstance_t>(
      HandleFor(Kind::kComputeInstance, r.handle->gpu, r.handle->gi, id));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpu_instance, unsigned int profile_id,
                                   nvmlComputeInstance_t* compute_instances, unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, gpu_instance, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  std::vector<unsigned> ids;
  for (json& ci : ComputeInstances(*r.gi)) {
    if (ci.value("profile_id", ~0u) == profile_id) ids.push_back(ci.value("id", 0u));
  }
  if (compute_instances == nullptr || *count < ids.size()) {
    const bool asked_count = compute_instances == nullptr;
    *count = static_cast<unsigned>(ids.size());
    return asked_count ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    compute_instances[i] = reinterpret_cast<nvmlComputeInstance_t>(
        HandleFor(Kind::kComputeInstance, r.handle->gpu, r.handle->gi, ids[i]));
  }
  *count = static_cast<unsigned>(ids.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t compute_instance) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, compute_instance, &r); ret != NVML_SUCCESS) return ret;
  if (r.handle->kind != Kind::kComputeInstance) return NVML_ERROR_INVALID_ARGUMENT;
  if (!state.root()) return NVML_ERROR_NO_PERMISSION;
  if (nvmlReturn_t fault = InjectedFault(state, "nvmlComputeInstanceDestroy");
      fault != NVML_SUCCESS) {
    return fault;
  }
  if (r.gi->value("processes", 0u) > 0) return NVML_ERROR_IN_USE;
  json& list = ComputeInstances(*r.gi);
  const unsigned id = r.handle->ci;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [id](const json& ci) { return ci.value("id", 0u) == id; }),
             list.end());
  state.Save();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t compute_instance,
                                                            nvmlComputeInstanceInfo_t* info) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, compute_instance, &r); ret != NVML_SUCCESS) return ret;
  if (info == nullptr || r.handle->kind != Kind::kComputeInstance) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  info->device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, r.handle->gpu));
  info->gpuInstance = reinterpret_cast<nvmlGpuInstance_t>(
      HandleFor(Kind::kGpuInstance, r.handle->gpu, r.handle->gi));
  info->id = r.handle->ci;
  info->profileId = r.ci->value("profile_id", 0u);
  info->placement = {r.ci->value("start", 0u), r.ci->value("size", 1u)};
  return NVML_SUCCESS;
}
