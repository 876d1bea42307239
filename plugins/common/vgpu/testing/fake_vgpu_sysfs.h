// FakeVgpuSysfs: an in-process stand-in for the parts of /sys that NVIDIA vGPU on KVM uses,
// backed by a real directory tree (so RootedSysfs reads it too), whose writes react as the
// kernel's mdev core and NVIDIA's vGPU manager driver do (backends-reference.md section 3; kernel
// drivers/vfio/mdev/mdev_sysfs.c and mdev_core.c; NVIDIA vgpu-device-manager pkg/vgpu/vfio).
//
// AddGpu() lays out a GPU in one of three forms:
//   kMdevOnPf    mdev types on the GPU's own function (Turing and older): /sys/class/mdev_bus/<pf>.
//   kMdevOnVfs   mdev types on each SR-IOV VF (Ampere after sriov-manage -e): the PF has virtfnN
//                links, each VF is in /sys/class/mdev_bus and holds at most one device.
//   kVendorVfio  NVIDIA's vendor-specific VFIO (Ada/Hopper, vGPU 17+): VFs with
//                nvidia/creatable_vgpu_types and nvidia/current_vgpu_type, no mdev.
// Types come from the SDK's vGPU table (tessera/gpu/vgpu_types.h): "<prefix> <family>-<GB>C" for
// each framebuffer, max_instance = InstancesPerGpu().
//
// How writes react, as the kernel does:
//   mdev_supported_types/<t>/create: the buffer must be 36 or 37 bytes (a UUID, perhaps with a
//     newline) and a UUID, else EINVAL; a UUID any mdev device has already, EEXIST; no instance
//     available, EUSERS (see below). Then <parent>/<uuid>/ with `remove` and an `mdev_type` link,
//     /sys/bus/mdev/devices/<uuid> and <t>/devices/<uuid> links appear, named in lower case.
//   <device>/remove: kstrtoul(buf, 0) must parse, else EINVAL; 0 does nothing; else the device
//     and its links go.
//   available_instances: max_instance less the GPU's devices for the type in use, and 0 for every
//     other type while one exists (NVIDIA's one type per time-sliced GPU); on a VF parent at most
//     1, and 0 while the VF holds a device.
//   nvidia/current_vgpu_type: a number, else EINVAL; 0 clears the VF; an ID its
//     creatable_vgpu_types does not list, EINVAL; on a VF that holds a type, EBUSY. Free VFs then
//     list only the type in use while the GPU has room for it, and nothing when full.
//   Any other attribute: writing it EACCES, as is reading `create` and `remove` (write-only).
//
// Where it differs from the kernel and NVIDIA's driver:
//   - The errno for create with no instance available is not documented: NVIDIA's driver is
//     closed and reports its own. EUSERS is what the mdev core returned where it counted
//     instances itself (Linux 5.16-6.0); Tessera checks available_instances before writing and
//     does not depend on the value.
//   - Writing a type to a VF that holds one (EBUSY), and what an occupied VF's
//     creatable_vgpu_types shows (here: the header line only), are not documented; the fake's
//     choices are its own. The creatable_vgpu_types header "ID    : vGPU Name" is as NVIDIA's
//     documentation shows it.
//   - Type IDs are made up: mdev types are nvidia-500, nvidia-501, ... and vendor-vfio IDs 1400,
//     1401, ..., each the same for the same name on every GPU as the driver's are; the real ones
//     are per board and per driver release. Only time-sliced C-series (or the given series) types
//     exist: no MIG-backed types, no Q/B/A profiles unless asked for. Descriptions carry
//     framebuffer and max_instance but made-up heads and resolution.
//   - Removing a device that a VM holds open blocks (or fails) in the kernel; here it never does,
//     there being no VM. No iommu_group, driver or vfio-dev links, no uevents, no
//     sriov-manage: VFs exist from AddGpu on. PCI devices are directories, not links into
//     /sys/devices; sysfs's fixed 4096-byte attribute size is not modelled.
//   - Not thread-safe (the kernel serialises writes under its own locks).
//   - FailNextWrite() makes the next write to a path fail with an errno, for tests of how a
//     refusal is reported; the kernel has no such thing.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "vgpu/sysfs.h"

