// VgpuManager: the vGPU devices of one node's GPUs in vGPU mode, one per vGPU task, created for
// the type the scheduler placed and removed when the task ends.
//
// Per GPU: AddGpu() reads what the GPU offers (vgpu_discovery.h: mdev types, or NVIDIA's
// vendor-specific VFIO on SR-IOV VFs) and the devices it has already, which are adopted
// unclaimed: a restarted backend finds the devices of the tasks it adopts. Create() makes one
// device of a scheduler type ("A100-4C") for an owner (the task's key, unique on the node):
//   mdev         writes a UUID derived from the owner (device_uuid.h) to
//                /sys/class/mdev_bus/<parent>/mdev_supported_types/<type-id>/create, on the
//                first parent with available_instances above 0; the device is
//                /sys/bus/mdev/devices/<uuid>.
//   vendor-vfio  writes the type ID to /sys/bus/pci/devices/<vf>/nvidia/current_vgpu_type of the
//                first free VF whose creatable_vgpu_types lists it; the device is the VF.
// and checks that the device is there afterwards. Remove() writes `1` to the mdev device's
// `remove`, or `0` to the VF's current_vgpu_type.
//
// One type per GPU, as the hardware allows: NVIDIA's time-sliced vGPU holds devices of one type
// at a time (the driver shows 0 available for the other types once one exists), so Create()
// refuses another type while any device of a type exists on the GPU, whoever made it.
//
// How the device reaches the task: VgpuTaskEnv() gives
//   TESSERA_VGPU_DEVICE  the mdev UUID, or the VF's PCI address ("0000:3b:00.4")
//   TESSERA_VGPU_SYSFS   /sys/bus/mdev/devices/<uuid>, or /sys/bus/pci/devices/<vf>
//   TESSERA_VGPU_TYPE    the scheduler's type, "A100-4C"
//   TESSERA_VGPU_FORM    "mdev" or "vendor-vfio"
// A vGPU is a device for a virtual machine: the host cannot run CUDA on it. The task is expected
// to be the VM launcher, which hands the device to QEMU (`-device vfio-pci,sysfsdev=
// $TESSERA_VGPU_SYSFS`) or libvirt (a <hostdev type='mdev'> with the UUID, or a PCI hostdev with
// the VF's address). Removing a device a VM still holds blocks or fails in the kernel, so Remove()
// belongs after the task's process has exited.
//
// Not thread-safe: the backend calls it under its own mutex. Every call reads or writes sysfs,
// which is quick (no process runs). Destroying the manager leaves the devices in place (a new one
// adopts them); RemoveAll() removes them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tessera/plugin/plugin.h"
#include "vgpu/sysfs.h"
#include "vgpu/vgpu_discovery.h"

namespace tessera::vgpu {

// A GPU the backend offers in vGPU mode.
struct VgpuGpu {
  int index = 0;           // the backend's GPU index; the key of every other call.
  std::string pci_bus_id;  // NVML's "00000000:3B:00.0" (or the sysfs form).
  std::string model;       // the scheduler's model ("A100-40GB"), whose family names the types;
                           // empty: the driver's own names ("A100D-4C") are used.
};

// A vGPU device.
struct VgpuDevice {
  int gpu = 0;
  VgpuForm form = VgpuForm::kNone;
  std::string type;        // the scheduler's type; empty for an adopted device it has no name for.
  std::string type_id;     // "nvidia-500", or the vendor-vfio type ID.
  std::string id;          // the mdev UUID, or the VF's PCI address.
  std::string sysfs_path;  // /sys/bus/mdev/devices/<uuid>, or /sys/bus/pci/devices/<vf>.
  std::string owner;       // empty: found at AddGpu and not claimed.
};

// The variables above, for the task's environment on top of its own.
std::map<std::string, std::string> VgpuTaskEnv(const VgpuDevice& device);

class VgpuManager {
 public:
  // `sysfs` is not owned and must outlive the manager.
  explicit VgpuManager(Sysfs* sysfs);
  VgpuManager(const VgpuManager&) = delete;
  VgpuManager& operator=(const VgpuManager&) = delete;

  // Reads `gpu` and adopts the devices it has, unclaimed; at Init. Calling it again re-reads the
  // GPU and keeps the owners. Errors: INVALID_ARGUMENT (a negative index, a bad bus id, a GPU
  // added before under another bus id); NOT_FOUND (no such PCI device); FAILED_PRECONDITION (the
  // GPU offers no vGPU: neither mdev types nor VFs with NVIDIA's vGPU sysfs); UNAVAILABLE (a file
  // that could not be read, named). A GPU that failed is not known to the other calls.
  [[nodiscard]] plugin::PluginStatus AddGpu(const VgpuGpu& gpu);

