// DecayedUsage: what a queue has used lately, with older use counting less (half-life h).
//
// It is kept as an "equivalent allocation": the constant allocation that would leave the same
// exponentially decayed integral. It relaxes toward the current allocation a with half-life h:
//   E(t + dt) = a + (E(t) - a) * 2^(-dt/h)
// so it is comparable with allocations, needs no normalisation, and never overflows.
#pragma once

#include <array>
#include <cstdint>

#include "model/resource_vector.h"

namespace tessera {

class DecayedUsage {
 public:
  // Folds the time from the last call until `now_us`, during which `allocation` was held.
  void Advance(int64_t now_us, const ResourceVector& allocation, int64_t half_life_us);

  // The equivalent allocation, rounded to the resource units.
  ResourceVector Equivalent() const;
  bool IsZero() const;

 private:
  std::array<double, kNumResources> equivalent_{};
  int64_t last_us_ = -1;
};

}  // namespace tessera
