// What a GPU offers in vGPU mode, read from sysfs (plugins/common/vgpu/vgpu_discovery.h), with the
// PCI address and type name conversions it rests on: NVML's bus id to sysfs's, the driver's type
// names to the scheduler's, both forms (mdev, on the GPU or on its VFs; vendor-specific VFIO) and
// a GPU with neither, over the fake sysfs and over the real reader on the fake's tree.
#include <doctest/doctest.h>

#include <filesystem>

#include "vgpu/pci_address.h"
#include "vgpu/testing/fake_vgpu_sysfs.h"
#include "vgpu/vgpu_discovery.h"
#include "vgpu/vgpu_type_names.h"

namespace tessera::vgpu {
namespace {

using testing::FakeGpuModel;
using testing::FakeVgpuForm;
using testing::FakeVgpuSysfs;

constexpr char kNvmlBusId[] = "00000000:3B:00.0";

const VgpuTypeOffer* Offer(const GpuVgpuState& state, const std::string& name) {
  for (const VgpuTypeOffer& offer : state.types) {
    if (offer.name == name) return &offer;
  }
  return nullptr;
}

TEST_CASE("vGPU: NVML's PCI bus id becomes sysfs's") {
  CHECK(SysfsPciAddress("00000000:3B:00.0") == "0000:3b:00.0");
  CHECK(SysfsPciAddress("0000:3B:00.0") == "0000:3b:00.0");
  CHECK(SysfsPciAddress("3b:00.0") == "0000:3b:00.0");
  CHECK(SysfsPciAddress("00000001:C1:1F.7") == "0001:c1:1f.7");
  CHECK(SysfsPciAddress("00010000:01:00.0") == "10000:01:00.0");
  CHECK_FALSE(SysfsPciAddress("").has_value());
  CHECK_FALSE(SysfsPciAddress("3b:00").has_value());
  CHECK_FALSE(SysfsPciAddress("0000:3b:00.8").has_value());
  CHECK_FALSE(SysfsPciAddress("0000:zz:00.0").has_value());
  CHECK_FALSE(SysfsPciAddress("000000000:3b:00.0").has_value());
  CHECK(LinkTargetAddress("../0000:3b:00.4") == "0000:3b:00.4");
  CHECK(LinkTargetAddress("0000:3b:00.4") == "0000:3b:00.4");
}

TEST_CASE("vGPU: the driver's type names and the scheduler's") {
  CHECK(ShortTypeName("GRID A100-4C") == "A100-4C");
  CHECK(ShortTypeName("NVIDIA A100-4C\n") == "A100-4C");
  CHECK(SchedulerTypeName("GRID A100-4C", "A100") == "A100-4C");
  CHECK(SchedulerTypeName("NVIDIA A100-4C", "A100") == "A100-4C");
  CHECK(SchedulerTypeName("T4-2Q", "T4") == "T4-2Q");
  // A board suffix of letters is the same family; digits are another GPU.
  CHECK(SchedulerTypeName("NVIDIA A100D-8C", "A100") == "A100-8C");
  CHECK(SchedulerTypeName("NVIDIA H100XM-10C", "H100") == "H100-10C");
  CHECK_FALSE(SchedulerTypeName("NVIDIA A100-4C", "A10").has_value());
  CHECK_FALSE(SchedulerTypeName("NVIDIA A10-4Q", "A100").has_value());
  // Without a family the driver's own name is kept.
  CHECK(SchedulerTypeName("NVIDIA A100D-8C", "") == "A100D-8C");
  // MIG-backed and malformed names have no scheduler name.
  CHECK(IsMigBackedType("NVIDIA A100-1-5C"));
  CHECK_FALSE(IsMigBackedType("NVIDIA A100-5C"));
  CHECK_FALSE(SchedulerTypeName("NVIDIA A100-1-5C", "A100").has_value());
  CHECK_FALSE(SchedulerTypeName("NVIDIA A100-3-20CME", "A100").has_value());
  CHECK_FALSE(SchedulerTypeName("GRID unknown", "A100").has_value());
  CHECK_FALSE(SchedulerTypeName("NVIDIA A100-0B", "A100").has_value());
  CHECK_FALSE(SchedulerTypeName("", "A100").has_value());
}

TEST_CASE("vGPU: creatable_vgpu_types and mdev descriptions parse") {
  const std::vector<CreatableType> types = ParseCreatableTypes(
      "ID    : vGPU Name\n1414 : NVIDIA H200X-1-18C\n 1428  :  NVIDIA "
      "H200X-141C \n\ngarbage\n0 : zero\n");
  REQUIRE(types.size() == 2);
  CHECK(types[0].id == 1414);
  CHECK(types[0].name == "NVIDIA H200X-1-18C");
  CHECK(types[1].id == 1428);
  CHECK(types[1].name == "NVIDIA H200X-141C");
  CHECK(MaxInstancesOf("num_heads=4, frl_config=60, framebuffer=2048M, "
                       "max_resolution=7680x4320, max_instance=4") == 4);
  CHECK(MaxInstancesOf("max_instance=12\n") == 12);
  CHECK(MaxInstancesOf("num_heads=4") == 0);
}

TEST_CASE("vGPU discovery: mdev types on the GPU's function") {
  FakeVgpuSysfs sysfs;
  FakeGpuModel model = FakeGpuModel::A100_40GB();
  model.name_prefix = "GRID";
  sysfs.AddGpu("0000:3b:00.0", model, FakeVgpuForm::kMdevOnPf);
  REQUIRE(sysfs.Write("/sys/class/mdev_bus/0000:3b:00.0/mdev_supported_types/nvidia-500/create",
                      "11111111-2222-3333-4444-555555555555") == 0);

  const auto check = [](const GpuVgpuState& state) {
    CHECK(state.address == "0000:3b:00.0");
    CHECK(state.form == VgpuForm::kMdev);
    CHECK(state.parents == std::vector<std::string>{"0000:3b:00.0"});
    REQUIRE(state.types.size() == 6);
    const VgpuTypeOffer* four = Offer(state, "A100-4C");
    REQUIRE(four != nullptr);
    CHECK(four->driver_name == "GRID A100-4C");
    CHECK(four->id == "nvidia-500");
    CHECK(four->available == 9);
    CHECK(four->max_instances == 10);
    CHECK(four->room == std::vector<std::string>{"0000:3b:00.0"});
    REQUIRE(Offer(state, "A100-40C") != nullptr);
    CHECK(Offer(state, "A100-40C")->available == 0);
    CHECK(Offer(state, "A100-40C")->room.empty());
    REQUIRE(state.devices.size() == 1);
    CHECK(state.devices[0].id == "11111111-2222-3333-4444-555555555555");
    CHECK(state.devices[0].name == "A100-4C");
    CHECK(state.devices[0].type_id == "nvidia-500");
    CHECK(state.devices[0].sysfs_path ==
          "/sys/bus/mdev/devices/11111111-2222-3333-4444-555555555555");
  };
  GpuVgpuState state;
  const plugin::PluginStatus status = DiscoverGpu(sysfs, kNvmlBusId, "A100", &state);
  REQUIRE_MESSAGE(status.ok(), status.message);
  check(state);

  // The real reader, on the same tree, reads the same.
  RootedSysfs real(sysfs.root());
  GpuVgpuState real_state;
  REQUIRE(DiscoverGpu(real, kNvmlBusId, "A100", &real_state).ok());
  check(real_state);
}

TEST_CASE("vGPU discovery: mdev types on the VFs of an Ampere GPU") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu("0000:3b:00.0", FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnVfs, 16);
  GpuVgpuState state;
  REQUIRE(DiscoverGpu(sysfs, kNvmlBusId, "A100", &state).ok());
  CHECK(state.form == VgpuForm::kMdev);
  REQUIRE(state.parents.size() == 16);
  CHECK(state.parents.front() == "0000:3b:00.4");
  CHECK(state.parents.back() == "0000:3b:02.3");
  // Sixteen VFs show 1 each, but ten A100-4C fit the GPU.
  REQUIRE(Offer(state, "A100-4C") != nullptr);
  CHECK(Offer(state, "A100-4C")->available == 10);
  CHECK(Offer(state, "A100-4C")->room.size() == 16);
  CHECK(state.devices.empty());
}

TEST_CASE("vGPU discovery: vendor-specific VFIO on the VFs of a Hopper GPU") {
  FakeVgpuSysfs sysfs;
  sysfs.AddGpu("0000:3b:00.0", FakeGpuModel::H100_80GB(), FakeVgpuForm::kVendorVfio, 4);
  const std::vector<std::string> vfs = sysfs.VfsOf("0000:3b:00.0");
  REQUIRE(sysfs.Write("/sys/bus/pci/devices/" + vfs[1] + "/nvidia/current_vgpu_type", "1402") == 0);
  GpuVgpuState state;
  const plugin::PluginStatus status = DiscoverGpu(sysfs, kNvmlBusId, "H100", &state);
  REQUIRE_MESSAGE(status.ok(), status.message);
  CHECK(state.form == VgpuForm::kVendorVfio);
  CHECK(state.parents == vfs);
  // Only the type in use is creatable now, on the three free VFs.
  REQUIRE(state.types.size() == 1);
  CHECK(state.types[0].name == "H100-8C");
  CHECK(state.types[0].id == "1402");
  CHECK(state.types[0].available == 3);
  CHECK(state.types[0].room == std::vector<std::string>{vfs[0], vfs[2], vfs[3]});
  REQUIRE(state.devices.size() == 1);
  CHECK(state.devices[0].id == vfs[1]);
  CHECK(state.devices[0].name == "H100-8C");
  CHECK(state.devices[0].sysfs_path == "/sys/bus/pci/devices/" + vfs[1]);
}

TEST_CASE("vGPU discovery: a GPU without vGPU, a missing one, a bad bus id") {
  FakeVgpuSysfs sysfs;
  std::filesystem::create_directories(sysfs.root() + "/sys/bus/pci/devices/0000:5e:00.0");
  GpuVgpuState state;
  plugin::PluginStatus status = DiscoverGpu(sysfs, "00000000:5E:00.0", "A100", &state);
  REQUIRE_MESSAGE(status.ok(), status.message);
  CHECK(state.form == VgpuForm::kNone);
  CHECK(state.types.empty());

  status = DiscoverGpu(sysfs, "00000000:86:00.0", "A100", &state);
  CHECK(status.code == TESSERA_NOT_FOUND);
  CHECK(status.message.find("/sys/bus/pci/devices/0000:86:00.0") != std::string::npos);
  status = DiscoverGpu(sysfs, "GPU-1234", "A100", &state);
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tessera::vgpu
