// NVML through the run-time loader (plugins/common/nvml) against the fake libnvidia-ml.so.1:
// what a backend relies on, checked call by call, so that the fake's model of the driver (its
// profile tables, errors and shared state) is pinned where the backends will meet it.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "nvml/nvml_library.h"
#include "unit/plugins_common/fake_nvml_fixture.h"

namespace tessera::nvml {
namespace {

using fake::FakeGpus;
using fake::FakePath;
using fake::Gpu;
using fake::LoadFake;

nvmlGpuInstanceProfileInfo_t Profile(NvmlLibrary& lib, nvmlDevice_t gpu, unsigned profile) {
  nvmlGpuInstanceProfileInfo_t info{};
  REQUIRE(lib.DeviceGetGpuInstanceProfileInfo(gpu, profile, &info) == NVML_SUCCESS);
  return info;
}

nvmlReturn_t CreateAt(NvmlLibrary& lib, nvmlDevice_t gpu, unsigned profile_id, unsigned start,
                      unsigned size, nvmlGpuInstance_t* gi) {
  const nvmlGpuInstancePlacement_t placement{start, size};
  return lib.DeviceCreateGpuInstanceWithPlacement(gpu, profile_id, &placement, gi);
}

TEST_CASE("nvml: no driver is no library, or DRIVER_NOT_LOADED, never a crash") {
  std::string error;
  CHECK(NvmlLibrary::Load("/nonexistent/libnvidia-ml.so.1", &error) == nullptr);
  CHECK(error.find("/nonexistent/libnvidia-ml.so.1") != std::string::npos);
  ::unsetenv("TESSERA_FAKE_NVML_STATE");
  auto lib = LoadFake();
  CHECK(lib->Init() == NVML_ERROR_DRIVER_NOT_LOADED);
  CHECK(lib->ErrorString(NVML_ERROR_DRIVER_NOT_LOADED) == "Driver Not Loaded");
  unsigned count = 0;
  CHECK(lib->DeviceGetCount(&count) == NVML_ERROR_UNINITIALIZED);
}

TEST_CASE("nvml: inventory names each GPU, its memory and a stable UUID") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-40GB"}, {"model": "H100-80GB"}]})");
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  CHECK(lib->HasMig());
  unsigned count = 0;
  REQUIRE(lib->DeviceGetCount(&count) == NVML_SUCCESS);
  REQUIRE(count == 2);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  REQUIRE(lib->DeviceGetName(Gpu(*lib, 1), name, sizeof(name)) == NVML_SUCCESS);
  CHECK(std::string(name) == "NVIDIA H100 80GB HBM3");
  nvmlMemory_t memory{};
  REQUIRE(lib->DeviceGetMemoryInfo(Gpu(*lib, 0), &memory) == NVML_SUCCESS);
  CHECK(memory.total == 40960ull << 20);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  REQUIRE(lib->DeviceGetUUID(Gpu(*lib, 0), uuid, sizeof(uuid)) == NVML_SUCCESS);
  CHECK(std::string(uuid).rfind("GPU-", 0) == 0);
  char small[8];
  CHECK(lib->DeviceGetUUID(Gpu(*lib, 0), small, sizeof(small)) == NVML_ERROR_INSUFFICIENT_SIZE);
  nvmlDevice_t by_uuid = nullptr;
  REQUIRE(lib->DeviceGetHandleByUUID(uuid, &by_uuid) == NVML_SUCCESS);
  CHECK(by_uuid == Gpu(*lib, 0));
  CHECK(lib->DeviceGetHandleByUUID("GPU-nope", &by_uuid) == NVML_ERROR_NOT_FOUND);
  nvmlPciInfo_t pci{};
  REQUIRE(lib->DeviceGetPciInfo(Gpu(*lib, 1), &pci) == NVML_SUCCESS);
  CHECK(std::string(pci.busId) == "00000000:11:00.0");
  unsigned current = 9, pending = 9;
  REQUIRE(lib->DeviceGetMigMode(Gpu(*lib, 1), &current, &pending) == NVML_SUCCESS);
  CHECK(current == NVML_DEVICE_MIG_DISABLE);
  CHECK(pending == NVML_DEVICE_MIG_DISABLE);
}

