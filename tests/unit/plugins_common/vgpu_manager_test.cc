// vGPU devices for placed vGPU tasks (plugins/common/vgpu/vgpu_manager.h) against the fake sysfs:
// a device created for the type the scheduler placed and removed after the task, in each form;
// the environment the task gets; one type per GPU; no instances left; adoption after a restart;
// the kernel's refusals surfaced naming the file; unknown types.
#include <doctest/doctest.h>

#include <cerrno>
#include <filesystem>

#include "vgpu/device_uuid.h"
#include "vgpu/testing/fake_vgpu_sysfs.h"
#include "vgpu/vgpu_manager.h"

namespace tessera::vgpu {
namespace {

using plugin::PluginStatus;
using testing::FakeGpuModel;
using testing::FakeVgpuForm;
using testing::FakeVgpuSysfs;

constexpr char kPf[] = "0000:3b:00.0";
const VgpuGpu kA100{0, "00000000:3B:00.0", "A100-40GB"};
const VgpuGpu kH100{0, "00000000:3B:00.0", "H100-80GB"};

const std::string kFourC = "/sys/class/mdev_bus/0000:3b:00.0/mdev_supported_types/nvidia-500";

std::string ReadOr(const Sysfs& sysfs, const std::string& path) {
  std::string content;
  const int error = sysfs.Read(path, &content);
  return error == 0 ? content : "errno " + std::to_string(error);
}

void Add(VgpuManager& manager, const VgpuGpu& gpu) {
  const PluginStatus status = manager.AddGpu(gpu);
  REQUIRE_MESSAGE(status.ok(), status.message);
}

VgpuDevice MustCreate(VgpuManager& manager, const std::string& type, const std::string& owner) {
  VgpuDevice device;
  const PluginStatus status = manager.Create(0, type, owner, &device);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return device;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("vGPU manager: an mdev vGPU created for a placed vGPU job and removed after it") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
  VgpuManager manager(&sysfs);
  Add(manager, kA100);
  CHECK(manager.TypeInUse(0).empty());

  // The scheduler placed job 7's task 0 on GPU 0 as an A100-4C.
  const VgpuDevice device = MustCreate(manager, "A100-4C", "7-1-0");
  CHECK(device.gpu == 0);
  CHECK(device.form == VgpuForm::kMdev);
  CHECK(device.type == "A100-4C");
  CHECK(device.type_id == "nvidia-500");
  CHECK(device.id == MdevUuidFor("7-1-0"));
  CHECK(device.owner == "7-1-0");
  CHECK(device.sysfs_path == "/sys/bus/mdev/devices/" + device.id);
  CHECK(sysfs.Exists(device.sysfs_path));
  CHECK(sysfs.Exists(kFourC + "/devices/" + device.id));
  CHECK(ReadOr(sysfs, kFourC + "/available_instances") == "9\n");
  CHECK(manager.TypeInUse(0) == "A100-4C");
  REQUIRE(manager.Devices(0).size() == 1);
  CHECK(manager.Devices(0)[0].owner == "7-1-0");

  const std::map<std::string, std::string> env = VgpuTaskEnv(device);
  CHECK(env.at("TESSERA_VGPU_DEVICE") == device.id);
  CHECK(env.at("TESSERA_VGPU_SYSFS") == "/sys/bus/mdev/devices/" + device.id);
  CHECK(env.at("TESSERA_VGPU_TYPE") == "A100-4C");
  CHECK(env.at("TESSERA_VGPU_FORM") == "mdev");

  // A repeated launch gets the same device.
  const VgpuDevice again = MustCreate(manager, "A100-4C", "7-1-0");
  CHECK(again.id == device.id);
  CHECK(ReadOr(sysfs, kFourC + "/available_instances") == "9\n");

  // The task ended.
  PluginStatus status = manager.Remove("7-1-0");
  REQUIRE_MESSAGE(status.ok(), status.message);
  CHECK_FALSE(sysfs.Exists(device.sysfs_path));
  CHECK(ReadOr(sysfs, kFourC + "/available_instances") == "10\n");
  CHECK(manager.Devices(0).empty());
  CHECK(manager.TypeInUse(0).empty());
  CHECK(manager.Remove("7-1-0").ok());  // nothing left to remove.
}

TEST_CASE("vGPU manager: a VF vGPU created for a placed vGPU job and removed after it") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu(kPf, FakeGpuModel::H100_80GB(), FakeVgpuForm::kVendorVfio, 4);
  const std::vector<std::string> vfs = sysfs.VfsOf(kPf);
  VgpuManager manager(&sysfs);
  Add(manager, kH100);

