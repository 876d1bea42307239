// The fake NVML's telemetry and XID errors: utilisation, temperature, power and ECC counts are
// what the state file says of each GPU ("utilization", "memory_utilization", "temperature_c",
// "power_mw", "ecc_uncorrectable", "ecc_correctable"); an XID error is a number appended to a
// GPU's "xid_events", delivered once to each event set that registered the GPU before it was
// appended.
//
// Where it differs from the real driver: only nvmlEventTypeXidCriticalError can be registered
// (others are NOT_SUPPORTED); events carry no GPU or compute instance ids (0xFFFFFFFF); a wait
// polls the state file every 5 ms instead of sleeping on the kernel; a MIG-enabled GPU and a MIG
// device report no utilisation (NOT_SUPPORTED), and a MIG device no temperature or power; there
// are no clocks, fans or vGPU calls (NVLink: nvlink.cc).
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "nvml/nvml_api.h"
#include "nvml/testing/handles.h"
#include "nvml/testing/state_file.h"

namespace tessera::fake_nvml {
namespace {

// Event sets: which devices each watches, and the XIDs already delivered from each.
struct EventSet {
  std::vector<unsigned> gpus;
  std::map<unsigned, size_t> delivered;
};
std::mutex events_mu;
std::deque<EventSet> event_sets;

}  // namespace
}  // namespace tessera::fake_nvml

using namespace tessera::fake_nvml;  // NOLINT: the definitions below are NVML's C functions.

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* utilization) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // The driver gives no utilisation for a MIG device.
  if (r.handle->kind != Kind::kGpu || MigCurrent(*r.gpu) == NVML_DEVICE_MIG_ENABLE) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  utilization->gpu = r.gpu->value("utilization", 0u);
  utilization->memory = r.gpu->value("memory_utilization", 0u);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor,
                                                       unsigned int* celsius) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (celsius == nullptr || sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (r.handle->kind != Kind::kGpu) return NVML_ERROR_NOT_SUPPORTED;
  *celsius = r.gpu->value("temperature_c", 40u);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
                                                      unsigned int* milliwatts) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (milliwatts == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (r.handle->kind != Kind::kGpu) return NVML_ERROR_NOT_SUPPORTED;
  *milliwatts = r.gpu->value("power_mw", 60000u);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int error_type,
                                                          int counter_type,
                                                          unsigned long long* count) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (count == nullptr ||
      (counter_type != NVML_VOLATILE_ECC && counter_type != NVML_AGGREGATE_ECC)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (error_type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) {
    *count = r.gpu->value("ecc_uncorrectable", 0ull);
  } else if (error_type == NVML_MEMORY_ERROR_TYPE_CORRECTED) {
    *count = r.gpu->value("ecc_correctable", 0ull);
  } else {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return NVML_SUCCESS;
}

// --- Events.

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard lock(events_mu);
  event_sets.emplace_back();
  *set = reinterpret_cast<nvmlEventSet_t>(&event_sets.back());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                       unsigned long long event_types,
                                                       nvmlEventSet_t set) {
  FAKE_NVML_BEGIN(state);
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (set == nullptr || r.handle->kind != Kind::kGpu) return NVML_ERROR_INVALID_ARGUMENT;
  if ((event_types & ~nvmlEventTypeXidCriticalError) != 0) return NVML_ERROR_NOT_SUPPORTED;
  std::lock_guard lock(events_mu);
  auto* events = reinterpret_cast<EventSet*>(set);
  events->gpus.push_back(r.handle->gpu);
  // Only XIDs that happen from now on are delivered.
  const json& xids = r.gpu->contains("xid_events") ? (*r.gpu)["xid_events"] : json::array();
  events->delivered[r.handle->gpu] = xids.size();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned int timeout_ms) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* events = reinterpret_cast<EventSet*>(set);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    {
      State state;
      if (!state.ok()) return NVML_ERROR_DRIVER_NOT_LOADED;
      std::lock_guard lock(events_mu);
      for (unsigned gpu : events->gpus) {
        json* g = state.gpu(gpu);
        if (g == nullptr || !g->contains("xid_events")) continue;
        const json& xids = (*g)["xid_events"];
        size_t& seen = events->delivered[gpu];
        if (seen < xids.size()) {
          *data = {};
          data->device = reinterpret_cast<nvmlDevice_t>(HandleFor(Kind::kGpu, gpu));
          data->eventType = nvmlEventTypeXidCriticalError;
          data->eventData = xids[seen].get<unsigned long long>();
          data->gpuInstanceId = 0xFFFFFFFF;
          data->computeInstanceId = 0xFFFFFFFF;
          ++seen;
          return NVML_SUCCESS;
        }
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (!Initialized()) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::lock_guard lock(events_mu);
  reinterpret_cast<EventSet*>(set)->gpus.clear();
  return NVML_SUCCESS;
}