TEST_CASE("nvml: a profile is asked for by enum and answered with its ID, sizes and placements") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-40GB", "mig_current": 1, "mig_pending": 1}]})");
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  const nvmlDevice_t gpu = Gpu(*lib, 0);
  const auto one = Profile(*lib, gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE);
  CHECK(one.id == 19);
  CHECK(one.sliceCount == 1);
  CHECK(one.instanceCount == 7);
  CHECK(one.memorySizeMB == 4864);
  CHECK(Profile(*lib, gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2).id == 15);
  CHECK(Profile(*lib, gpu, NVML_GPU_INSTANCE_PROFILE_7_SLICE).id == 0);
  CHECK(Profile(*lib, gpu, NVML_GPU_INSTANCE_PROFILE_7_SLICE).memorySizeMB == 40192);
  nvmlGpuInstanceProfileInfo_t info{};
  CHECK(lib->DeviceGetGpuInstanceProfileInfo(gpu, 5, &info) == NVML_ERROR_NOT_SUPPORTED);
  CHECK(lib->DeviceGetGpuInstanceProfileInfo(gpu, NVML_GPU_INSTANCE_PROFILE_COUNT, &info) ==
        NVML_ERROR_INVALID_ARGUMENT);
  unsigned count = 0;
  REQUIRE(lib->DeviceGetGpuInstancePossiblePlacements(gpu, 9, nullptr, &count) == NVML_SUCCESS);
  REQUIRE(count == 2);
  nvmlGpuInstancePlacement_t placements[2];
  REQUIRE(lib->DeviceGetGpuInstancePossiblePlacements(gpu, 9, placements, &count) == NVML_SUCCESS);
  CHECK(placements[0].start == 0);
  CHECK(placements[1].start == 4);
  CHECK(placements[1].size == 4);
  unsigned remaining = 0;
  REQUIRE(lib->DeviceGetGpuInstanceRemainingCapacity(gpu, 19, &remaining) == NVML_SUCCESS);
  CHECK(remaining == 7);
}

