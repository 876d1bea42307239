// The fake sysfs for NVIDIA vGPU (plugins/common/vgpu/testing/fake_vgpu_sysfs.h): writes react as
// the kernel's mdev core and NVIDIA's driver do, errors included, so the library's tests mean
// something. Each rule its header states is pinned here.
#include <doctest/doctest.h>

#include <cerrno>
#include <string>

#include "vgpu/testing/fake_vgpu_sysfs.h"

namespace tessera::vgpu::testing {
namespace {

constexpr char kPf[] = "0000:3b:00.0";
constexpr char kUuidA[] = "11111111-2222-3333-4444-555555555555";
constexpr char kUuidB[] = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

std::string ReadOr(const FakeVgpuSysfs& sysfs, const std::string& path) {
  std::string content;
  const int error = sysfs.Read(path, &content);
  return error == 0 ? content : "errno " + std::to_string(error);
}

std::string TypeDir(const std::string& parent, const std::string& type) {
  return "/sys/class/mdev_bus/" + parent + "/mdev_supported_types/" + type;
}

TEST_CASE("fake vGPU sysfs: mdev on the GPU's function") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
  // 4 5 8 10 20 40 GiB, as NVIDIA ships the A100-40GB's C types.
  std::vector<std::string> types;
  REQUIRE(sysfs.List("/sys/class/mdev_bus/0000:3b:00.0/mdev_supported_types", &types) == 0);
  CHECK(types == std::vector<std::string>{"nvidia-500", "nvidia-501", "nvidia-502", "nvidia-503",
                                          "nvidia-504", "nvidia-505"});
  const std::string four = TypeDir(kPf, "nvidia-500");
  const std::string eight = TypeDir(kPf, "nvidia-502");
  CHECK(ReadOr(sysfs, four + "/name") == "NVIDIA A100-4C\n");
  CHECK(ReadOr(sysfs, four + "/available_instances") == "10\n");
  CHECK(ReadOr(sysfs, four + "/device_api") == "vfio-pci\n");
  CHECK(ReadOr(sysfs, four + "/description").find("max_instance=10") != std::string::npos);
  CHECK(ReadOr(sysfs, eight + "/available_instances") == "5\n");

  SUBCASE("create makes the device and its links; other types show 0") {
    REQUIRE(sysfs.Write(four + "/create", kUuidA) == 0);
    CHECK(sysfs.Exists(std::string("/sys/bus/mdev/devices/") + kUuidA));
    CHECK(sysfs.Exists(four + "/devices/" + kUuidA));
    CHECK(sysfs.Exists(std::string("/sys/bus/mdev/devices/") + kUuidA + "/mdev_type/name"));
    CHECK(ReadOr(sysfs, four + "/available_instances") == "9\n");
    CHECK(ReadOr(sysfs, eight + "/available_instances") == "0\n");
    CHECK(sysfs.Write(eight + "/create", kUuidB) == EUSERS);
    CHECK_FALSE(sysfs.Exists(std::string("/sys/bus/mdev/devices/") + kUuidB));

    // remove: 0 does nothing, garbage is EINVAL, 1 removes and restores the counts.
    const std::string remove = std::string("/sys/bus/mdev/devices/") + kUuidA + "/remove";
    CHECK(sysfs.Write(remove, "0") == 0);
    CHECK(sysfs.Exists(std::string("/sys/bus/mdev/devices/") + kUuidA));
    CHECK(sysfs.Write(remove, "yes") == EINVAL);
    CHECK(sysfs.Write(remove, "1\n") == 0);
    CHECK_FALSE(sysfs.Exists(std::string("/sys/bus/mdev/devices/") + kUuidA));
    CHECK_FALSE(sysfs.Exists(four + "/devices/" + kUuidA));
    CHECK(ReadOr(sysfs, four + "/available_instances") == "10\n");
    CHECK(ReadOr(sysfs, eight + "/available_instances") == "5\n");
    CHECK(sysfs.Write(remove, "1") == ENOENT);
  }
  SUBCASE("create refuses a UUID in use, a malformed one, and a full type") {
    REQUIRE(sysfs.Write(four + "/create", std::string(kUuidA) + "\n") == 0);
    CHECK(sysfs.Write(four + "/create", kUuidA) == EEXIST);
    CHECK(sysfs.Write(four + "/create", "not-a-uuid") == EINVAL);
    CHECK(sysfs.Write(four + "/create", std::string(kUuidB) + "xx") == EINVAL);
    // Upper case is accepted and the device is named in lower case.
    REQUIRE(sysfs.Write(four + "/create", "AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE") == 0);
    CHECK(sysfs.Exists(std::string("/sys/bus/mdev/devices/") + kUuidB));
    for (int i = 2; i < 10; ++i) {
      const std::string uuid = "00000000-0000-0000-0000-00000000000" + std::to_string(i);
      REQUIRE(sysfs.Write(four + "/create", uuid) == 0);
    }
    CHECK(ReadOr(sysfs, four + "/available_instances") == "0\n");
    CHECK(sysfs.Write(four + "/create", "00000000-0000-0000-0000-0000000000ff") == EUSERS);
  }
  SUBCASE("write-only and read-only attributes") {
    std::string content;
    CHECK(sysfs.Read(four + "/create", &content) == EACCES);
    CHECK(sysfs.Write(four + "/name", "x") == EACCES);
    CHECK(sysfs.Write(four + "/available_instances", "99") == EACCES);
    CHECK(sysfs.Write(TypeDir(kPf, "nvidia-999") + "/create", kUuidA) == ENOENT);
  }
  SUBCASE("an injected failure changes nothing") {
    sysfs.FailNextWrite(four + "/create", EIO);
    CHECK(sysfs.Write(four + "/create", kUuidA) == EIO);
    CHECK_FALSE(sysfs.Exists(std::string("/sys/bus/mdev/devices/") + kUuidA));
    CHECK(sysfs.Write(four + "/create", kUuidA) == 0);
  }
}

TEST_CASE("fake vGPU sysfs: mdev on SR-IOV VFs holds one device per VF") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnVfs, 4);
  const std::vector<std::string> vfs = sysfs.VfsOf(kPf);
  REQUIRE(vfs ==
          std::vector<std::string>{"0000:3b:00.4", "0000:3b:00.5", "0000:3b:00.6", "0000:3b:00.7"});
  std::string target;
  REQUIRE(sysfs.ReadLink("/sys/bus/pci/devices/0000:3b:00.0/virtfn0", &target) == 0);
  CHECK(target == "../0000:3b:00.4");
  CHECK_FALSE(sysfs.Exists("/sys/class/mdev_bus/0000:3b:00.0"));
  CHECK(ReadOr(sysfs, TypeDir(vfs[0], "nvidia-500") + "/available_instances") == "1\n");
  REQUIRE(sysfs.Write(TypeDir(vfs[0], "nvidia-500") + "/create", kUuidA) == 0);
  CHECK(ReadOr(sysfs, TypeDir(vfs[0], "nvidia-500") + "/available_instances") == "0\n");
  CHECK(ReadOr(sysfs, TypeDir(vfs[1], "nvidia-500") + "/available_instances") == "1\n");
  CHECK(ReadOr(sysfs, TypeDir(vfs[1], "nvidia-502") + "/available_instances") == "0\n");
  CHECK(sysfs.Write(TypeDir(vfs[0], "nvidia-500") + "/create", kUuidB) == EUSERS);
}

