// The fake NVML's GPUs as devices: the driver version, how many GPUs there are, their handles
// (by index, or by GPU or MIG UUID), and what a GPU or MIG device says of itself: UUID, name,
// memory and PCI address. Names, total memory and PCI device ids come from hardware_model.cc; a
// MIG device is named "<GPU name> MIG <profile>" and has its profile's memory.
//
// Where it differs from the real driver: the driver version is "550.54.15" unless the state file
// says "driver_version"; GPU i sits on PCI bus 0x10 + i, domain 0, device 0, function 0; used
// memory is the state's "memory_used_mib" (default 0) for a GPU and each of its MIG devices.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "nvml/nvml_api.h"
#include "nvml/testing/handles.h"
#include "nvml/testing/hardware_model.h"
#include "nvml/testing/state_file.h"

using namespace tessera::fake_nvml;  // NOLINT: the definitions below are NVML's C functions.

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  FAKE_NVML_BEGIN(state);
  return CopyString(state.doc().value("driver_version", "550.54.15"), version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  FAKE_NVML_BEGIN(state);
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = state.gpu_count();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  FAKE_NVML_BEGIN(state);
  if (device == nullptr || index >= state.gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, index));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  FAKE_NVML_BEGIN(state);
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < state.gpu_count(); ++i) {
    json& gpu = *state.gpu(i);
    if (GpuUuid(i, gpu) == uuid) {
      *device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, i));
      return NVML_SUCCESS;
    }
    for (auto [gi, ci] : MigDevices(gpu)) {
      if (MigUuid(i, gpu, gi, ci) == uuid) {
        *device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kMigDevice, i, gi, ci));
        return NVML_SUCCESS;
      }
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (r.handle->kind != Kind::kGpu && r.handle->kind != Kind::kMigDevice) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const std::string text = r.handle->kind == Kind::kMigDevice
                               ? MigUuid(r.handle->gpu, *r.gpu, r.handle->gi, r.handle->ci)
                               : GpuUuid(r.handle->gpu, *r.gpu);
  return CopyString(text, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  const Model* model = ModelOf(*r.gpu);
  if (model == nullptr) return NVML_ERROR_UNKNOWN;
  std::string text = model->name;
  if (r.handle->kind == Kind::kMigDevice) {
    const int row = RowOfId(r.gi->value("profile_id", 0u));
    text += std::string(" MIG ") + (row >= 0 ? model->profile_names[row] : "?");
  }
  return CopyString(text, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const Model* model = ModelOf(*r.gpu);
  if (model == nullptr) return NVML_ERROR_UNKNOWN;
  unsigned long long total = model->memory_mib << 20;
  if (r.handle->kind == Kind::kMigDevice) {
    const int row = RowOfId(r.gi->value("profile_id", 0u));
    total = row >= 0 ? model->memory_mb[row] << 20 : 0;
  }
  const unsigned long long used =
      std::min<unsigned long long>(r.gpu->value("memory_used_mib", 0ull) << 20, total);
  *memory = {total, total - used, used};
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (pci == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  const Model* model = ModelOf(*r.gpu);
  std::memset(pci, 0, sizeof(*pci));
  pci->bus = 0x10 + r.handle->gpu;
  pci->pciDeviceId = model ? model->pci_device_id : 0;
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
  std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
  return NVML_SUCCESS;
}
