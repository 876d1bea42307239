// The GPUs of this machine as NVML reports them, in the terms of a node's inventory
// (v1::GpuDevice): model (the SDK's name for the driver's device name), memory, UUID, PCI bus id,
// NVLink domain, and for a GPU in MIG mode its current layout with each instance's "MIG-" UUID.
//
// MIG mode has a current and a pending value (a change can wait for a GPU reset): a GPU is
// reported as a MIG GPU when MIG is on now, whatever is pending, and the pending value is part
// of what is read so that the backend can say so. Instances that exist are adopted as they are,
// including those in use: nothing here changes the GPU.
//
// NVLink domains: GPUs joined by an active NVLink, directly or through NVSwitches, share a domain
// (named by the lowest index in it); a GPU without NVLink is a domain of its own.
#pragma once

#include <string>
#include <vector>

#include "nvml/nvml_library.h"
#include "tessera/v1/node.pb.h"

namespace tessera::nvml {

struct NvmlGpu {
  nvmlDevice_t handle = nullptr;
  std::string device_name;   // as the driver names it, "NVIDIA H100 80GB HBM3".
  std::string pci_bus_id;    // "00000000:3B:00.0"; empty when the driver does not say.
  bool mig_capable = false;  // the driver answers MIG mode queries for this GPU.
  unsigned mig_current = NVML_DEVICE_MIG_DISABLE;
  unsigned mig_pending = NVML_DEVICE_MIG_DISABLE;
  // index, model, memory_mib, uuid, nvlink_domain, healthy; for a MIG GPU sharing =
  // GPU_SHARING_MIG, mig_instances and instances (mig_managed is the backend's to set).
  v1::GpuDevice device;
};

struct NvmlInventory {
  std::string driver_version;
  std::vector<NvmlGpu> gpus;
};

// Reads every GPU. False with the reason when NVML fails on a call every GPU answers (count,
// handle, name, memory, UUID); a GPU whose MIG layout cannot be read is reported without
// instances, and its problem is added to *warnings.
bool ReadNvmlInventory(NvmlLibrary& nvml, NvmlInventory* out, std::vector<std::string>* warnings,
                       std::string* error);

}  // namespace tessera::nvml