  const VgpuDevice device = MustCreate(manager, "H100-8C", "9-1-0");
  CHECK(device.form == VgpuForm::kVendorVfio);
  CHECK(device.id == vfs[0]);
  CHECK(device.type == "H100-8C");
  CHECK(device.sysfs_path == "/sys/bus/pci/devices/" + vfs[0]);
  CHECK(ReadOr(sysfs, device.sysfs_path + "/nvidia/current_vgpu_type") == device.type_id + "\n");
  CHECK(VgpuTaskEnv(device).at("TESSERA_VGPU_FORM") == "vendor-vfio");
  CHECK(VgpuTaskEnv(device).at("TESSERA_VGPU_DEVICE") == vfs[0]);

  const VgpuDevice second = MustCreate(manager, "H100-8C", "9-1-1");
  CHECK(second.id == vfs[1]);

  PluginStatus status = manager.Remove("9-1-0");
  REQUIRE_MESSAGE(status.ok(), status.message);
  CHECK(ReadOr(sysfs, device.sysfs_path + "/nvidia/current_vgpu_type") == "0\n");
  REQUIRE(manager.Devices(0).size() == 1);
  CHECK(manager.Devices(0)[0].id == vfs[1]);
  REQUIRE(manager.Remove("9-1-1").ok());
  // Every type is creatable again.
  REQUIRE(manager.State(0) != nullptr);
  CHECK(manager.State(0)->types.size() == 8);
}

TEST_CASE("vGPU manager: mdev on the VFs of an Ampere GPU, one device per VF") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnVfs, 16);
  VgpuManager manager(&sysfs);
  Add(manager, kA100);
  const VgpuDevice a = MustCreate(manager, "A100-20C", "a");
  const VgpuDevice b = MustCreate(manager, "A100-20C", "b");
  CHECK(sysfs.Exists("/sys/class/mdev_bus/0000:3b:00.4/mdev_supported_types/nvidia-504/devices/" +
                     a.id));
  CHECK(sysfs.Exists("/sys/class/mdev_bus/0000:3b:00.5/mdev_supported_types/nvidia-504/devices/" +
                     b.id));
  // Two A100-20C fill an A100-40GB, though fourteen VFs are free.
  VgpuDevice device;
  const PluginStatus status = manager.Create(0, "A100-20C", "c", &device);
  CHECK(status.code == TESSERA_RESOURCE_EXHAUSTED);
  CHECK(Contains(status.message, "no A100-20C instance left"));
  REQUIRE(manager.Remove("a").ok());
  REQUIRE(manager.Remove("b").ok());
}