TEST_CASE("fake vGPU sysfs: vendor-specific VFIO on SR-IOV VFs") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu(kPf, FakeGpuModel::H100_80GB(), FakeVgpuForm::kVendorVfio, 3);
  const std::vector<std::string> vfs = sysfs.VfsOf(kPf);
  const auto nvidia = [&](int vf, const std::string& file) {
    return "/sys/bus/pci/devices/" + vfs[vf] + "/nvidia/" + file;
  };
  // H100-80GB: 4 5 8 10 16 20 40 80 GiB, IDs 1400.. in that order.
  const std::string all = ReadOr(sysfs, nvidia(0, "creatable_vgpu_types"));
  CHECK(all.rfind("ID    : vGPU Name\n1400  : NVIDIA H100-4C\n", 0) == 0);
  CHECK(all.find("1407  : NVIDIA H100-80C\n") != std::string::npos);
  CHECK(ReadOr(sysfs, nvidia(0, "current_vgpu_type")) == "0\n");
  CHECK_FALSE(sysfs.Exists("/sys/class/mdev_bus/" + vfs[0]));

  REQUIRE(sysfs.Write(nvidia(0, "current_vgpu_type"), "1402") == 0);  // H100-8C
  CHECK(ReadOr(sysfs, nvidia(0, "current_vgpu_type")) == "1402\n");
  CHECK(ReadOr(sysfs, nvidia(1, "creatable_vgpu_types")) ==
        "ID    : vGPU Name\n1402  : NVIDIA H100-8C\n");
  CHECK(ReadOr(sysfs, nvidia(0, "creatable_vgpu_types")) == "ID    : vGPU Name\n");
  CHECK(sysfs.Write(nvidia(1, "current_vgpu_type"), "1400") == EINVAL);  // not listed
  CHECK(sysfs.Write(nvidia(1, "current_vgpu_type"), "eight") == EINVAL);
  CHECK(sysfs.Write(nvidia(0, "current_vgpu_type"), "1402") == EBUSY);
  CHECK(sysfs.Write(nvidia(0, "creatable_vgpu_types"), "1402") == EACCES);

  REQUIRE(sysfs.Write(nvidia(0, "current_vgpu_type"), "0\n") == 0);
  CHECK(ReadOr(sysfs, nvidia(0, "current_vgpu_type")) == "0\n");
  CHECK(ReadOr(sysfs, nvidia(1, "creatable_vgpu_types")) == all);
  CHECK(sysfs.Write(nvidia(0, "current_vgpu_type"), "0") == 0);

  SUBCASE("the list empties when the type has no room") {
    // H100-80C: one per GPU.
    REQUIRE(sysfs.Write(nvidia(2, "current_vgpu_type"), "1407") == 0);
    CHECK(ReadOr(sysfs, nvidia(0, "creatable_vgpu_types")) == "ID    : vGPU Name\n");
    CHECK(sysfs.Write(nvidia(0, "current_vgpu_type"), "1407") == EINVAL);
  }
}

}  // namespace
}  // namespace tessera::vgpu::testing
