#include "fairshare/decayed_usage.h"

#include <algorithm>
#include <cmath>

namespace tessera {

void DecayedUsage::Advance(int64_t now_us, const ResourceVector& allocation, int64_t half_life_us,
                           const GpuModelAmounts& by_model) {
  if (last_us_ < 0 || half_life_us <= 0) {
    last_us_ = now_us;
    if (half_life_us <= 0) {
      for (int r = 0; r < kNumResources; ++r) equivalent_[r] = static_cast<double>(allocation[r]);
      by_model_.clear();
      for (const auto& [model, milli] : by_model.entries()) {
        by_model_.emplace_back(model, static_cast<double>(milli));
      }
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
  // Models held now get an entry (from nothing) before every entry relaxes toward its model's
  // allocation, as the totals above do.
  for (const auto& [model, milli] : by_model.entries()) {
    auto it = std::lower_bound(by_model_.begin(), by_model_.end(), model,
                               [](const std::pair<int, double>& e, int m) { return e.first < m; });
    if (it == by_model_.end() || it->first != model) by_model_.insert(it, {model, 0.0});
  }
  for (auto& [model, equivalent] : by_model_) {
    const double a = static_cast<double>(by_model.Get(model));
    equivalent = a + (equivalent - a) * keep;
  }
  last_us_ = now_us;
}

GpuModelAmounts DecayedUsage::EquivalentByModel() const {
  GpuModelAmounts out;
  for (const auto& [model, equivalent] : by_model_) out.Add(model, std::llround(equivalent));
  return out;
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
