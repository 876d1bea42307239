// What vGPU a GPU offers now, read from sysfs: its form, the types it can create and the vGPU
// devices it has (created by an earlier instance of the backend, or by anyone).
//
// Two forms (backends-reference.md section 3):
//   mdev         mediated devices. The parent is the GPU's own PCI function (Turing and older)
//                or, on Ampere after `sriov-manage -e`, each of its SR-IOV VFs; the kernel lists
//                parents in /sys/class/mdev_bus/<addr>. Types are directories
//                <parent>/mdev_supported_types/<type-id>/ ("nvidia-500") with `name`
//                ("NVIDIA A100-4C"), `available_instances`, `description` (".., max_instance=10"),
//                `device_api`, write-only `create` and `devices/` (one link per device, named by
//                its UUID). A device is /sys/bus/mdev/devices/<uuid>.
//   vendor-vfio  NVIDIA's vendor-specific VFIO (Ada, Hopper and later, vGPU 17+): no mdev. The
//                GPU's SR-IOV VFs (virtfn0..N links of the PF) each have
//                nvidia/creatable_vgpu_types ("<id> : <name>" lines, shrinking as siblings fill)
//                and nvidia/current_vgpu_type (the type ID, 0 for none). A device is the VF.
// A GPU with neither is form none (not in vGPU mode, no vGPU manager driver, SR-IOV not
// enabled).
//
// Pure functions of what the Sysfs reads; any thread that may use the Sysfs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/plugin/plugin.h"
#include "vgpu/sysfs.h"

namespace tessera::vgpu {

enum class VgpuForm { kNone, kMdev, kVendorVfio };

// "none", "mdev", "vendor-vfio".
std::string_view FormName(VgpuForm form);

// A type the GPU can create now.
struct VgpuTypeOffer {
  std::string name;         // the scheduler's name ("A100-4C"); empty when it has none
                            // (MIG-backed, or of another family: vgpu_type_names.h).
  std::string driver_name;  // as the driver shows it: "NVIDIA A100D-4C".
  std::string id;           // mdev: the type directory ("nvidia-500"); vendor-vfio: the type ID.
  // Instances that can be created now: over all parents (at most max_instance less the
  // devices of the type) or the free VFs that list it.
  int available = 0;
  int max_instances = 0;  // mdev: the description's max_instance; 0 when not stated.
  // mdev: the parents whose available_instances is above 0; vendor-vfio: the free VFs that list
  // the type. Where a Create writes, in this order.
  std::vector<std::string> room;
};

// A vGPU device that exists.
struct VgpuDeviceInfo {
  std::string id;           // mdev: the UUID (lower case); vendor-vfio: the VF's address.
  std::string parent;       // the parent's address (mdev), the VF's (vendor-vfio).
  std::string type_id;      // "nvidia-500", or the VF's current_vgpu_type.
  std::string driver_name;  // empty when no file names the type (a VF type ID no list shows).
  std::string name;         // the scheduler's name; empty when unknown or it has none.
  std::string sysfs_path;   // /sys/bus/mdev/devices/<uuid>, or /sys/bus/pci/devices/<vf>.
};

struct GpuVgpuState {
  std::string address;  // the GPU's sysfs PCI address, "0000:3b:00.0".
  VgpuForm form = VgpuForm::kNone;
  std::vector<std::string> parents;     // mdev parents, or the VFs (vendor-vfio), by VF index.
  std::vector<VgpuTypeOffer> types;     // what can be created now, by type id.
  std::vector<VgpuDeviceInfo> devices;  // what exists, by parent then id.
};

// Reads the vGPU state of the GPU at `pci_bus_id` (NVML's "00000000:3B:00.0" or sysfs's form).
// `gpu_family` ("A100", the scheduler's family of the GPU's model) names the types; empty keeps
// the driver's own family. Errors: INVALID_ARGUMENT for a bus id that is not one; NOT_FOUND when
// /sys/bus/pci/devices/<addr> does not exist; UNAVAILABLE naming the file that could not be read
// or parsed. A GPU that offers no vGPU is Ok with form kNone.
[[nodiscard]] plugin::PluginStatus DiscoverGpu(const Sysfs& sysfs, std::string_view pci_bus_id,
                                               std::string_view gpu_family, GpuVgpuState* state);

// The lines of a creatable_vgpu_types file: {id, name} for each "<id> : <name>" line; the
// header ("ID    : vGPU Name") and other lines whose first field is not a number are skipped.
struct CreatableType {
  int id = 0;
  std::string name;
};
std::vector<CreatableType> ParseCreatableTypes(std::string_view content);

// The max_instance of an mdev description ("num_heads=4, ..., max_instance=4"); 0 when absent.
int MaxInstancesOf(std::string_view description);

}  // namespace tessera::vgpu