  // Whether `gpu` can hold devices of `type` (a partition layout of GPU_SHARING_VGPU): Ok when
  // the GPU offers the type and holds no device of another type, even if it has no room left.
  // Errors as Create() below, but never RESOURCE_EXHAUSTED.
  [[nodiscard]] plugin::PluginStatus CheckType(int gpu, const std::string& type);

  // Creates a device of `type` on `gpu` for `owner` and says which in *device. An owner that has
  // a device of that type on that GPU already (a repeated launch, or an adopted mdev device with
  // its UUID) gets it back and no second one is made. Errors, each naming the GPU and what failed:
  //   INVALID_ARGUMENT: an empty owner or type;
  //   NOT_FOUND: `gpu` was not added, or it offers no type of that name (the message lists those
  //     it offers);
  //   ALREADY_EXISTS: the owner has a device of another type or GPU;
  //   FAILED_PRECONDITION: the GPU holds devices of another type (one type per GPU);
  //   RESOURCE_EXHAUSTED: no instance of the type left (available_instances 0 everywhere, or no
  //     free VF lists it);
  //   and for a write the kernel refused, the file, what was written and the errno:
  //   RESOURCE_EXHAUSTED (EUSERS, ENOSPC, EDQUOT), PERMISSION_DENIED (EACCES, EPERM), UNAVAILABLE
  //   (EBUSY, EAGAIN, ENODEV), FAILED_PRECONDITION (EINVAL: the driver refused the type),
  //   ALREADY_EXISTS (EEXIST: a device has that UUID, elsewhere), INTERNAL (other errnos, or a
  //   write that succeeded without making the device).
  [[nodiscard]] plugin::PluginStatus Create(int gpu, const std::string& type,
                                            const std::string& owner, VgpuDevice* device);

  // Gives the unclaimed device `device_id` (an mdev UUID or a VF address) of `gpu` to `owner`:
  // for a task adopted after a restart that recorded its device. Claiming what the owner has is
  // Ok. Errors: NOT_FOUND (no such GPU or device), ALREADY_EXISTS (claimed by another owner, or
  // the owner has another device).
  [[nodiscard]] plugin::PluginStatus Claim(const std::string& owner, int gpu,
                                           const std::string& device_id, VgpuDevice* device);

  // Removes the device of `owner`; Ok when it has none, or the device is gone already. An owner
  // this instance does not know whose mdev device exists (its UUID is derived from the owner) is
  // removed too: a task that ended while the backend was down. Errors: the write the kernel
  // refused (codes as Create), or INTERNAL when the device is still there after it; the owner
  // keeps the device, so Remove() can be tried again.
  [[nodiscard]] plugin::PluginStatus Remove(const std::string& owner);

  // Removes every unclaimed device of `gpu` (-1: of every GPU): after the backend has adopted
  // its tasks, the devices left over are those of tasks that are gone. Returns the first error,
  // having tried all.
  [[nodiscard]] plugin::PluginStatus RemoveUnclaimed(int gpu = -1);

  // Removes every device this manager knows, claimed or not. Returns the first error, having
  // tried all.
  [[nodiscard]] plugin::PluginStatus RemoveAll();

  // The devices of `gpu` as last read, claimed and not; empty for a GPU not added.
  std::vector<VgpuDevice> Devices(int gpu) const;
  // The type of the devices of `gpu` ("A100-4C"); empty when it has none (any type may be made).
  std::string TypeInUse(int gpu) const;
  // What `gpu` offered when last read; null for a GPU not added.
  const GpuVgpuState* State(int gpu) const;

 private:
  struct Gpu {
    VgpuGpu gpu;
    std::string family;
    GpuVgpuState state;
    std::map<std::string, std::string> owners;  // device id -> owner.
    // Type id -> {driver name, scheduler name}, of every type the GPU has offered.
    std::map<std::string, std::pair<std::string, std::string>> type_names;
  };
  struct Owned {
    int gpu = 0;
    std::string device_id;
  };

  plugin::PluginStatus Refresh(Gpu& gpu);
  plugin::PluginStatus TypeAllowed(Gpu& gpu, const std::string& type,
                                   const VgpuTypeOffer** offer) const;
  plugin::PluginStatus CreateMdev(Gpu& gpu, const VgpuTypeOffer& offer, const std::string& type,
                                  const std::string& owner, std::string* device_id);
  plugin::PluginStatus CreateOnVf(Gpu& gpu, const VgpuTypeOffer& offer, const std::string& type,
                                  std::string* device_id);
  plugin::PluginStatus RemoveDevice(Gpu& gpu, const VgpuDeviceInfo& device);
  VgpuDevice DeviceOf(const Gpu& gpu, const VgpuDeviceInfo& info) const;
  const VgpuDeviceInfo* FindDevice(const Gpu& gpu, const std::string& device_id) const;

  Sysfs* sysfs_;
  std::map<int, Gpu> gpus_;
  std::map<std::string, Owned> owned_;  // owner -> its device.
};

}  // namespace tessera::vgpu
