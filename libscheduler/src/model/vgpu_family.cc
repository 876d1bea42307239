#include "model/vgpu_family.h"

#include <functional>
#include <mutex>
#include <set>

namespace tessera::vgpu {

const std::string* InternFamily(std::string_view family) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> families;
  std::lock_guard<std::mutex> lock(mu);
  auto it = families.find(family);
  if (it == families.end()) it = families.emplace(family).first;
  return &*it;
}

}  // namespace tessera::vgpu
