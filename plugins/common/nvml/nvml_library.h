// NvmlLibrary: NVML loaded at run time. Load() opens libnvidia-ml.so.1 (or a path given, such as
// the tests' fake) with dlopen and looks up each function of nvml_api.h, probing the versioned
// names first and falling back to older ones where the older one has the same signature, as
// NVIDIA's go-nvml does. Functions an old driver lacks stay null: callers check before calling
// (MIG calls are absent before R450, for example).
//
// A node without the NVIDIA driver is a CPU node, not an error: Load() fails (no library) or
// Init() returns NVML_ERROR_DRIVER_NOT_LOADED, and the backend reports no GPUs.
//
// The object owns the handle from dlopen; function pointers are valid while it lives. Init() is
// NVML's reference-counted nvmlInit_v2; the destructor calls nvmlShutdown once for each Init()
// that succeeded.
#pragma once

#include <memory>
#include <string>

#include "nvml/nvml_api.h"

namespace tessera::nvml {

inline constexpr char kDefaultLibrary[] = "libnvidia-ml.so.1";

class NvmlLibrary {
 public:
  // Loads `path` (a file name is looked up on the loader's path). On failure returns null and
  // says why in `error` (dlerror's text, or the first required function missing).
  static std::unique_ptr<NvmlLibrary> Load(const std::string& path, std::string* error);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  nvmlReturn_t Init();
  // The text NVML gives for `result`, or "NVML error N" if it gives none.
  std::string ErrorString(nvmlReturn_t result) const;

  // Required: Load() fails without them.
  decltype(&nvmlSystemGetDriverVersion) SystemGetDriverVersion = nullptr;
  decltype(&nvmlDeviceGetCount_v2) DeviceGetCount = nullptr;
  decltype(&nvmlDeviceGetHandleByIndex_v2) DeviceGetHandleByIndex = nullptr;
  decltype(&nvmlDeviceGetUUID) DeviceGetUUID = nullptr;
  decltype(&nvmlDeviceGetName) DeviceGetName = nullptr;
  decltype(&nvmlDeviceGetMemoryInfo) DeviceGetMemoryInfo = nullptr;

  // Optional: null when this driver does not have them.
  decltype(&nvmlDeviceGetHandleByUUID) DeviceGetHandleByUUID = nullptr;
  decltype(&nvmlDeviceGetPciInfo_v3) DeviceGetPciInfo = nullptr;
  decltype(&nvmlDeviceGetUtilizationRates) DeviceGetUtilizationRates = nullptr;
  decltype(&nvmlDeviceGetTemperature) DeviceGetTemperature = nullptr;
  decltype(&nvmlDeviceGetPowerUsage) DeviceGetPowerUsage = nullptr;
  decltype(&nvmlDeviceGetTotalEccErrors) DeviceGetTotalEccErrors = nullptr;
  decltype(&nvmlDeviceGetMigMode) DeviceGetMigMode = nullptr;
  decltype(&nvmlDeviceSetMigMode) DeviceSetMigMode = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceProfileInfo) DeviceGetGpuInstanceProfileInfo = nullptr;
  decltype(&nvmlDeviceGetGpuInstancePossiblePlacements_v2) DeviceGetGpuInstancePossiblePlacements =
      nullptr;
  decltype(&nvmlDeviceGetGpuInstanceRemainingCapacity) DeviceGetGpuInstanceRemainingCapacity =
      nullptr;
  decltype(&nvmlDeviceCreateGpuInstance) DeviceCreateGpuInstance = nullptr;
  decltype(&nvmlDeviceCreateGpuInstanceWithPlacement) DeviceCreateGpuInstanceWithPlacement =
      nullptr;
  decltype(&nvmlGpuInstanceDestroy) GpuInstanceDestroy = nullptr;
  decltype(&nvmlDeviceGetGpuInstances) DeviceGetGpuInstances = nullptr;
  decltype(&nvmlGpuInstanceGetInfo) GpuInstanceGetInfo = nullptr;
  decltype(&nvmlGpuInstanceGetComputeInstanceProfileInfo) GpuInstanceGetComputeInstanceProfileInfo =
      nullptr;
  decltype(&nvmlGpuInstanceCreateComputeInstance) GpuInstanceCreateComputeInstance = nullptr;
  decltype(&nvmlGpuInstanceGetComputeInstances) GpuInstanceGetComputeInstances = nullptr;
  decltype(&nvmlComputeInstanceDestroy) ComputeInstanceDestroy = nullptr;
  decltype(&nvmlComputeInstanceGetInfo_v2) ComputeInstanceGetInfo = nullptr;
  decltype(&nvmlDeviceGetMaxMigDeviceCount) DeviceGetMaxMigDeviceCount = nullptr;
  decltype(&nvmlDeviceGetMigDeviceHandleByIndex) DeviceGetMigDeviceHandleByIndex = nullptr;
  decltype(&nvmlDeviceIsMigDeviceHandle) DeviceIsMigDeviceHandle = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceId) DeviceGetGpuInstanceId = nullptr;
  decltype(&nvmlDeviceGetComputeInstanceId) DeviceGetComputeInstanceId = nullptr;
  decltype(&nvmlDeviceGetDeviceHandleFromMigDeviceHandle) DeviceGetDeviceHandleFromMigDeviceHandle =
      nullptr;
  decltype(&nvmlDeviceGetNvLinkState) DeviceGetNvLinkState = nullptr;
  decltype(&nvmlDeviceGetNvLinkRemotePciInfo_v2) DeviceGetNvLinkRemotePciInfo = nullptr;
  decltype(&nvmlDeviceGetNvLinkRemoteDeviceType) DeviceGetNvLinkRemoteDeviceType = nullptr;
  decltype(&nvmlEventSetCreate) EventSetCreate = nullptr;
  decltype(&nvmlDeviceRegisterEvents) DeviceRegisterEvents = nullptr;
  decltype(&nvmlEventSetWait_v2) EventSetWait = nullptr;
  decltype(&nvmlEventSetFree) EventSetFree = nullptr;

  // Whether the MIG calls a partitioner needs are all there.
  bool HasMig() const;

 private:
  explicit NvmlLibrary(void* handle) : handle_(handle) {}

  void* handle_;
  decltype(&nvmlInit_v2) init_ = nullptr;
  decltype(&nvmlErrorString) error_string_ = nullptr;
  decltype(&nvmlShutdown) shutdown_ = nullptr;
  int inits_ = 0;  // Init() calls that succeeded, undone by the destructor.
};

}  // namespace tessera::nvml
