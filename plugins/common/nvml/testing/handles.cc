// Handles, the init count, and the calls that need no GPU: nvmlInit_v2, nvmlShutdown and
// nvmlErrorString (handles.h says where they differ from the driver).
#include "nvml/testing/handles.h"

#include <unistd.h>

#include <cstring>
#include <deque>
#include <mutex>

namespace tessera::fake_nvml {
namespace {

std::mutex handles_mu;
std::deque<Handle> handles;  // stable addresses.

std::mutex init_mu;
int init_count = 0;

}  // namespace

Handle* HandleFor(Kind kind, unsigned gpu, unsigned gi, unsigned ci) {
  std::lock_guard lock(handles_mu);
  for (Handle& h : handles) {
    if (h.kind == kind && h.gpu == gpu && h.gi == gi && h.ci == ci) return &h;
  }
  handles.push_back({kind, gpu, gi, ci});
  return &handles.back();
}

const Handle* Get(const void* handle) {
  std::lock_guard lock(handles_mu);
  for (const Handle& h : handles) {
    if (&h == handle) return &h;
  }
  return nullptr;
}

bool Initialized() {
  std::lock_guard lock(init_mu);
  return init_count > 0;
}

nvmlReturn_t Resolve(State& state, const void* raw, Resolved* out) {
  const Handle* h = Get(raw);
  if (h == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  out->handle = h;
  out->gpu = state.gpu(h->gpu);
  if (out->gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (h->kind == Kind::kGpu) return NVML_SUCCESS;
  out->gi = FindGi(*out->gpu, h->gi);
  if (out->gi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;  // destroyed since.
  if (h->kind == Kind::kGpuInstance) return NVML_SUCCESS;
  out->ci = FindCi(*out->gi, h->ci);
  if (out->ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

}  // namespace tessera::fake_nvml

using namespace tessera::fake_nvml;  // NOLINT: the exports below are C functions.

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  const char* path = StatePath();
  if (path == nullptr || ::access(path, R_OK | W_OK) != 0) return NVML_ERROR_DRIVER_NOT_LOADED;
  std::lock_guard lock(init_mu);
  ++init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard lock(init_mu);
  if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient resources";
    default:
      return "Unknown Error";
  }
}
