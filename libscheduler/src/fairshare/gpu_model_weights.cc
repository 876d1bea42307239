#include "fairshare/gpu_model_weights.h"

#include <algorithm>
#include <cmath>

namespace tessera {

GpuModelWeights::GpuModelWeights(const std::map<std::string, double>& by_name,
                                 const GpuModels* models)
    : models_(models) {
  for (const auto& [name, weight] : by_name) {
    by_name_[name] = std::max<int64_t>(1, std::llround(weight * static_cast<double>(kUnit)));
  }
}

int64_t GpuModelWeights::Of(int id) const {
  if (id < 0 || models_ == nullptr || by_name_.empty()) return kUnit;
  if (id >= models_->size()) return kUnit;  // not a model anyone named.
  if (id >= static_cast<int>(by_id_.size())) by_id_.resize(id + 1, -1);
  int64_t& weight = by_id_[id];
  if (weight < 0) {
    auto it = by_name_.find(models_->Name(id));
    weight = it == by_name_.end() ? kUnit : it->second;
  }
  return weight;
}

int64_t GpuModelWeights::Price(const GpuModelAmounts& amounts) const {
  int64_t price = 0;
  for (const auto& [model, milli] : amounts.entries()) price += Of(model) * milli;
  return price;
}

}  // namespace tessera
