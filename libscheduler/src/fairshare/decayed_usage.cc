#include "fairshare/decayed_usage.h"

#include <cmath>

namespace tessera {

void DecayedUsage::Advance(int64_t now_us, const ResourceVector& allocation, int64_t half_life_us) {
  if (last_us_ < 0 || half_life_us <= 0) {
    last_us_ = now_us;
    if (half_life_us <= 0) {
      for (int r = 0; r < kNumResources; ++r) equivalent_[r] = static_cast<double>(allocation[r]);
    }
    return;
  }
  if (now_us <= last_us_) return;
  const double keep =
      std::exp2(-static_cast<double>(now_us - last_us_) / static_cast<double>(half_life_us));
  for (int r = 0; r < kNumResources; ++r) {
    const double a = static_cast<double>(allocation[r]);
    equivalent_[r] = a + (equivalent_[r] - a) * keep;
  }
  last_us_ = now_us;
}

ResourceVector DecayedUsage::Equivalent() const {
  ResourceVector out;
  for (int r = 0; r < kNumResources; ++r) out[r] = std::llround(equivalent_[r]);
  return out;
}

bool DecayedUsage::IsZero() const {
  for (double e : equivalent_) {
    if (std::llround(e) != 0) return false;
  }
  return true;
}

}  // namespace tessera
