#include "nvml/gpu_inventory.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "nvml/mig_partitioner.h"
#include "tessera/gpu/model_names.h"

namespace tessera::nvml {
namespace {

bool Fail(std::string* error, const std::string& what, NvmlLibrary& nvml, nvmlReturn_t result) {
  if (error) *error = what + ": " + nvml.ErrorString(result);
  return false;
}

// What each active NVLink of GPU `device` ends at: a PCI bus id of a GPU, or "switch".
std::vector<std::string> NvLinkEnds(NvmlLibrary& nvml, nvmlDevice_t device) {
  std::vector<std::string> ends;
  if (!nvml.DeviceGetNvLinkState || !nvml.DeviceGetNvLinkRemotePciInfo) return ends;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    const nvmlReturn_t r = nvml.DeviceGetNvLinkState(device, link, &active);
    if (r == NVML_ERROR_NOT_SUPPORTED) break;  // no NVLink on this GPU.
    if (r != NVML_SUCCESS) break;              // past the GPU's links (INVALID_ARGUMENT).
    if (active != NVML_FEATURE_ENABLED) continue;
    nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_GPU;
    if (nvml.DeviceGetNvLinkRemoteDeviceType &&
        nvml.DeviceGetNvLinkRemoteDeviceType(device, link, &type) == NVML_SUCCESS &&
        type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      ends.push_back("switch");
      continue;
    }
    nvmlPciInfo_t pci{};
    if (nvml.DeviceGetNvLinkRemotePciInfo(device, link, &pci) == NVML_SUCCESS) {
      ends.push_back(pci.busId);
    }
  }
  return ends;
}

void AssignNvLinkDomains(NvmlLibrary& nvml, std::vector<NvmlGpu>* gpus) {
  const int count = static_cast<int>(gpus->size());
  std::vector<int> parent(count);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int g) {
    while (parent[g] != g) g = parent[g] = parent[parent[g]];
    return g;
  };
  auto join = [&](int a, int b) {
    const int ra = root(a), rb = root(b);
    parent[std::max(ra, rb)] = std::min(ra, rb);
  };
  std::map<std::string, int> by_bus_id;
  for (int g = 0; g < count; ++g) {
    if (!(*gpus)[g].pci_bus_id.empty()) by_bus_id[(*gpus)[g].pci_bus_id] = g;
  }
  int first_on_switch = -1;
  for (int g = 0; g < count; ++g) {
    for (const std::string& end : NvLinkEnds(nvml, (*gpus)[g].handle)) {
      if (end == "switch") {
        if (first_on_switch < 0) first_on_switch = g;
        join(g, first_on_switch);
      } else if (auto peer = by_bus_id.find(end); peer != by_bus_id.end()) {
        join(g, peer->second);
      }
    }
  }
  for (int g = 0; g < count; ++g) (*gpus)[g].device.set_nvlink_domain(root(g));
}

}  // namespace

bool ReadNvmlInventory(NvmlLibrary& nvml, NvmlInventory* out, std::vector<std::string>* warnings,
                       std::string* error) {
  out->gpus.clear();
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (nvml.SystemGetDriverVersion(version, sizeof(version)) == NVML_SUCCESS) {
    out->driver_version = version;
  }
  unsigned count = 0;
  if (nvmlReturn_t r = nvml.DeviceGetCount(&count); r != NVML_SUCCESS) {
    return Fail(error, "counting GPUs", nvml, r);
  }
  MigPartitioner partitioner(nvml);
  for (unsigned i = 0; i < count; ++i) {
    const std::string which = "GPU " + std::to_string(i);
    NvmlGpu& gpu = out->gpus.emplace_back();
    if (nvmlReturn_t r = nvml.DeviceGetHandleByIndex(i, &gpu.handle); r != NVML_SUCCESS) {
      return Fail(error, which + ": handle", nvml, r);
    }
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (nvmlReturn_t r = nvml.DeviceGetName(gpu.handle, name, sizeof(name)); r != NVML_SUCCESS) {
      return Fail(error, which + ": name", nvml, r);
    }
    gpu.device_name = name;
    nvmlMemory_t memory{};
    if (nvmlReturn_t r = nvml.DeviceGetMemoryInfo(gpu.handle, &memory); r != NVML_SUCCESS) {
      return Fail(error, which + ": memory", nvml, r);
    }
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (nvmlReturn_t r = nvml.DeviceGetUUID(gpu.handle, uuid, sizeof(uuid)); r != NVML_SUCCESS) {
      return Fail(error, which + ": UUID", nvml, r);
    }
    nvmlPciInfo_t pci{};
    if (nvml.DeviceGetPciInfo && nvml.DeviceGetPciInfo(gpu.handle, &pci) == NVML_SUCCESS) {
      gpu.pci_bus_id = pci.busId;
    }
    v1::GpuDevice& device = gpu.device;
    device.set_index(static_cast<int32_t>(i));
    device.set_memory_mib(static_cast<int64_t>(memory.total >> 20));
    device.set_model(model_names::FromDeviceName(gpu.device_name, device.memory_mib()));
    device.set_uuid(uuid);
    device.set_healthy(true);

    if (nvml.DeviceGetMigMode &&
        nvml.DeviceGetMigMode(gpu.handle, &gpu.mig_current, &gpu.mig_pending) == NVML_SUCCESS) {
      gpu.mig_capable = true;
    }
    if (gpu.mig_current != NVML_DEVICE_MIG_ENABLE) continue;
    device.set_sharing(v1::GPU_SHARING_MIG);
    v1::PartitionLayout layout;
    std::string why;
    if (!nvml.HasMig() || !partitioner.Describe(gpu.handle, device.model(), &layout,
                                                device.mutable_instances(), &why)) {
      warnings->push_back(which + " (" + device.model() + ") is in MIG mode but its instances " +
                          "cannot be read: " + (why.empty() ? "this driver lacks MIG calls" : why));
      continue;
    }
    *device.mutable_mig_instances() = layout.mig_instances();
  }
  AssignNvLinkDomains(nvml, &out->gpus);
  return true;
}

}  // namespace tessera::nvml
