// GpuTelemetrySource: readings of this machine's GPUs through NVML, as the scheduler's GPU health
// policy and /metrics take them (v1::GpuTelemetry): utilisation, memory used, temperature, power,
// the uncorrectable ECC errors since the previous reading and the XID errors since the previous
// reading.
//
// XID errors arrive through an NVML event set registered for nvmlEventTypeXidCriticalError on
// every GPU at construction; Read drains it without waiting. ECC counts are NVML's volatile
// counters (since the driver loaded), reported as the increase since the previous reading, the
// first against the count found at construction: errors from before this backend started are not
// news to the scheduler (the note says how many there were).
//
// A value the GPU does not report (utilisation of a GPU in MIG mode, power on some boards) is
// left at 0. Read may be called from any thread (the plugin ABI lets on_telemetry overlap other
// calls); calls are serialised inside.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "nvml/nvml_library.h"
#include "tessera/v1/node.pb.h"

namespace tessera::nvml {

class GpuTelemetrySource {
 public:
  // `gpus[i]` is the handle of GPU index i of the node.
  GpuTelemetrySource(NvmlLibrary& nvml, std::vector<nvmlDevice_t> gpus);
  ~GpuTelemetrySource();
  GpuTelemetrySource(const GpuTelemetrySource&) = delete;
  GpuTelemetrySource& operator=(const GpuTelemetrySource&) = delete;

  // One reading per GPU, for node `node` at host time `now_us`.
  std::vector<v1::GpuTelemetry> Read(const std::string& node, int64_t now_us);

  // What could not be set up (no event calls: XIDs go unreported) and the ECC errors found at
  // start; empty when there is nothing to say.
  const std::string& note() const { return note_; }

 private:
  unsigned long long UncorrectedEcc(nvmlDevice_t gpu) const;

  NvmlLibrary& nvml_;
  const std::vector<nvmlDevice_t> gpus_;
  std::string note_;
  std::mutex mutex_;  // guards the members below and the event set.
  nvmlEventSet_t events_ = nullptr;
  std::vector<unsigned long long> ecc_seen_;  // by GPU index.
};

}  // namespace tessera::nvml
