// What an MPS client may use of its GPU, and the lower-wins rule that decides it.
//
// MPS has two places to set a limit (backends-reference.md section 4):
//   - the control daemon's defaults, `set_default_active_thread_percentage <pct>` and
//     `set_default_device_pinned_mem_limit <dev> <value>`, which every server it starts
//     afterwards applies to each of its clients (`set_active_thread_percentage <server PID>`
//     and `set_device_pinned_mem_limit <server PID> ...` do the same for one running server);
//   - the client's own environment, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and
//     CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, read when the client initialises CUDA.
// Where both are set the lower wins: a client can narrow its share, never widen it.
//
// Only the second is per client. A server serves every client of one UID, and a scheduler's
// tasks all run as the host's user, so the per-server commands would set one value for every
// task on the GPU, and only for clients that connect afterwards. So Tessera sets each task's
// share in its environment, and uses the daemon's defaults as a ceiling for the whole GPU
// (100% and no memory limit unless the operator narrows them).
//
// Plain values and functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/plugin/plugin.h"

namespace tessera::mps {

// Clients per GPU on Volta and later (the MPS docs; newer ones say 60, MIG compute instances
// fewer). Tessera keeps the figure every supported GPU honours.
inline constexpr int kMaxClientsPerGpu = 48;

struct MpsLimits {
  // Share of the GPU's threads (SMs), 1..100. 100 = no narrowing.
  int active_thread_pct = 100;
  // Device memory the client may allocate, in MiB; 0 = no limit.
  int64_t pinned_memory_mib = 0;
};

// INVALID_ARGUMENT naming `what` (e.g. "mps.active_thread_pct") when a value is out of range.
plugin::PluginStatus CheckLimits(const MpsLimits& limits, const std::string& what);

// What a client asking for `client` gets under a daemon whose defaults are `ceiling`: the lower
// of each, a missing memory limit (0) losing to any set one.
MpsLimits EffectiveLimits(const MpsLimits& client, const MpsLimits& ceiling);

// A pinned memory limit as the control commands and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT write it:
// MiB with the "M" qualifier ("8192M").
std::string PinnedMemoryValue(int64_t mib);

// The number in an answer to get_default_active_thread_percentage ("100.0"), or nothing.
std::optional<double> ParseThreadPercentage(const std::string& answer);
// The MiB in an answer to get_default_device_pinned_mem_limit: "<n>M", "<n>G" (GiB), "<n>"
// in bytes, with an optional "B" ("512MB"); 0 for "0". Nothing when it is none of these.
std::optional<int64_t> ParsePinnedMemoryMib(const std::string& answer);

}  // namespace tessera::mps
