#include "nvml/gpu_telemetry.h"

#include <map>

namespace tessera::nvml {

GpuTelemetrySource::GpuTelemetrySource(NvmlLibrary& nvml, std::vector<nvmlDevice_t> gpus)
    : nvml_(nvml), gpus_(std::move(gpus)), ecc_seen_(gpus_.size(), 0) {
  for (size_t i = 0; i < gpus_.size(); ++i) {
    ecc_seen_[i] = UncorrectedEcc(gpus_[i]);
    if (ecc_seen_[i] > 0) {
      note_ += "GPU " + std::to_string(i) + " had " + std::to_string(ecc_seen_[i]) +
               " uncorrectable ECC errors before this start; ";
    }
  }
  if (!nvml_.EventSetCreate || !nvml_.DeviceRegisterEvents || !nvml_.EventSetWait ||
      !nvml_.EventSetFree) {
    note_ += "this driver has no event calls: XID errors are not reported";
    return;
  }
  if (nvmlReturn_t r = nvml_.EventSetCreate(&events_); r != NVML_SUCCESS) {
    events_ = nullptr;
    note_ += "no event set (" + nvml_.ErrorString(r) + "): XID errors are not reported";
    return;
  }
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const nvmlReturn_t r =
        nvml_.DeviceRegisterEvents(gpus_[i], nvmlEventTypeXidCriticalError, events_);
    if (r != NVML_SUCCESS) {
      note_ +=
          "GPU " + std::to_string(i) + " reports no XID errors (" + nvml_.ErrorString(r) + "); ";
    }
  }
}

GpuTelemetrySource::~GpuTelemetrySource() {
  if (events_ != nullptr) nvml_.EventSetFree(events_);
}

unsigned long long GpuTelemetrySource::UncorrectedEcc(nvmlDevice_t gpu) const {
  unsigned long long count = 0;
  if (!nvml_.DeviceGetTotalEccErrors ||
      nvml_.DeviceGetTotalEccErrors(gpu, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
                                    &count) != NVML_SUCCESS) {
    return 0;  // ECC off, or not reported by this GPU.
  }
  return count;
}

std::vector<v1::GpuTelemetry> GpuTelemetrySource::Read(const std::string& node, int64_t now_us) {
  std::lock_guard lock(mutex_);
  std::map<nvmlDevice_t, std::vector<int32_t>> xids;
  if (events_ != nullptr) {
    nvmlEventData_t event{};
    while (nvml_.EventSetWait(events_, &event, 0) == NVML_SUCCESS) {
      if (event.eventType == nvmlEventTypeXidCriticalError) {
        xids[event.device].push_back(static_cast<int32_t>(event.eventData));
      }
    }
  }
  std::vector<v1::GpuTelemetry> readings;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const nvmlDevice_t gpu = gpus_[i];
    v1::GpuTelemetry& reading = readings.emplace_back();
    reading.set_node(node);
    reading.set_gpu(static_cast<int32_t>(i));
    reading.set_time_us(now_us);
    nvmlUtilization_t utilization{};
    if (nvml_.DeviceGetUtilizationRates &&
        nvml_.DeviceGetUtilizationRates(gpu, &utilization) == NVML_SUCCESS) {
      reading.set_utilization_pct(utilization.gpu);
    }
    nvmlMemory_t memory{};
    if (nvml_.DeviceGetMemoryInfo(gpu, &memory) == NVML_SUCCESS) {
      reading.set_memory_used_mib(static_cast<int64_t>(memory.used >> 20));
    }
    unsigned celsius = 0;
    if (nvml_.DeviceGetTemperature &&
        nvml_.DeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &celsius) == NVML_SUCCESS) {
      reading.set_temperature_c(celsius);
    }
    unsigned milliwatts = 0;
    if (nvml_.DeviceGetPowerUsage && nvml_.DeviceGetPowerUsage(gpu, &milliwatts) == NVML_SUCCESS) {
      reading.set_power_w(milliwatts / 1000.0);
    }
    const unsigned long long ecc = UncorrectedEcc(gpu);
    if (ecc > ecc_seen_[i]) reading.set_ecc_uncorrectable_errors(ecc - ecc_seen_[i]);
    ecc_seen_[i] = ecc;  // a lower count than before: the driver was reloaded.
    if (auto found = xids.find(gpu); found != xids.end()) {
      for (int32_t xid : found->second) reading.add_xid_errors(xid);
    }
  }
  return readings;
}

}  // namespace tessera::nvml
