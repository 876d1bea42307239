// What every call of the fake NVML checks first: that nvmlInit_v2 was called (a count, as NVML
// counts nested inits), that the state file is readable, and that the handle passed is one the
// fake gave out and still names something. A handle is a small object that names a GPU, a GPU
// instance, a compute instance, or a MIG device (a compute instance seen as a device), kept for
// the life of the process, so the same GPU or instance always gets the same handle, as with the
// driver.
//
// Where it may differ from the real driver: every call answers a handle to an instance destroyed
// since with INVALID_ARGUMENT, and handles are never freed.
#pragma once

#include <string>

#include "nvml/nvml_api.h"
#include "nvml/testing/state_file.h"

namespace tessera::fake_nvml {

enum class Kind { kGpu, kGpuInstance, kComputeInstance, kMigDevice };

struct Handle {
  Kind kind;
  unsigned gpu;
  unsigned gi = 0;
  unsigned ci = 0;
};

// The one handle for (kind, gpu, gi, ci), made on first use; its address is stable.
Handle* HandleFor(Kind kind, unsigned gpu, unsigned gi = 0, unsigned ci = 0);
// The handle at `handle`, or null when the fake never gave it out.
const Handle* Get(const void* handle);

// Whether nvmlInit_v2 succeeded more often than nvmlShutdown was called.
bool Initialized();

// The GPU (and, for instance handles, the instance JSON) a handle names.
struct Resolved {
  const Handle* handle = nullptr;
  json* gpu = nullptr;
  json* gi = nullptr;
  json* ci = nullptr;
};
// INVALID_ARGUMENT when `raw` is no handle or names what no longer exists.
nvmlReturn_t Resolve(State& state, const void* raw, Resolved* out);

// Copies `text` into a caller's buffer of `length` bytes, as NVML's string getters do.
nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length);

}  // namespace tessera::fake_nvml

// A call's common start: initialised, the state readable (and locked while `state` lives).
#define FAKE_NVML_BEGIN(state)                                               \
  if (!::tessera::fake_nvml::Initialized()) return NVML_ERROR_UNINITIALIZED; \
  ::tessera::fake_nvml::State state;                                         \
  if (!state.ok()) return NVML_ERROR_DRIVER_NOT_LOADED

// The fake's NVML functions: the only symbols it exports (fake_nvml.map).
#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))
