// The arithmetic of weighted Dominant Resource Fairness (Ghodsi et al., NSDI 2011).
//
// A client's dominant share is the largest fraction of any one resource it holds, divided by
// its weight. DRF repeatedly serves the client with the smallest dominant share; this equalises
// dominant shares (scaled by weight) and gives sharing incentive, envy-freeness, Pareto
// efficiency and strategy-proofness.
#pragma once

#include "model/gpu_model_amounts.h"
#include "model/resource_vector.h"

namespace tessera {

// max over resources r with capacity[r] > 0 of allocation[r] / capacity[r], divided by weight
// (> 0). Resources the cluster does not have are ignored.
inline double DominantShare(const ResourceVector& allocation, const ResourceVector& capacity,
                            double weight) {
  double dominant = 0.0;
  for (int r = 0; r < kNumResources; ++r) {
    if (capacity[r] <= 0) continue;
    double share = static_cast<double>(allocation[r]) / static_cast<double>(capacity[r]);
    if (share > dominant) dominant = share;
  }
  return dominant / weight;
}

// How far a client is into its guarantee: max over guaranteed resources of allocation /
// guarantee. Below 1 means it holds less than it is guaranteed on every guaranteed resource.
// Returns a value >= 1 when nothing is guaranteed.
inline double GuaranteeShare(const ResourceVector& allocation, const ResourceVector& guarantee) {
  double share = -1.0;
  for (int r = 0; r < kNumResources; ++r) {
    if (guarantee[r] <= 0) continue;
    double s = static_cast<double>(allocation[r]) / static_cast<double>(guarantee[r]);
    if (s > share) share = s;
  }
  return share < 0 ? 1.0 : share;
}

// The same with guarantees per GPU model beside those for any model: the max runs over both.
inline double GuaranteeShare(const ResourceVector& allocation, const ResourceVector& guarantee,
                             const GpuModelAmounts& allocation_by_model,
                             const GpuModelAmounts& guarantee_by_model) {
  if (guarantee_by_model.empty()) return GuaranteeShare(allocation, guarantee);
  double share = guarantee.IsZero() ? -1.0 : GuaranteeShare(allocation, guarantee);
  for (const auto& [model, guaranteed] : guarantee_by_model.entries()) {
    const double s =
        static_cast<double>(allocation_by_model.Get(model)) / static_cast<double>(guaranteed);
    if (s > share) share = s;
  }
  return share < 0 ? 1.0 : share;
}

}  // namespace tessera
