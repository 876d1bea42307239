// DecayedUsage: what a queue has used lately, with older use counting less (half-life h).
//
// It is kept as an "equivalent allocation": the constant allocation that would leave the same
// exponentially decayed integral. It relaxes toward the current allocation a with half-life h:
//   E(t + dt) = a + (E(t) - a) * 2^(-dt/h)
// so it is comparable with allocations, needs no normalisation, and never overflows. GPUs are
// also kept per model (the same relaxation toward the allocation of each model), so that a
// price per model (fairshare/gpu_model_weights.h) can be applied to what was used.
#pragma once

#include <array>
#include <cstdint>

#include <utility>
#include <vector>

#include "model/gpu_model_amounts.h"
#include "model/resource_vector.h"

namespace tessera {

class DecayedUsage {
 public:
  // Folds the time from the last call until `now_us`, during which `allocation` was held.
  // `by_model` is the same allocation's GPUs by model.
  void Advance(int64_t now_us, const ResourceVector& allocation, int64_t half_life_us,
               const GpuModelAmounts& by_model = {});

  // The equivalent allocation, rounded to the resource units.
  ResourceVector Equivalent() const;
  // The equivalent allocation's GPUs of each model, each rounded to milli-GPUs.
  GpuModelAmounts EquivalentByModel() const;
  bool IsZero() const;

 private:
  std::array<double, kNumResources> equivalent_{};
  // By model id, increasing; a model once held keeps its entry while it decays.
  std::vector<std::pair<int, double>> by_model_;
  int64_t last_us_ = -1;
};

}  // namespace tessera