TEST_CASE("vGPU manager: one type per GPU") {
  SUBCASE("mdev") {
    FakeVgpuSysfs sysfs;
    sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
    VgpuManager manager(&sysfs);
    Add(manager, kA100);
    const VgpuDevice first = MustCreate(manager, "A100-4C", "a");
    VgpuDevice device;
    PluginStatus status = manager.Create(0, "A100-8C", "b", &device);
    CHECK(status.code == TESSERA_FAILED_PRECONDITION);
    CHECK(Contains(status.message, "GPU 0 (0000:3b:00.0)"));
    CHECK(Contains(status.message, "holds vGPUs of type A100-4C"));
    CHECK(Contains(status.message, "one type per GPU"));
    CHECK(Contains(status.message, "A100-8C"));
    CHECK(manager.CheckType(0, "A100-8C").code == TESSERA_FAILED_PRECONDITION);
    CHECK(manager.CheckType(0, "A100-4C").ok());
    // Once the GPU is empty, another type can be made.
    REQUIRE(manager.Remove("a").ok());
    CHECK(manager.CheckType(0, "A100-8C").ok());
    MustCreate(manager, "A100-8C", "b");
    CHECK(manager.TypeInUse(0) == "A100-8C");
  }
  SUBCASE("a device someone else made counts") {
    FakeVgpuSysfs sysfs;
    sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
    VgpuManager manager(&sysfs);
    Add(manager, kA100);
    REQUIRE(sysfs.Write(kFourC + "/create", "11111111-2222-3333-4444-555555555555") == 0);
    VgpuDevice device;
    const PluginStatus status = manager.Create(0, "A100-10C", "b", &device);
    CHECK(status.code == TESSERA_FAILED_PRECONDITION);
    CHECK(Contains(status.message, "11111111-2222-3333-4444-555555555555"));
  }
  SUBCASE("vendor-specific VFIO") {
    FakeVgpuSysfs sysfs;
    sysfs.AddGpu(kPf, FakeGpuModel::H100_80GB(), FakeVgpuForm::kVendorVfio, 4);
    VgpuManager manager(&sysfs);
    Add(manager, kH100);
    MustCreate(manager, "H100-8C", "a");
    VgpuDevice device;
    const PluginStatus status = manager.Create(0, "H100-16C", "b", &device);
    CHECK(status.code == TESSERA_FAILED_PRECONDITION);
    CHECK(Contains(status.message, "holds vGPUs of type H100-8C"));
  }
}

TEST_CASE("vGPU manager: no instances left") {
  SUBCASE("mdev: available_instances 0") {
    FakeVgpuSysfs sysfs;
    sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
    VgpuManager manager(&sysfs);
    Add(manager, kA100);
    MustCreate(manager, "A100-40C", "a");
    VgpuDevice device;
    const PluginStatus status = manager.Create(0, "A100-40C", "b", &device);
    CHECK(status.code == TESSERA_RESOURCE_EXHAUSTED);
    CHECK(Contains(status.message, "no A100-40C instance left"));
    CHECK(Contains(status.message, "available_instances is 0"));
    // A layout of the type the GPU is full of is still the GPU's layout.
    CHECK(manager.CheckType(0, "A100-40C").ok());
  }
  SUBCASE("vendor-specific VFIO: no free VF") {
    FakeVgpuSysfs sysfs;
    sysfs.AddGpu(kPf, FakeGpuModel::H100_80GB(), FakeVgpuForm::kVendorVfio, 2);
    VgpuManager manager(&sysfs);
    Add(manager, kH100);
    MustCreate(manager, "H100-4C", "a");
    MustCreate(manager, "H100-4C", "b");
    VgpuDevice device;
    const PluginStatus status = manager.Create(0, "H100-4C", "c", &device);
    CHECK(status.code == TESSERA_RESOURCE_EXHAUSTED);
    CHECK(Contains(status.message, "H100-4C"));
    CHECK(manager.CheckType(0, "H100-4C").ok());
  }
}

TEST_CASE("vGPU manager: a type the GPU does not offer") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
  VgpuManager manager(&sysfs);
  Add(manager, kA100);
  VgpuDevice device;
  PluginStatus status = manager.Create(0, "A100-3C", "a", &device);
  CHECK(status.code == TESSERA_NOT_FOUND);
  CHECK(Contains(status.message, "no vGPU type A100-3C"));
  CHECK(Contains(status.message, "A100-4C, A100-5C, A100-8C, A100-10C, A100-20C, A100-40C"));
  CHECK(manager.Create(0, "H100-4C", "a", &device).code == TESSERA_NOT_FOUND);
  CHECK(manager.CheckType(0, "A100-3C").code == TESSERA_NOT_FOUND);
  CHECK(manager.Create(1, "A100-4C", "a", &device).code == TESSERA_NOT_FOUND);
  CHECK(manager.Create(0, "A100-4C", "", &device).code == TESSERA_INVALID_ARGUMENT);
  CHECK(manager.Devices(0).empty());
}