TEST_CASE("nvml: MIG instances are created, refused and destroyed as the driver does") {
  FakeGpus gpus(R"({"gpus": [{"model": "H100-80GB"}]})");
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  const nvmlDevice_t gpu = Gpu(*lib, 0);
  nvmlGpuInstance_t gi = nullptr;
  CHECK(CreateAt(*lib, gpu, 9, 0, 4, &gi) == NVML_ERROR_NOT_SUPPORTED);  // MIG is off.
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  REQUIRE(lib->DeviceSetMigMode(gpu, NVML_DEVICE_MIG_ENABLE, &activation) == NVML_SUCCESS);
  CHECK(activation == NVML_SUCCESS);  // an idle GPU switches at once.

  nvmlGpuInstance_t left = nullptr, right = nullptr;
  REQUIRE(CreateAt(*lib, gpu, 9, 0, 4, &left) == NVML_SUCCESS);             // 3g.40gb at slice 0
  CHECK(CreateAt(*lib, gpu, 9, 2, 4, &gi) == NVML_ERROR_INVALID_ARGUMENT);  // 3g starts 0 or 4
  CHECK(CreateAt(*lib, gpu, 19, 1, 1, &gi) == NVML_ERROR_INSUFFICIENT_RESOURCES);  // overlaps
  REQUIRE(CreateAt(*lib, gpu, 9, 4, 4, &right) == NVML_SUCCESS);
  CHECK(lib->DeviceCreateGpuInstance(gpu, 19, &gi) == NVML_ERROR_INSUFFICIENT_RESOURCES);  // full
  unsigned remaining = 9;
  REQUIRE(lib->DeviceGetGpuInstanceRemainingCapacity(gpu, 9, &remaining) == NVML_SUCCESS);
  CHECK(remaining == 0);
  nvmlGpuInstanceInfo_t gi_info{};
  REQUIRE(lib->GpuInstanceGetInfo(right, &gi_info) == NVML_SUCCESS);
  CHECK(gi_info.profileId == 9);
  CHECK(gi_info.placement.start == 4);
  CHECK(gi_info.device == gpu);

  nvmlComputeInstanceProfileInfo_t ci_profile{};
  REQUIRE(lib->GpuInstanceGetComputeInstanceProfileInfo(
              right, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
              NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci_profile) == NVML_SUCCESS);
  CHECK(ci_profile.sliceCount == 3);
  CHECK(lib->GpuInstanceGetComputeInstanceProfileInfo(right, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
                                                      NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                                                      &ci_profile) == NVML_ERROR_NOT_SUPPORTED);
  nvmlComputeInstance_t ci = nullptr;
  REQUIRE(lib->GpuInstanceCreateComputeInstance(right, ci_profile.id, &ci) == NVML_SUCCESS);
  nvmlComputeInstance_t second = nullptr;
  CHECK(lib->GpuInstanceCreateComputeInstance(right, ci_profile.id, &second) ==
        NVML_ERROR_INSUFFICIENT_RESOURCES);

  // The compute instance is a MIG device with its own UUID, ids and memory.
  unsigned max_devices = 0;
  REQUIRE(lib->DeviceGetMaxMigDeviceCount(gpu, &max_devices) == NVML_SUCCESS);
  CHECK(max_devices == 7);
  nvmlDevice_t mig = nullptr;
  REQUIRE(lib->DeviceGetMigDeviceHandleByIndex(gpu, 0, &mig) == NVML_SUCCESS);
  CHECK(lib->DeviceGetMigDeviceHandleByIndex(gpu, 1, &mig) == NVML_ERROR_NOT_FOUND);
  REQUIRE(lib->DeviceGetMigDeviceHandleByIndex(gpu, 0, &mig) == NVML_SUCCESS);
  unsigned is_mig = 0, gi_id = 0, ci_id = 99;
  REQUIRE(lib->DeviceIsMigDeviceHandle(mig, &is_mig) == NVML_SUCCESS);
  CHECK(is_mig == 1);
  REQUIRE(lib->DeviceGetGpuInstanceId(mig, &gi_id) == NVML_SUCCESS);
  CHECK(gi_id == gi_info.id);
  REQUIRE(lib->DeviceGetComputeInstanceId(mig, &ci_id) == NVML_SUCCESS);
  CHECK(ci_id == 0);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  REQUIRE(lib->DeviceGetUUID(mig, uuid, sizeof(uuid)) == NVML_SUCCESS);
  CHECK(std::string(uuid).rfind("MIG-", 0) == 0);
  nvmlDevice_t found = nullptr;
  REQUIRE(lib->DeviceGetHandleByUUID(uuid, &found) == NVML_SUCCESS);
  CHECK(found == mig);
  nvmlDevice_t parent = nullptr;
  REQUIRE(lib->DeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent) == NVML_SUCCESS);
  CHECK(parent == gpu);
  nvmlMemory_t memory{};
  REQUIRE(lib->DeviceGetMemoryInfo(mig, &memory) == NVML_SUCCESS);
  CHECK(memory.total == 40192ull << 20);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  REQUIRE(lib->DeviceGetName(mig, name, sizeof(name)) == NVML_SUCCESS);
  CHECK(std::string(name) == "NVIDIA H100 80GB HBM3 MIG 3g.40gb");

  // Teardown order: compute instances before their GPU instance; MIG off only when empty.
  CHECK(lib->GpuInstanceDestroy(right) == NVML_ERROR_IN_USE);
  CHECK(lib->DeviceSetMigMode(gpu, NVML_DEVICE_MIG_DISABLE, &activation) == NVML_ERROR_IN_USE);
  REQUIRE(lib->ComputeInstanceDestroy(ci) == NVML_SUCCESS);
  REQUIRE(lib->GpuInstanceDestroy(right) == NVML_SUCCESS);
  CHECK(lib->GpuInstanceGetInfo(right, &gi_info) == NVML_ERROR_INVALID_ARGUMENT);  // gone
  unsigned listed = 8;
  nvmlGpuInstance_t list[8];
  REQUIRE(lib->DeviceGetGpuInstances(gpu, 9, list, &listed) == NVML_SUCCESS);
  CHECK(listed == 1);
  CHECK(list[0] == left);
}

