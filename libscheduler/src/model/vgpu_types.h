// vGPU types: the time-sliced NVIDIA vGPU devices a GPU in vGPU mode offers, named
// "<GPU>-<framebuffer GB><series>" ("A100-4C": 4 GB of framebuffer, compute series).
//
// A GPU holds vGPUs of one type at a time (after the first is created, other types show zero
// available instances), and fits memory/framebuffer of them: ten A100-4C on an A100-40GB. The
// vGPU scheduler shares the GPU's time equally, so each counts 1/instances of the compute and
// its framebuffer of memory. MIG-backed types ("A100-1-5C") are not modelled: use a MIG
// request instead.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tessera::vgpu {

// The most vGPUs one GPU hosts.
inline constexpr int kMaxPerGpu = 32;

struct TypeName {
  std::string family;       // "A100": the GPU model up to its first '-'.
  int32_t framebuffer_gib;  // 4 for "A100-4C".
  char series;              // 'C' (compute), 'Q', 'B' or 'A'.
};

// Parses "A100-4C"; nullopt when the name does not have that form.
std::optional<TypeName> ParseType(std::string_view name);
// The family part of a GPU model name: "A100" for "A100-80GB".
std::string_view Family(std::string_view gpu_model);
// The one copy of a family name, kept for the life of the process (GPU slots point to it).
const std::string* InternFamily(std::string_view family);
// Whole GiB of a GPU's memory, as vGPU framebuffer sizes count it.
int32_t MemoryGib(int64_t gpu_memory_mib);
// How many vGPUs with `framebuffer_gib` fit a GPU of `gpu_memory_mib`; 0 when none.
int InstancesPerGpu(int32_t framebuffer_gib, int64_t gpu_memory_mib);
// The framebuffer sizes, in GiB and increasing, that the scheduler may choose when a task asks
// for "at least X GiB" on an idle vGPU GPU (the C-series sizes NVIDIA ships for A100 and H100;
// a task may still name any "<family>-<N>C" type that fits the GPU).
std::span<const int32_t> StandardFramebuffers();
// "A100-4C" for a family and framebuffer.
std::string TypeNameFor(std::string_view family, int32_t framebuffer_gib);

}  // namespace tessera::vgpu
