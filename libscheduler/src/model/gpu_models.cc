#include "model/gpu_models.h"

namespace tessera {

std::optional<int> GpuModels::Intern(std::string_view name) {
  if (auto id = Find(name)) return id;
  if (size() >= kMaxModels) return std::nullopt;
  int id = size();
  names_.emplace_back(name);
  ids_.emplace(names_.back(), id);
  return id;
}

std::optional<int> GpuModels::Find(std::string_view name) const {
  auto it = ids_.find(std::string(name));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tessera