TEST_CASE("nvml: busy GPUs, missing root and a pending MIG mode are refused as the driver does") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-80GB", "processes": 1}]})");
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  const nvmlDevice_t gpu = Gpu(*lib, 0);
  nvmlReturn_t activation = NVML_SUCCESS;
  REQUIRE(lib->DeviceSetMigMode(gpu, NVML_DEVICE_MIG_ENABLE, &activation) == NVML_SUCCESS);
  CHECK(activation == NVML_ERROR_IN_USE);
  unsigned current = 9, pending = 9;
  REQUIRE(lib->DeviceGetMigMode(gpu, &current, &pending) == NVML_SUCCESS);
  CHECK(current == NVML_DEVICE_MIG_DISABLE);
  CHECK(pending == NVML_DEVICE_MIG_ENABLE);

  gpus.Write(R"({"needs_reset": true, "gpus": [{"model": "A100-80GB"}]})");
  REQUIRE(lib->DeviceSetMigMode(gpu, NVML_DEVICE_MIG_ENABLE, &activation) == NVML_SUCCESS);
  CHECK(activation == NVML_ERROR_RESET_REQUIRED);

  gpus.Write(R"({"root": false, "gpus": [{"model": "A100-80GB", "mig_current": 1}]})");
  CHECK(lib->DeviceSetMigMode(gpu, NVML_DEVICE_MIG_DISABLE, &activation) ==
        NVML_ERROR_NO_PERMISSION);
  nvmlGpuInstance_t gi = nullptr;
  CHECK(lib->DeviceCreateGpuInstance(gpu, 0, &gi) == NVML_ERROR_NO_PERMISSION);

  // A GPU instance a process uses cannot go.
  gpus.Write(R"({"gpus": [{"model": "A100-80GB", "mig_current": 1,
                "gpu_instances": [{"id": 3, "profile_id": 0, "start": 0, "processes": 2}]}]})");
  unsigned count = 1;
  REQUIRE(lib->DeviceGetGpuInstances(gpu, 0, &gi, &count) == NVML_SUCCESS);
  REQUIRE(count == 1);
  CHECK(lib->GpuInstanceDestroy(gi) == NVML_ERROR_IN_USE);
}

TEST_CASE("nvml: several processes see one set of GPUs") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-80GB", "mig_current": 1}]})");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Another process (a backend's restarted instance, say) creates a 7g instance.
    std::string error;
    auto lib = NvmlLibrary::Load(FakePath(), &error);
    nvmlDevice_t gpu = nullptr;
    nvmlGpuInstance_t gi = nullptr;
    const bool ok = lib && lib->Init() == NVML_SUCCESS &&
                    lib->DeviceGetHandleByIndex(0, &gpu) == NVML_SUCCESS &&
                    lib->DeviceCreateGpuInstance(gpu, 0, &gi) == NVML_SUCCESS;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  unsigned count = 0;
  REQUIRE(lib->DeviceGetGpuInstances(Gpu(*lib, 0), 0, nullptr, &count) == NVML_SUCCESS);
  CHECK(count == 1);
  CHECK(gpus.Read().find("\"profile_id\": 0") != std::string::npos);
}

TEST_CASE("nvml: telemetry, and XID errors through an event set") {
  FakeGpus gpus(R"({"gpus": [{"model": "H200-141GB", "utilization": 35, "temperature_c": 61,
                   "power_mw": 250000, "ecc_uncorrectable": 2}]})");
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  const nvmlDevice_t gpu = Gpu(*lib, 0);
  nvmlUtilization_t utilization{};
  REQUIRE(lib->DeviceGetUtilizationRates(gpu, &utilization) == NVML_SUCCESS);
  CHECK(utilization.gpu == 35);
  unsigned celsius = 0, milliwatts = 0;
  REQUIRE(lib->DeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &celsius) == NVML_SUCCESS);
  CHECK(celsius == 61);
  REQUIRE(lib->DeviceGetPowerUsage(gpu, &milliwatts) == NVML_SUCCESS);
  CHECK(milliwatts == 250000);
  unsigned long long ecc = 0;
  REQUIRE(lib->DeviceGetTotalEccErrors(gpu, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
                                       &ecc) == NVML_SUCCESS);
  CHECK(ecc == 2);

  nvmlEventSet_t set = nullptr;
  REQUIRE(lib->EventSetCreate(&set) == NVML_SUCCESS);
  REQUIRE(lib->DeviceRegisterEvents(gpu, nvmlEventTypeXidCriticalError, set) == NVML_SUCCESS);
  nvmlEventData_t event{};
  CHECK(lib->EventSetWait(set, &event, 20) == NVML_ERROR_TIMEOUT);
  gpus.Write(R"({"gpus": [{"model": "H200-141GB", "xid_events": [79]}]})");
  REQUIRE(lib->EventSetWait(set, &event, 1000) == NVML_SUCCESS);
  CHECK(event.device == gpu);
  CHECK(event.eventType == nvmlEventTypeXidCriticalError);
  CHECK(event.eventData == 79);
  CHECK(lib->EventSetWait(set, &event, 20) == NVML_ERROR_TIMEOUT);  // delivered once.
  REQUIRE(lib->EventSetFree(set) == NVML_SUCCESS);
}

}  // namespace
}  // namespace tessera::nvml
