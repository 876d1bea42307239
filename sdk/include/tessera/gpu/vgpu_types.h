// vGPU types: the time-sliced NVIDIA vGPU devices a GPU in vGPU mode offers, named
// "<GPU>-<framebuffer GB><series>" ("A100-4C": 4 GB of framebuffer, compute series).
//
// A GPU holds vGPUs of one type at a time (after the first is created, other types show zero
// available instances), and fits memory/framebuffer of them: ten A100-4C on an A100-40GB. The
// vGPU scheduler shares the GPU's time equally, so each counts 1/instances of the compute and
// its framebuffer of memory. MIG-backed types ("A100-1-5C") are not modelled: use a MIG
// request instead. The scheduler places vGPU requests with these rules and a vGPU partitioner
// plugin creates the types it placed with the same names.
//
// Header-only, pure functions: safe to call from any thread.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace tessera::vgpu {

// The most vGPUs one GPU hosts.
inline constexpr int kMaxPerGpu = 32;

struct TypeName {
  std::string family;       // "A100": the GPU model up to its first '-'.
  int32_t framebuffer_gib;  // 4 for "A100-4C".
  char series;              // 'C' (compute), 'Q', 'B' or 'A'.
};

// Parses "A100-4C"; nullopt when the name does not have that form.
inline std::optional<TypeName> ParseType(std::string_view name) {
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

// The family part of a GPU model name: "A100" for "A100-80GB".
inline std::string_view Family(std::string_view gpu_model) {
  return gpu_model.substr(0, gpu_model.find('-'));
}

// Whole GiB of a GPU's memory, as vGPU framebuffer sizes count it.
inline int32_t MemoryGib(int64_t gpu_memory_mib) {
  return static_cast<int32_t>((gpu_memory_mib + 512) / 1024);
}

// How many vGPUs with `framebuffer_gib` fit a GPU of `gpu_memory_mib`; 0 when none.
inline int InstancesPerGpu(int32_t framebuffer_gib, int64_t gpu_memory_mib) {
  if (framebuffer_gib <= 0) return 0;
  const int n = MemoryGib(gpu_memory_mib) / framebuffer_gib;
  return n > kMaxPerGpu ? kMaxPerGpu : n;
}

// The framebuffer sizes, in GiB and increasing, that the scheduler may choose when a task asks
// for "at least X GiB" on an idle vGPU GPU (the C-series sizes NVIDIA ships for A100 and H100;
// a task may still name any "<family>-<N>C" type that fits the GPU).
inline std::span<const int32_t> StandardFramebuffers() {
  static constexpr std::array<int32_t, 8> kSizes = {4, 5, 8, 10, 16, 20, 40, 80};
  return kSizes;
}

// "A100-4C" for a family and framebuffer.
inline std::string TypeNameFor(std::string_view family, int32_t framebuffer_gib) {
  return std::string(family) + "-" + std::to_string(framebuffer_gib) + "C";
}

}  // namespace tessera::vgpu
