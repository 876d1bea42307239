// GPU discovery for the local backend: what the CUDA Runtime says about this machine's GPUs,
// turned into GpuDevice entries of the node's inventory.
//
// CudaRuntime is the seam: production uses DlopenCudaRuntime (libcudart, and libcuda for names
// and memory, both loaded with dlopen so the plugin runs on machines without CUDA); a test can
// implement CudaRuntime in process or point the plugin at a fake libcudart (see testing/). Any
// failure (no library, no driver, no device) is not an error: the node is simply CPU-only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/v1/node.pb.h"

namespace tessera::local {

class CudaRuntime {
 public:
  virtual ~CudaRuntime() = default;
  // The number of devices, or false with a reason (no driver, no device, ...).
  virtual bool DeviceCount(int* count, std::string* error) = 0;
  virtual bool ComputeCapability(int device, int* major, int* minor) = 0;
  // "0000:17:00.0"; empty when unknown.
  virtual std::string PciBusId(int device) = 0;
  // The marketing name ("NVIDIA H100 80GB HBM3"); empty when unknown.
  virtual std::string Name(int device) = 0;
  // Total device memory in MiB; 0 when unknown.
  virtual int64_t TotalMemoryMib(int device) = 0;
  // "GPU-1b2c..." as nvidia-smi prints it; empty when unknown.
  virtual std::string Uuid(int device) = 0;
  // Whether `device` can access `peer`'s memory directly (P2P).
  virtual bool CanAccessPeer(int device, int peer) = 0;
};

// The real CUDA Runtime (and Driver API where the runtime has no stable answer), via dlopen.
// Returns null with the reason in *error when no runtime library loads.
// `runtime_library` empty = try libcudart.so, libcudart.so.13, .so.12, .so.11.0;
// `driver_library` empty = libcuda.so.1 (optional: without it, names and memory fall back).
std::unique_ptr<CudaRuntime> OpenCudaRuntime(const std::string& runtime_library,
                                             const std::string& driver_library, std::string* error);

// The GPUs `cuda` reports, as inventory entries (index = CUDA device ordinal). Never fails:
// no device means an empty list, and *note says why (for an info log).
std::vector<v1::GpuDevice> DiscoverGpus(CudaRuntime& cuda, std::string* note);

// The scheduler's model name for a CUDA device name, by the SDK's rules
// (tessera/gpu/model_names.h: "NVIDIA A100-SXM4-80GB" -> "A100-80GB", the names the MIG tables
// use). Empty name = "cuda-sm<major><minor>".
std::string ModelName(const std::string& cuda_name, int64_t memory_mib, int major, int minor);

}  // namespace tessera::local
