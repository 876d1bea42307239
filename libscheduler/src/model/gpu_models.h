// GpuModels: interns GPU model names ("A100-80GB") as small integers so that a set of allowed
// models is one 64-bit mask and per-model indexes are plain arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tessera {

// A set of model ids; bit m set means model m is allowed. Zero means "any model".
using ModelMask = uint64_t;

class GpuModels {
 public:
  static constexpr int kMaxModels = 64;

  // Returns the id of `name`, adding it if new; nullopt once kMaxModels models exist.
  std::optional<int> Intern(std::string_view name);
  // Returns the id of a known model.
  std::optional<int> Find(std::string_view name) const;
  const std::string& Name(int id) const { return names_[id]; }
  int size() const { return static_cast<int>(names_.size()); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> ids_;
};

}  // namespace tessera
