#include "model/vgpu_types.h"

#include <array>
#include <charconv>
#include <mutex>
#include <set>

namespace tessera::vgpu {

std::optional<TypeName> ParseType(std::string_view name) {
  const size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 2 > name.size()) return std::nullopt;
  const std::string_view size = name.substr(dash + 1, name.size() - dash - 2);
  const char series = name.back();
  if (series != 'C' && series != 'Q' && series != 'B' && series != 'A') return std::nullopt;
  int32_t gib = 0;
  auto [end, error] = std::from_chars(size.data(), size.data() + size.size(), gib);
  if (error != std::errc() || end != size.data() + size.size() || gib <= 0) return std::nullopt;
  return TypeName{std::string(name.substr(0, dash)), gib, series};
}

std::string_view Family(std::string_view gpu_model) {
  return gpu_model.substr(0, gpu_model.find('-'));
}

const std::string* InternFamily(std::string_view family) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> families;
  std::lock_guard<std::mutex> lock(mu);
  auto it = families.find(family);
  if (it == families.end()) it = families.emplace(family).first;
  return &*it;
}

int32_t MemoryGib(int64_t gpu_memory_mib) {
  return static_cast<int32_t>((gpu_memory_mib + 512) / 1024);
}

int InstancesPerGpu(int32_t framebuffer_gib, int64_t gpu_memory_mib) {
  if (framebuffer_gib <= 0) return 0;
  const int n = MemoryGib(gpu_memory_mib) / framebuffer_gib;
  return n > kMaxPerGpu ? kMaxPerGpu : n;
}

std::span<const int32_t> StandardFramebuffers() {
  // The C-series framebuffers of A100 and H100 vGPU types.
  static constexpr std::array<int32_t, 8> kSizes = {4, 5, 8, 10, 16, 20, 40, 80};
  return kSizes;
}

std::string TypeNameFor(std::string_view family, int32_t framebuffer_gib) {
  return std::string(family) + "-" + std::to_string(framebuffer_gib) + "C";
}

}  // namespace tessera::vgpu
