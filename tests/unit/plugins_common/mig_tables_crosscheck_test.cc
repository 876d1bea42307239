// The SDK's MIG profile table (tessera/gpu/mig_profiles.h), which the scheduler places with and
// partitioners will carry layouts out with, against the fake NVML's model of the driver
// (plugins/common/nvml/testing/hardware_model.cc). The two are written independently from
// NVIDIA's figures; this test asks the fake through NVML's own calls, as a backend would, so a
// wrong name, memory size, slice count, instance limit or placement in either fails here, per
// GPU model. It also checks that the SDK's model names (tessera/gpu/model_names.h) turn the
// fake's device names into the models the table is keyed by.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "nvml/nvml_library.h"
#include "tessera/gpu/mig_profiles.h"
#include "tessera/gpu/model_names.h"
#include "unit/plugins_common/fake_nvml_fixture.h"

namespace tessera::nvml {
namespace {

using fake::FakeGpus;
using fake::Gpu;
using fake::LoadFake;

// The models issue 15 asks the fake to model; the SDK's table must hold exactly these.
const char* const kModels[] = {"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"};

// NVML's GPU instance profile enum for each mig::ProfileKind, in the kinds' order.
constexpr unsigned kProfileEnum[mig::kNumProfileKinds] = {
    NVML_GPU_INSTANCE_PROFILE_1_SLICE,      NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1,
    NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, NVML_GPU_INSTANCE_PROFILE_2_SLICE,
    NVML_GPU_INSTANCE_PROFILE_3_SLICE,      NVML_GPU_INSTANCE_PROFILE_4_SLICE,
    NVML_GPU_INSTANCE_PROFILE_7_SLICE,
};

// NVML's compute instance profile enum for a compute instance of `slices` slices.
unsigned CiProfileOfSlices(int slices) {
  switch (slices) {
    case 1:
      return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
    case 2:
      return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
    case 3:
      return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
    case 4:
      return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
    default:
      return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
  }
}

std::string OneMigGpu(const std::string& model) {
  return R"({"gpus": [{"model": ")" + model + R"(", "mig_current": 1, "mig_pending": 1}]})";
}

std::string Name(NvmlLibrary& lib, nvmlDevice_t device) {
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  REQUIRE(lib.DeviceGetName(device, name, sizeof(name)) == NVML_SUCCESS);
  return name;
}

int64_t TotalMib(NvmlLibrary& lib, nvmlDevice_t device) {
  nvmlMemory_t memory{};
  REQUIRE(lib.DeviceGetMemoryInfo(device, &memory) == NVML_SUCCESS);
  return static_cast<int64_t>(memory.total >> 20);
}

TEST_CASE("mig tables: the SDK and the fake NVML know the same GPU models") {
  std::vector<std::string> sdk;
  for (const mig::ModelProfiles& m : mig::Models()) sdk.emplace_back(m.model);
  CHECK(sdk == std::vector<std::string>(std::begin(kModels), std::end(kModels)));
  for (const char* model : kModels) {
    CAPTURE(model);
    FakeGpus gpus(OneMigGpu(model));
    auto lib = LoadFake();
    REQUIRE(lib->Init() == NVML_SUCCESS);
    const nvmlDevice_t gpu = Gpu(*lib, 0);
    // The fake knows the model (an unknown one has no name), and the SDK's normalisation turns
    // the device name NVML gives into the model the table is keyed by.
    CHECK(model_names::FromDeviceName(Name(*lib, gpu), TotalMib(*lib, gpu)) == model);
  }
}

TEST_CASE("mig tables: each profile's slices, limit, memory and placements agree, per model") {
  for (const char* model : kModels) {
    CAPTURE(model);
    const mig::ModelProfiles* table = mig::FindModel(model);
    REQUIRE(table != nullptr);
    FakeGpus gpus(OneMigGpu(model));
    auto lib = LoadFake();
    REQUIRE(lib->Init() == NVML_SUCCESS);
    const nvmlDevice_t gpu = Gpu(*lib, 0);
    const int64_t gpu_mib = TotalMib(*lib, gpu);
    for (int k = 0; k < mig::kNumProfileKinds; ++k) {
      const auto kind = static_cast<mig::ProfileKind>(k);
      const mig::ProfileShape& shape = mig::Shape(kind);
      CAPTURE(table->names[k]);
      nvmlGpuInstanceProfileInfo_t info{};
      REQUIRE(lib->DeviceGetGpuInstanceProfileInfo(gpu, kProfileEnum[k], &info) == NVML_SUCCESS);
      CHECK(static_cast<int>(info.sliceCount) == shape.compute_slices);
      CHECK(static_cast<int>(info.instanceCount) == shape.max_per_gpu);
      CHECK(static_cast<int64_t>(info.memorySizeMB) ==
            mig::InstanceMemoryMib(*table, kind, gpu_mib));

      unsigned count = 0;
      REQUIRE(lib->DeviceGetGpuInstancePossiblePlacements(gpu, info.id, nullptr, &count) ==
              NVML_SUCCESS);
      std::vector<nvmlGpuInstancePlacement_t> placements(count);
      REQUIRE(lib->DeviceGetGpuInstancePossiblePlacements(gpu, info.id, placements.data(),
                                                          &count) == NVML_SUCCESS);
      unsigned starts = 0;
      for (const nvmlGpuInstancePlacement_t& p : placements) {
        CHECK(static_cast<int>(p.size) == shape.memory_slices);
        starts |= 1u << p.start;
      }
      CHECK(starts == shape.allowed_starts);

      // The profile's name and memory as a MIG device of it reports them: an instance at its
      // first placement, one compute instance over all of it.
      REQUIRE_FALSE(placements.empty());
      nvmlGpuInstance_t gi = nullptr;
      REQUIRE(lib->DeviceCreateGpuInstanceWithPlacement(gpu, info.id, &placements[0], &gi) ==
              NVML_SUCCESS);
      nvmlComputeInstance_t ci = nullptr;
      REQUIRE(lib->GpuInstanceCreateComputeInstance(gi, CiProfileOfSlices(shape.compute_slices),
                                                    &ci) == NVML_SUCCESS);
      nvmlDevice_t mig_device = nullptr;
      REQUIRE(lib->DeviceGetMigDeviceHandleByIndex(gpu, 0, &mig_device) == NVML_SUCCESS);
      CHECK(Name(*lib, mig_device) == Name(*lib, gpu) + " MIG " + std::string(table->names[k]));
      CHECK(TotalMib(*lib, mig_device) == mig::InstanceMemoryMib(*table, kind, gpu_mib));
      REQUIRE(lib->ComputeInstanceDestroy(ci) == NVML_SUCCESS);
      REQUIRE(lib->GpuInstanceDestroy(gi) == NVML_SUCCESS);
    }
    // No profile the SDK lacks: every other enum value is one the fake does not offer.
    for (unsigned e = 0; e < NVML_GPU_INSTANCE_PROFILE_COUNT; ++e) {
      if (std::find(std::begin(kProfileEnum), std::end(kProfileEnum), e) !=
          std::end(kProfileEnum)) {
        continue;
      }
      CAPTURE(e);
      nvmlGpuInstanceProfileInfo_t info{};
      CHECK(lib->DeviceGetGpuInstanceProfileInfo(gpu, e, &info) == NVML_ERROR_NOT_SUPPORTED);
    }
  }
}

TEST_CASE("mig tables: the fake accepts exactly the layouts the SDK calls valid") {
  // Random instances added one at a time, at any start (allowed or not): the fake must create
  // each one the SDK's LayoutError accepts and refuse each one it rejects.
  std::mt19937 random(15);
  for (const char* model : kModels) {
    CAPTURE(model);
    FakeGpus gpus(OneMigGpu(model));
    auto lib = LoadFake();
    REQUIRE(lib->Init() == NVML_SUCCESS);
    const nvmlDevice_t gpu = Gpu(*lib, 0);
    unsigned ids[mig::kNumProfileKinds];
    for (int k = 0; k < mig::kNumProfileKinds; ++k) {
      nvmlGpuInstanceProfileInfo_t info{};
      REQUIRE(lib->DeviceGetGpuInstanceProfileInfo(gpu, kProfileEnum[k], &info) == NVML_SUCCESS);
      ids[k] = info.id;
    }
    int accepted = 0, refused = 0;
    for (int round = 0; round < 60; ++round) {
      std::vector<mig::Instance> layout;
      std::vector<nvmlGpuInstance_t> created;
      for (int step = 0; step < 10; ++step) {
        const auto kind = static_cast<mig::ProfileKind>(random() % mig::kNumProfileKinds);
        const auto start = static_cast<uint8_t>(random() % mig::kMemorySlices);
        std::vector<mig::Instance> next = layout;
        next.push_back({kind, start});
        const std::string sdk_error = mig::LayoutError(next);
        const nvmlGpuInstancePlacement_t placement{
            start, static_cast<unsigned>(mig::Shape(kind).memory_slices)};
        nvmlGpuInstance_t gi = nullptr;
        const nvmlReturn_t fake = lib->DeviceCreateGpuInstanceWithPlacement(
            gpu, ids[static_cast<int>(kind)], &placement, &gi);
        CAPTURE(sdk_error);
        CAPTURE(static_cast<int>(kind));
        CAPTURE(static_cast<int>(start));
        CHECK((fake == NVML_SUCCESS) == sdk_error.empty());
        if (fake == NVML_SUCCESS) {
          created.push_back(gi);
          ++accepted;
        } else {
          ++refused;
        }
        if (sdk_error.empty()) layout = next;
      }
      for (nvmlGpuInstance_t gi : created) REQUIRE(lib->GpuInstanceDestroy(gi) == NVML_SUCCESS);
    }
    // Both answers came up often enough for the comparison to mean something.
    CHECK(accepted > 60);
    CHECK(refused > 60);
  }
}

}  // namespace
}  // namespace tessera::nvml
