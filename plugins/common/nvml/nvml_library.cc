#include "nvml/nvml_library.h"

#include <dlfcn.h>

#include <initializer_list>
#include <utility>

namespace tessera::nvml {
namespace {

// The first of `names` the library exports, as a pointer of type T.
template <typename T>
T Find(void* handle, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* symbol = ::dlsym(handle, name)) return reinterpret_cast<T>(symbol);
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<NvmlLibrary> NvmlLibrary::Load(const std::string& path, std::string* error) {
  void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    if (error) *error = why ? why : ("cannot load " + path);
    return nullptr;
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle));
  NvmlLibrary& l = *lib;
  using T = NvmlLibrary;
  // Versioned names first; an older name only where its signature is the same.
  l.init_ = Find<decltype(T::init_)>(handle, {"nvmlInit_v2", "nvmlInit"});
  l.error_string_ = Find<decltype(T::error_string_)>(handle, {"nvmlErrorString"});
  l.shutdown_ = Find<decltype(T::shutdown_)>(handle, {"nvmlShutdown"});
  l.SystemGetDriverVersion =
      Find<decltype(T::SystemGetDriverVersion)>(handle, {"nvmlSystemGetDriverVersion"});
  l.DeviceGetCount =
      Find<decltype(T::DeviceGetCount)>(handle, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  l.DeviceGetHandleByIndex = Find<decltype(T::DeviceGetHandleByIndex)>(
      handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  l.DeviceGetUUID = Find<decltype(T::DeviceGetUUID)>(handle, {"nvmlDeviceGetUUID"});
  l.DeviceGetName = Find<decltype(T::DeviceGetName)>(handle, {"nvmlDeviceGetName"});
  l.DeviceGetMemoryInfo =
      Find<decltype(T::DeviceGetMemoryInfo)>(handle, {"nvmlDeviceGetMemoryInfo"});
  const std::initializer_list<std::pair<const char*, bool>> required = {
      {"nvmlInit_v2", l.init_ != nullptr},
      {"nvmlErrorString", l.error_string_ != nullptr},
      {"nvmlShutdown", l.shutdown_ != nullptr},
      {"nvmlSystemGetDriverVersion", l.SystemGetDriverVersion != nullptr},
      {"nvmlDeviceGetCount_v2", l.DeviceGetCount != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", l.DeviceGetHandleByIndex != nullptr},
      {"nvmlDeviceGetUUID", l.DeviceGetUUID != nullptr},
      {"nvmlDeviceGetName", l.DeviceGetName != nullptr},
      {"nvmlDeviceGetMemoryInfo", l.DeviceGetMemoryInfo != nullptr}};
  for (const auto& [name, found] : required) {
    if (!found) {
      if (error) *error = path + " has no " + name;
      return nullptr;
    }
  }

  l.DeviceGetHandleByUUID =
      Find<decltype(T::DeviceGetHandleByUUID)>(handle, {"nvmlDeviceGetHandleByUUID"});
  // _v2 and _v3 fill the same struct (v3 adds nothing before busId).
  l.DeviceGetPciInfo = Find<decltype(T::DeviceGetPciInfo)>(
      handle, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  l.DeviceGetUtilizationRates =
      Find<decltype(T::DeviceGetUtilizationRates)>(handle, {"nvmlDeviceGetUtilizationRates"});
  l.DeviceGetTemperature =
      Find<decltype(T::DeviceGetTemperature)>(handle, {"nvmlDeviceGetTemperature"});
  l.DeviceGetPowerUsage =
      Find<decltype(T::DeviceGetPowerUsage)>(handle, {"nvmlDeviceGetPowerUsage"});
  l.DeviceGetTotalEccErrors =
      Find<decltype(T::DeviceGetTotalEccErrors)>(handle, {"nvmlDeviceGetTotalEccErrors"});
  l.DeviceGetMigMode = Find<decltype(T::DeviceGetMigMode)>(handle, {"nvmlDeviceGetMigMode"});
  l.DeviceSetMigMode = Find<decltype(T::DeviceSetMigMode)>(handle, {"nvmlDeviceSetMigMode"});
  l.DeviceGetGpuInstanceProfileInfo = Find<decltype(T::DeviceGetGpuInstanceProfileInfo)>(
      handle, {"nvmlDeviceGetGpuInstanceProfileInfo"});
  // The v1 of this call took no count argument: no fallback.
  l.DeviceGetGpuInstancePossiblePlacements =
      Find<decltype(T::DeviceGetGpuInstancePossiblePlacements)>(
          handle, {"nvmlDeviceGetGpuInstancePossiblePlacements_v2"});
  l.DeviceGetGpuInstanceRemainingCapacity =
      Find<decltype(T::DeviceGetGpuInstanceRemainingCapacity)>(
          handle, {"nvmlDeviceGetGpuInstanceRemainingCapacity"});
  l.DeviceCreateGpuInstance =
      Find<decltype(T::DeviceCreateGpuInstance)>(handle, {"nvmlDeviceCreateGpuInstance"});
  l.DeviceCreateGpuInstanceWithPlacement = Find<decltype(T::DeviceCreateGpuInstanceWithPlacement)>(
      handle, {"nvmlDeviceCreateGpuInstanceWithPlacement"});
  l.GpuInstanceDestroy = Find<decltype(T::GpuInstanceDestroy)>(handle, {"nvmlGpuInstanceDestroy"});
  l.DeviceGetGpuInstances =
      Find<decltype(T::DeviceGetGpuInstances)>(handle, {"nvmlDeviceGetGpuInstances"});
  l.GpuInstanceGetInfo = Find<decltype(T::GpuInstanceGetInfo)>(handle, {"nvmlGpuInstanceGetInfo"});
  l.GpuInstanceGetComputeInstanceProfileInfo =
      Find<decltype(T::GpuInstanceGetComputeInstanceProfileInfo)>(
          handle, {"nvmlGpuInstanceGetComputeInstanceProfileInfo"});
  l.GpuInstanceCreateComputeInstance = Find<decltype(T::GpuInstanceCreateComputeInstance)>(
      handle, {"nvmlGpuInstanceCreateComputeInstance"});
  l.GpuInstanceGetComputeInstances = Find<decltype(T::GpuInstanceGetComputeInstances)>(
      handle, {"nvmlGpuInstanceGetComputeInstances"});
  l.ComputeInstanceDestroy =
      Find<decltype(T::ComputeInstanceDestroy)>(handle, {"nvmlComputeInstanceDestroy"});
  // v1 fills the same struct but leaves the placement out.
  l.ComputeInstanceGetInfo =
      Find<decltype(T::ComputeInstanceGetInfo)>(handle, {"nvmlComputeInstanceGetInfo_v2"});
  l.DeviceGetMaxMigDeviceCount =
      Find<decltype(T::DeviceGetMaxMigDeviceCount)>(handle, {"nvmlDeviceGetMaxMigDeviceCount"});
  l.DeviceGetMigDeviceHandleByIndex = Find<decltype(T::DeviceGetMigDeviceHandleByIndex)>(
      handle, {"nvmlDeviceGetMigDeviceHandleByIndex"});
  l.DeviceIsMigDeviceHandle =
      Find<decltype(T::DeviceIsMigDeviceHandle)>(handle, {"nvmlDeviceIsMigDeviceHandle"});
  l.DeviceGetGpuInstanceId =
      Find<decltype(T::DeviceGetGpuInstanceId)>(handle, {"nvmlDeviceGetGpuInstanceId"});
  l.DeviceGetComputeInstanceId =
      Find<decltype(T::DeviceGetComputeInstanceId)>(handle, {"nvmlDeviceGetComputeInstanceId"});
  l.DeviceGetDeviceHandleFromMigDeviceHandle =
      Find<decltype(T::DeviceGetDeviceHandleFromMigDeviceHandle)>(
          handle, {"nvmlDeviceGetDeviceHandleFromMigDeviceHandle"});
  l.DeviceGetNvLinkState =
      Find<decltype(T::DeviceGetNvLinkState)>(handle, {"nvmlDeviceGetNvLinkState"});
  // The v1 filled the older, shorter nvmlPciInfo_t: no fallback.
  l.DeviceGetNvLinkRemotePciInfo = Find<decltype(T::DeviceGetNvLinkRemotePciInfo)>(
      handle, {"nvmlDeviceGetNvLinkRemotePciInfo_v2"});
  l.DeviceGetNvLinkRemoteDeviceType = Find<decltype(T::DeviceGetNvLinkRemoteDeviceType)>(
      handle, {"nvmlDeviceGetNvLinkRemoteDeviceType"});
  l.EventSetCreate = Find<decltype(T::EventSetCreate)>(handle, {"nvmlEventSetCreate"});
  l.DeviceRegisterEvents =
      Find<decltype(T::DeviceRegisterEvents)>(handle, {"nvmlDeviceRegisterEvents"});
  // nvmlEventSetWait (v1) fills a shorter nvmlEventData_t: no fallback.
  l.EventSetWait = Find<decltype(T::EventSetWait)>(handle, {"nvmlEventSetWait_v2"});
  l.EventSetFree = Find<decltype(T::EventSetFree)>(handle, {"nvmlEventSetFree"});
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  for (; inits_ > 0; --inits_) shutdown_();
  ::dlclose(handle_);
}

nvmlReturn_t NvmlLibrary::Init() {
  const nvmlReturn_t result = init_();
  if (result == NVML_SUCCESS) ++inits_;
  return result;
}

std::string NvmlLibrary::ErrorString(nvmlReturn_t result) const {
  const char* text = error_string_(result);
  return text != nullptr ? text : "NVML error " + std::to_string(result);
}

bool NvmlLibrary::HasMig() const {
  return DeviceGetMigMode && DeviceGetGpuInstanceProfileInfo &&
         DeviceGetGpuInstancePossiblePlacements && DeviceCreateGpuInstanceWithPlacement &&
         GpuInstanceDestroy && DeviceGetGpuInstances && GpuInstanceGetInfo &&
         GpuInstanceGetComputeInstanceProfileInfo && GpuInstanceCreateComputeInstance &&
         GpuInstanceGetComputeInstances && ComputeInstanceDestroy && ComputeInstanceGetInfo &&
         DeviceGetMaxMigDeviceCount && DeviceGetMigDeviceHandleByIndex;
}

}  // namespace tessera::nvml