namespace tessera::vgpu::testing {

enum class FakeVgpuForm { kMdevOnPf, kMdevOnVfs, kVendorVfio };

struct FakeGpuModel {
  std::string family = "A100";  // the driver's family in type names ("A100", "A100D", "H100").
  int64_t memory_mib = 40960;
  // Framebuffer sizes of its types, GiB; empty: the SDK's standard sizes that divide the memory
  // (4 5 8 10 20 40 on an A100-40GB, as NVIDIA ships).
  std::vector<int32_t> framebuffers_gib;
  std::string name_prefix = "NVIDIA";  // "GRID" as older drivers name types.
  char series = 'C';

  static FakeGpuModel A100_40GB() { return {}; }
  static FakeGpuModel H100_80GB() { return {"H100", 81920, {}, "NVIDIA", 'C'}; }
};

class FakeVgpuSysfs : public Sysfs {
 public:
  // Makes the tree under a new temporary directory, removed with the fake.
  FakeVgpuSysfs();
  ~FakeVgpuSysfs() override;
  FakeVgpuSysfs(const FakeVgpuSysfs&) = delete;
  FakeVgpuSysfs& operator=(const FakeVgpuSysfs&) = delete;

  // Lays out a GPU at `pf` ("0000:3b:00.0", sysfs form). VF i is at the PF's devfn + 4 + i
  // (0000:3b:00.4, ...), as NVIDIA's first VF offset puts them; `vfs` is ignored for kMdevOnPf.
  void AddGpu(const std::string& pf, const FakeGpuModel& model, FakeVgpuForm form, int vfs = 16);
  // The VF addresses of a GPU added with VFs, by index.
  std::vector<std::string> VfsOf(const std::string& pf) const;

  // The next Write() to exactly `path` fails with `error` and changes nothing.
  void FailNextWrite(const std::string& path, int error);

  // The directory that stands for "/".
  const std::string& root() const { return root_; }

  int Read(const std::string& path, std::string* content) const override;
  int Write(const std::string& path, std::string_view data) override;
  int List(const std::string& path, std::vector<std::string>* names) const override;
  int ReadLink(const std::string& path, std::string* target) const override;
  bool Exists(const std::string& path) const override;

 private:
  struct Type {
    std::string id;  // "nvidia-500", or "1400".
    std::string driver_name;
    int framebuffer_gib = 0;
    int max_instances = 0;
  };
  struct Mdev {
    std::string parent;
    std::string type_id;
  };
  struct Gpu {
    std::string pf;
    FakeVgpuForm form = FakeVgpuForm::kMdevOnPf;
    std::vector<Type> types;
    std::vector<std::string> vfs;
    std::vector<std::string> parents;             // mdev parents.
    std::map<std::string, Mdev> mdevs;            // by UUID.
    std::map<std::string, std::string> vf_types;  // VF -> type ID held ("" when free).
  };

  std::string Host(const std::string& path) const;
  std::string TypeId(const std::string& driver_name, bool mdev);
  int Available(const Gpu& gpu, const std::string& parent, const Type& type) const;
  std::vector<const Type*> Creatable(const Gpu& gpu, const std::string& vf) const;
  void Publish(const Gpu& gpu);
  int MdevCreate(Gpu& gpu, const std::string& parent, const std::string& type_id,
                 std::string_view data);
  int MdevRemove(Gpu& gpu, const std::string& uuid, std::string_view data);
  int SetVfType(Gpu& gpu, const std::string& vf, std::string_view data);
  Gpu* GpuOfParent(const std::string& address);

  std::string root_;
  std::string canonical_root_;
  RootedSysfs files_;
  std::map<std::string, Gpu> gpus_;            // by PF.
  std::map<std::string, std::string> gpu_of_;  // PF or VF address -> PF.
  std::map<std::string, int> type_numbers_;    // "mdev:<name>" / "vfio:<name>" -> number.
  std::map<std::string, int> failures_;
};

}  // namespace tessera::vgpu::testing
