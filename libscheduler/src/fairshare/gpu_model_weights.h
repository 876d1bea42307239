// GpuModelWeights: the price of one GPU of each model in fair share (FairShareOptions::
// gpu_model_weights), so that DRF counts an H100 above a T4.
//
// Design. Quotas stay physical: guarantees, borrowing limits and caps, per model or for any
// model, are milli-GPUs, and so is every allocation the queue tree keeps (a ResourceVector
// whose gpu_milli counts every model, and a GpuModelAmounts beside it with the same GPUs by
// model). Only the order of queues is priced: the GPU component of the vector a DrfSorter
// divides by capacity is the *weighted* milli-GPUs, sum over models of weight x milli-GPUs, and
// the capacity it is divided by is weighted the same way. Weights are kept as integers in
// thousandths (kUnit = 1.0), so the weighted amounts are exact integers and, on a cluster of
// one model, weighted / weighted capacity is the very same double as today's unweighted share
// (IEEE division of exact integers rounds their true quotient, which the common factor does not
// change). Decayed usage is kept per model in physical units and priced when read, which is the
// same as decaying the priced amount (the decay is linear) and again exact for one model.
//
// Thread safety: none; owned by the queue tree, on the decision strand.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/gpu_model_amounts.h"
#include "model/gpu_models.h"

namespace tessera {

class GpuModelWeights {
 public:
  // Weight 1.0 in the integer unit weights are kept in.
  static constexpr int64_t kUnit = 1000;

  // Every model weighs 1.
  GpuModelWeights() = default;
  // Weights by model name (validated: each in (0, 1000]); names are looked up in `models`,
  // which must outlive this object.
  GpuModelWeights(const std::map<std::string, double>& by_name, const GpuModels* models);

  // The weight of model `id` in kUnit (kUnit when the model is not listed or id < 0).
  int64_t Of(int id) const;
  // Sum over `amounts` of weight x milli-GPUs.
  int64_t Price(const GpuModelAmounts& amounts) const;

 private:
  std::map<std::string, int64_t> by_name_;
  const GpuModels* models_ = nullptr;
  // By model id, filled as ids are first asked for (ids only grow); -1 = not yet looked up.
  mutable std::vector<int64_t> by_id_;
};

}  // namespace tessera