TEST_CASE("vGPU manager: board-suffixed driver names serve the scheduler's type") {
  FakeVgpuSysfs sysfs;
  FakeGpuModel model;
  model.family = "A100D";
  model.memory_mib = 81920;
  model.name_prefix = "GRID";
  sysfs.AddGpu(kPf, model, FakeVgpuForm::kMdevOnPf);
  VgpuManager manager(&sysfs);
  Add(manager, {0, "00000000:3B:00.0", "A100-80GB"});
  const VgpuDevice device = MustCreate(manager, "A100-16C", "a");
  CHECK(device.type == "A100-16C");
  CHECK(ReadOr(sysfs, device.sysfs_path + "/mdev_type/name") == "GRID A100D-16C\n");
}

TEST_CASE("vGPU manager: a restarted backend adopts the devices") {
  SUBCASE("mdev: found by the owner's UUID") {
    FakeVgpuSysfs sysfs;
    sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
    std::string a_id;
    {
      VgpuManager before(&sysfs);
      Add(before, kA100);
      a_id = MustCreate(before, "A100-4C", "a").id;
      MustCreate(before, "A100-4C", "b");
      MustCreate(before, "A100-4C", "gone");
    }
    VgpuManager manager(&sysfs);
    Add(manager, kA100);
    REQUIRE(manager.Devices(0).size() == 3);
    for (const VgpuDevice& device : manager.Devices(0)) CHECK(device.owner.empty());
    CHECK(manager.TypeInUse(0) == "A100-4C");
    // The one-type rule holds for adopted devices.
    VgpuDevice device;
    CHECK(manager.Create(0, "A100-8C", "c", &device).code == TESSERA_FAILED_PRECONDITION);
    // Task a, adopted, launches again: its device, not a new one.
    CHECK(MustCreate(manager, "A100-4C", "a").id == a_id);
    CHECK(ReadOr(sysfs, kFourC + "/available_instances") == "7\n");
    // Task b ended while the backend was down: its device goes by its name.
    REQUIRE(manager.Remove("b").ok());
    CHECK_FALSE(sysfs.Exists("/sys/bus/mdev/devices/" + MdevUuidFor("b")));
    // What no task claimed goes.
    REQUIRE(manager.RemoveUnclaimed().ok());
    REQUIRE(manager.Devices(0).size() == 1);
    CHECK(manager.Devices(0)[0].id == a_id);
    CHECK(manager.Devices(0)[0].owner == "a");
  }
  SUBCASE("vendor-specific VFIO: claimed by the address the task recorded") {
    FakeVgpuSysfs sysfs;
    sysfs.AddGpu(kPf, FakeGpuModel::H100_80GB(), FakeVgpuForm::kVendorVfio, 4);
    std::string a_vf;
    {
      VgpuManager before(&sysfs);
      Add(before, kH100);
      a_vf = MustCreate(before, "H100-20C", "a").id;
      MustCreate(before, "H100-20C", "b");
    }
    VgpuManager manager(&sysfs);
    Add(manager, kH100);
    REQUIRE(manager.Devices(0).size() == 2);
    CHECK(manager.TypeInUse(0) == "H100-20C");
    VgpuDevice device;
    PluginStatus status = manager.Claim("a", 0, a_vf, &device);
    REQUIRE_MESSAGE(status.ok(), status.message);
    CHECK(device.type == "H100-20C");
    CHECK(device.owner == "a");
    CHECK(manager.Claim("x", 0, a_vf, &device).code == TESSERA_ALREADY_EXISTS);
    CHECK(manager.Claim("x", 0, "0000:3b:09.0", &device).code == TESSERA_NOT_FOUND);
    REQUIRE(manager.RemoveUnclaimed().ok());
    REQUIRE(manager.Devices(0).size() == 1);
    CHECK(manager.Devices(0)[0].id == a_vf);
    REQUIRE(manager.RemoveAll().ok());
    CHECK(manager.Devices(0).empty());
    CHECK(ReadOr(sysfs, "/sys/bus/pci/devices/" + a_vf + "/nvidia/current_vgpu_type") == "0\n");
  }
}

