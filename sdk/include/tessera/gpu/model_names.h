// GPU model names: the scheduler knows a GPU by a short model name, its family and marketed
// memory ("A100-80GB", "H100-80GB", "H200-141GB"), not by the device name a driver reports
// ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200"). Jobs constrain models by
// these names (JobSpec gpu_models), and the MIG and vGPU tables (mig_profiles.h,
// vgpu_types.h) are keyed by them, so every backend that reports GPUs turns the driver's name
// into one with FromDeviceName, and all of them agree.
//
// Header-only, pure functions: safe to call from any thread.
#pragma once

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::model_names {

namespace detail {

// The digits of the first "<digits>GB" in `name` ("80" in "NVIDIA A100-SXM4-80GB"), or empty.
inline std::string_view MarketedGb(std::string_view name) {
  for (size_t i = 0; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) continue;
    size_t end = i;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    if (name.substr(end, 2) == "GB") return name.substr(i, end - i);
    i = end;  // no "GB" after this run of digits; the next run starts after it.
  }
  return {};
}

}  // namespace detail

// The scheduler's model name for a device name as NVML or the CUDA driver reports it:
//   - A100 and H100: family plus the marketed memory in the name ("NVIDIA A100-SXM4-80GB" ->
//     "A100-80GB", "NVIDIA H100 80GB HBM3" -> "H100-80GB"); without one, from `memory_mib`
//     (an A100 over 48 GiB is "A100-80GB", else "A100-40GB"; an H100 over 88 GiB is
//     "H100-94GB", else "H100-80GB");
//   - any H200: "H200-141GB";
//   - other names lose a leading "NVIDIA " and have each space turned into '-'
//     ("NVIDIA L40S" -> "L40S", "Tesla V100 SXM2" -> "Tesla-V100-SXM2").
// An empty name stays empty: the caller names an unknown device its own way.
inline std::string FromDeviceName(std::string_view device_name, int64_t memory_mib) {
  if (device_name.empty()) return "";
  const std::string_view gb = detail::MarketedGb(device_name);
  const int64_t gib = memory_mib / 1024;
  if (device_name.find("A100") != std::string_view::npos) {
    if (!gb.empty()) return "A100-" + std::string(gb) + "GB";
    return gib > 48 ? "A100-80GB" : "A100-40GB";
  }
  if (device_name.find("H100") != std::string_view::npos) {
    if (!gb.empty()) return "H100-" + std::string(gb) + "GB";
    return gib > 88 ? "H100-94GB" : "H100-80GB";
  }
  if (device_name.find("H200") != std::string_view::npos) return "H200-141GB";
  std::string model(device_name.rfind("NVIDIA ", 0) == 0 ? device_name.substr(7) : device_name);
  for (char& c : model) {
    if (std::isspace(static_cast<unsigned char>(c))) c = '-';
  }
  return model;
}

}  // namespace tessera::model_names
