// The fake NVML's MIG devices: each compute instance seen as a device, with a handle of its own
// (numbered as the driver numbers them: by GPU instance placement, then compute instance id), its
// GPU and compute instance ids, and its parent GPU. A MIG device's UUID, name and memory are
// answered by the device calls (devices.cc), since the driver serves both through one set of
// functions.
//
// Where it differs from the real driver: the maximum MIG device count of a MIG-enabled GPU is
// always 7 (the compute slices), and a handle to a MIG device whose compute instance was
// destroyed is INVALID_ARGUMENT.
#include "nvml/nvml_api.h"
#include "nvml/testing/handles.h"
#include "nvml/testing/hardware_model.h"
#include "nvml/testing/state_file.h"

using namespace tessera::fake_nvml;  // NOLINT: the definitions below are NVML's C functions.

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                             unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  *count = MigCurrent(*r.gpu) == NVML_DEVICE_MIG_ENABLE ? kComputeSlices : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                  unsigned int index,
                                                                  nvmlDevice_t* mig_device) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (mig_device == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if (MigCurrent(*r.gpu) != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
  if (index >= kComputeSlices) return NVML_ERROR_INVALID_ARGUMENT;
  const auto devices = MigDevices(*r.gpu);
  if (index >= devices.size()) return NVML_ERROR_NOT_FOUND;
  *mig_device = reinterpret_cast<nvmlDevice_t>(
      HandleFor(Kind::kMigDevice, r.handle->gpu, devices[index].first, devices[index].second));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                                          unsigned int* is_mig) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  const Handle* h = Get(device);
  if (h == nullptr || is_mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *is_mig = h->kind == Kind::kMigDevice ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (r.handle->kind != Kind::kMigDevice) return NVML_ERROR_NOT_SUPPORTED;
  *id = r.handle->gi;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                                             unsigned int* id) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (r.handle->kind != Kind::kMigDevice) return NVML_ERROR_NOT_SUPPORTED;
  *id = r.handle->ci;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig_device,
                                                                           nvmlDevice_t* device) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, mig_device, &r); ret != NVML_SUCCESS) return ret;
  if (device == nullptr || r.handle->kind != Kind::kMigDevice) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, r.handle->gpu));
  return NVML_SUCCESS;
}
