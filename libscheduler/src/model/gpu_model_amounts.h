// GpuModelAmounts: milli-GPUs per GPU model, kept beside a ResourceVector.
//
// A ResourceVector's gpu_milli counts GPUs of every model together ("any model"): that is what
// today's quotas and DRF see. Where a model matters (a queue's H100 guarantee, the H100s a job
// holds) the amount per model lives here, in the same physical units, keyed by the model's
// interned id (model/gpu_models.h). Almost every holder has GPUs of one or two models, so this
// is a short vector sorted by model rather than a table of every model; zero amounts are not
// kept, so two equal sets of amounts compare equal.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/resource_vector.h"

namespace tessera {

class GpuModelAmounts {
 public:
  using Entry = std::pair<int, int64_t>;  // model id, milli-GPUs.

  // The amount of `model` (0 when none is held).
  int64_t Get(int model) const;
  // Adds `milli` (may be negative) to `model`'s amount; model < 0 (no GPU) is ignored.
  void Add(int model, int64_t milli);
  GpuModelAmounts& operator+=(const GpuModelAmounts& other);
  GpuModelAmounts& operator-=(const GpuModelAmounts& other);
  friend bool operator==(const GpuModelAmounts&, const GpuModelAmounts&) = default;

  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }
  // The models with a non-zero amount, in increasing id order.
  const std::vector<Entry>& entries() const { return entries_; }
  bool AnyNegative() const;

 private:
  std::vector<Entry> entries_;
};

// An amount of resources with its GPUs also counted by model: `resources.gpu_milli()` is the
// total over every model, `gpus_by_model` the same milli-GPUs split by the model they are (or
// will be) on. What the engine tells queue accounting a job holds, or will soon take.
struct ResourceCharge {
  ResourceVector resources;
  GpuModelAmounts gpus_by_model;

  ResourceCharge& operator+=(const ResourceCharge& o) {
    resources += o.resources;
    gpus_by_model += o.gpus_by_model;
    return *this;
  }
  ResourceCharge& operator-=(const ResourceCharge& o) {
    resources -= o.resources;
    gpus_by_model -= o.gpus_by_model;
    return *this;
  }
  bool IsZero() const { return resources.IsZero() && gpus_by_model.empty(); }
};

}  // namespace tessera
