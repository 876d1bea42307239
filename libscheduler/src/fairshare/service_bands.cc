#include "fairshare/service_bands.h"

#include <cmath>

namespace tessera {
namespace {

constexpr int64_t kUsPerS = 1'000'000;

}  // namespace

int32_t ServiceBand(const v1::AttainedServiceOrder& order, int64_t gpu_us) {
  if (order.band_limits_gpu_s().empty()) {
    return gpu_us >= kDefaultServiceBandLimitGpuS * kUsPerS ? 1 : 0;
  }
  int32_t band = 0;
  for (int64_t limit_s : order.band_limits_gpu_s()) {
    if (gpu_us < limit_s * kUsPerS) break;
    ++band;
  }
  return band;
}

std::optional<int64_t> NextBandLimitGpuUs(const v1::AttainedServiceOrder& order, int64_t gpu_us) {
  if (order.band_limits_gpu_s().empty()) {
    const int64_t limit = kDefaultServiceBandLimitGpuS * kUsPerS;
    return gpu_us < limit ? std::optional<int64_t>(limit) : std::nullopt;
  }
  for (int64_t limit_s : order.band_limits_gpu_s()) {
    if (gpu_us < limit_s * kUsPerS) return limit_s * kUsPerS;
  }
  return std::nullopt;
}

std::optional<TimestampUs> BandPromotionAt(const v1::AttainedServiceOrder& order,
                                           TimestampUs requeued_us, int64_t run_us) {
  if (order.starvation_factor() <= 0 || run_us <= 0) return std::nullopt;
  const double wait_us = std::ceil(order.starvation_factor() * static_cast<double>(run_us));
  return requeued_us + static_cast<int64_t>(wait_us);
}

}  // namespace tessera