TEST_CASE("vGPU manager: the kernel's refusals name the file and the errno") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
  VgpuManager manager(&sysfs);
  Add(manager, kA100);
  VgpuDevice device;

  sysfs.FailNextWrite(kFourC + "/create", EIO);
  PluginStatus status = manager.Create(0, "A100-4C", "a", &device);
  CHECK(status.code == TESSERA_INTERNAL);
  CHECK(Contains(status.message, "writing \"" + MdevUuidFor("a") + "\" to " + kFourC + "/create"));
  CHECK(Contains(status.message, "(EIO)"));
  CHECK(manager.Devices(0).empty());

  // Someone took the last instance between our read and our write.
  sysfs.FailNextWrite(kFourC + "/create", EUSERS);
  status = manager.Create(0, "A100-4C", "a", &device);
  CHECK(status.code == TESSERA_RESOURCE_EXHAUSTED);
  CHECK(Contains(status.message, "(EUSERS)"));

  sysfs.FailNextWrite(kFourC + "/create", EACCES);
  CHECK(manager.Create(0, "A100-4C", "a", &device).code == TESSERA_PERMISSION_DENIED);

  // A removal the kernel refuses leaves the owner its device, to try again.
  device = MustCreate(manager, "A100-4C", "a");
  sysfs.FailNextWrite(device.sysfs_path + "/remove", EBUSY);
  status = manager.Remove("a");
  CHECK(status.code == TESSERA_UNAVAILABLE);
  CHECK(Contains(status.message, device.sysfs_path + "/remove"));
  CHECK(Contains(status.message, "(EBUSY)"));
  CHECK(sysfs.Exists(device.sysfs_path));
  REQUIRE(manager.Remove("a").ok());
  CHECK_FALSE(sysfs.Exists(device.sysfs_path));

  SUBCASE("on a VF") {
    FakeVgpuSysfs vf_sysfs;
    vf_sysfs.AddGpu(kPf, FakeGpuModel::H100_80GB(), FakeVgpuForm::kVendorVfio, 2);
    VgpuManager vf_manager(&vf_sysfs);
    Add(vf_manager, kH100);
    const std::string path = "/sys/bus/pci/devices/0000:3b:00.4/nvidia/current_vgpu_type";
    vf_sysfs.FailNextWrite(path, EINVAL);
    status = vf_manager.Create(0, "H100-4C", "a", &device);
    CHECK(status.code == TESSERA_FAILED_PRECONDITION);
    CHECK(Contains(status.message, "writing \"1400\" to " + path));
    CHECK(Contains(status.message, "(EINVAL)"));
  }
}

TEST_CASE("vGPU manager: GPUs it cannot use") {
  FakeVgpuSysfs sysfs;
  std::filesystem::create_directories(sysfs.root() + "/sys/bus/pci/devices/0000:5e:00.0");
  VgpuManager manager(&sysfs);
  PluginStatus status = manager.AddGpu({0, "00000000:5E:00.0", "A100-40GB"});
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(Contains(status.message, "offers no vGPU"));
  CHECK(manager.State(0) == nullptr);
  CHECK(manager.AddGpu({1, "00000000:86:00.0", "A100-40GB"}).code == TESSERA_NOT_FOUND);
  CHECK(manager.AddGpu({-1, "00000000:3B:00.0", ""}).code == TESSERA_INVALID_ARGUMENT);
  CHECK(manager.AddGpu({2, "bogus", ""}).code == TESSERA_INVALID_ARGUMENT);

  sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
  Add(manager, kA100);
  Add(manager, kA100);  // again: re-read.
  CHECK(manager.AddGpu({0, "00000000:3C:00.0", "A100-40GB"}).code == TESSERA_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tessera::vgpu
