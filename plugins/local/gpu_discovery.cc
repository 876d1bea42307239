#include "gpu_discovery.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "tessera/gpu/model_names.h"

namespace tessera::local {
namespace {

// CUDA's C types as plain ints: cudaError_t and CUresult are enums (int-sized, 0 = success),
// CUdevice is an int. Only attribute queries are used, never cudaDeviceProp, whose layout
// changes between CUDA versions.
constexpr int kCudaDevAttrComputeCapabilityMajor = 75;
constexpr int kCudaDevAttrComputeCapabilityMinor = 76;

using CudaGetDeviceCount = int (*)(int*);
using CudaDeviceGetAttribute = int (*)(int*, int, int);
using CudaDeviceGetPciBusId = int (*)(char*, int, int);
using CudaDeviceCanAccessPeer = int (*)(int*, int, int);
using CudaSetDevice = int (*)(int);
using CudaMemGetInfo = int (*)(size_t*, size_t*);
using CudaGetErrorString = const char* (*)(int);
using CuInit = int (*)(unsigned);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(size_t*, int);
using CuDeviceGetUuid = int (*)(unsigned char*, int);  // CUuuid is 16 bytes.

template <typename F>
F Symbol(void* library, const char* name) {
  return library ? reinterpret_cast<F>(::dlsym(library, name)) : nullptr;
}

class DlopenCudaRuntime final : public CudaRuntime {
 public:
  // The libraries stay loaded for the life of the process: the CUDA runtime registers exit
  // handlers, and unloading it under them crashes at exit.
  DlopenCudaRuntime(void* runtime, void* driver) {
    get_device_count_ = Symbol<CudaGetDeviceCount>(runtime, "cudaGetDeviceCount");
    get_attribute_ = Symbol<CudaDeviceGetAttribute>(runtime, "cudaDeviceGetAttribute");
    get_pci_bus_id_ = Symbol<CudaDeviceGetPciBusId>(runtime, "cudaDeviceGetPCIBusId");
    can_access_peer_ = Symbol<CudaDeviceCanAccessPeer>(runtime, "cudaDeviceCanAccessPeer");
    set_device_ = Symbol<CudaSetDevice>(runtime, "cudaSetDevice");
    mem_get_info_ = Symbol<CudaMemGetInfo>(runtime, "cudaMemGetInfo");
    error_string_ = Symbol<CudaGetErrorString>(runtime, "cudaGetErrorString");
    CuInit cu_init = Symbol<CuInit>(driver, "cuInit");
    if (cu_init != nullptr && cu_init(0) == 0) {
      device_get_ = Symbol<CuDeviceGet>(driver, "cuDeviceGet");
      device_name_ = Symbol<CuDeviceGetName>(driver, "cuDeviceGetName");
      total_mem_ = Symbol<CuDeviceTotalMem>(driver, "cuDeviceTotalMem_v2");
      if (total_mem_ == nullptr) total_mem_ = Symbol<CuDeviceTotalMem>(driver, "cuDeviceTotalMem");
      uuid_ = Symbol<CuDeviceGetUuid>(driver, "cuDeviceGetUuid_v2");
      if (uuid_ == nullptr) uuid_ = Symbol<CuDeviceGetUuid>(driver, "cuDeviceGetUuid");
    }
  }

  bool DeviceCount(int* count, std::string* error) override {
    if (get_device_count_ == nullptr || get_attribute_ == nullptr) {
      *error = "the CUDA runtime library lacks cudaGetDeviceCount or cudaDeviceGetAttribute";
      return false;
    }
    const int status = get_device_count_(count);
    if (status != 0) {
      *error = "cudaGetDeviceCount failed: " + ErrorString(status);
      return false;
    }
    return true;
  }

  bool ComputeCapability(int device, int* major, int* minor) override {
    return get_attribute_(major, kCudaDevAttrComputeCapabilityMajor, device) == 0 &&
           get_attribute_(minor, kCudaDevAttrComputeCapabilityMinor, device) == 0;
  }

  std::string PciBusId(int device) override {
    char id[64] = {};
    if (get_pci_bus_id_ == nullptr || get_pci_bus_id_(id, sizeof(id) - 1, device) != 0) return "";
    return id;
  }

  std::string Name(int device) override {
    int handle = 0;
    char name[256] = {};
    if (device_get_ == nullptr || device_name_ == nullptr || device_get_(&handle, device) != 0 ||
        device_name_(name, sizeof(name) - 1, handle) != 0) {
      return "";
    }
    return name;
  }

  int64_t TotalMemoryMib(int device) override {
    int handle = 0;
    size_t bytes = 0;
    if (device_get_ && total_mem_ && device_get_(&handle, device) == 0 &&
        total_mem_(&bytes, handle) == 0) {
      return static_cast<int64_t>(bytes >> 20);
    }
    // Without the driver API, ask the runtime. This creates the device's primary context in
    // the host process (some hundreds of MiB of device memory), hence only a fallback.
    size_t free_bytes = 0;
    if (set_device_ && mem_get_info_ && set_device_(device) == 0 &&
        mem_get_info_(&free_bytes, &bytes) == 0) {
      return static_cast<int64_t>(bytes >> 20);
    }
    return 0;
  }

  std::string Uuid(int device) override {
    int handle = 0;
    unsigned char b[16] = {};
    if (device_get_ == nullptr || uuid_ == nullptr || device_get_(&handle, device) != 0 ||
        uuid_(b, handle) != 0) {
      return "";
    }
    char text[64];
    std::snprintf(text, sizeof(text),
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    return text;
  }

  bool CanAccessPeer(int device, int peer) override {
    int can = 0;
    return can_access_peer_ != nullptr && can_access_peer_(&can, device, peer) == 0 && can != 0;
  }

 private:
  std::string ErrorString(int status) const {
    const char* text = error_string_ ? error_string_(status) : nullptr;
    return (text ? std::string(text) : "error") + " (" + std::to_string(status) + ")";
  }

  CudaGetDeviceCount get_device_count_ = nullptr;
  CudaDeviceGetAttribute get_attribute_ = nullptr;
  CudaDeviceGetPciBusId get_pci_bus_id_ = nullptr;
  CudaDeviceCanAccessPeer can_access_peer_ = nullptr;
  CudaSetDevice set_device_ = nullptr;
  CudaMemGetInfo mem_get_info_ = nullptr;
  CudaGetErrorString error_string_ = nullptr;
  CuDeviceGet device_get_ = nullptr;
  CuDeviceGetName device_name_ = nullptr;
  CuDeviceTotalMem total_mem_ = nullptr;
  CuDeviceGetUuid uuid_ = nullptr;
};

void* Load(const std::string& name) { return ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL); }

}  // namespace

std::unique_ptr<CudaRuntime> OpenCudaRuntime(const std::string& runtime_library,
                                             const std::string& driver_library,
                                             std::string* error) {
  const std::vector<std::string> candidates =
      runtime_library.empty() ? std::vector<std::string>{"libcudart.so", "libcudart.so.13",
                                                         "libcudart.so.12", "libcudart.so.11.0"}
                              : std::vector<std::string>{runtime_library};
  void* runtime = nullptr;
  for (const std::string& name : candidates) {
    runtime = Load(name);
    if (runtime != nullptr) break;
  }
  if (runtime == nullptr) {
    const char* reason = ::dlerror();
    *error = "no CUDA runtime library (" + std::string(reason ? reason : "dlopen failed") + ")";
    return nullptr;
  }
  void* driver = Load(driver_library.empty() ? "libcuda.so.1" : driver_library);
  return std::make_unique<DlopenCudaRuntime>(runtime, driver);
}

std::string ModelName(const std::string& cuda_name, int64_t memory_mib, int major, int minor) {
  if (cuda_name.empty()) return "cuda-sm" + std::to_string(major) + std::to_string(minor);
  return model_names::FromDeviceName(cuda_name, memory_mib);
}

std::vector<v1::GpuDevice> DiscoverGpus(CudaRuntime& cuda, std::string* note) {
  int count = 0;
  std::string error;
  if (!cuda.DeviceCount(&count, &error)) {
    *note = "no usable GPU: " + error;
    return {};
  }
  if (count <= 0) {
    *note = "no GPU: the CUDA runtime reports 0 devices";
    return {};
  }
  // NVLink domains from peer access: GPUs that can reach each other's memory both ways are put
  // in one domain (the lowest index in it names it). P2P is a stand-in for NVLink: it also works
  // over PCIe, so a PCIe-only machine may show one domain; NVML's NVLink queries (the mig
  // backend's library) would tell them apart.
  std::vector<int> domain(count);
  std::iota(domain.begin(), domain.end(), 0);
  auto root = [&](int d) {
    while (domain[d] != d) d = domain[d] = domain[domain[d]];
    return d;
  };
  for (int a = 0; a < count; ++a) {
    for (int b = a + 1; b < count; ++b) {
      if (cuda.CanAccessPeer(a, b) && cuda.CanAccessPeer(b, a)) {
        const int ra = root(a), rb = root(b);
        domain[std::max(ra, rb)] = std::min(ra, rb);
      }
    }
  }
  std::vector<v1::GpuDevice> gpus;
  std::string listed;
  for (int d = 0; d < count; ++d) {
    int major = 0, minor = 0;
    if (!cuda.ComputeCapability(d, &major, &minor)) {
      *note = "GPU " + std::to_string(d) +
              " did not answer attribute queries; treating the node "
              "as CPU-only";
      return {};
    }
    const int64_t memory_mib = cuda.TotalMemoryMib(d);
    if (memory_mib <= 0) {
      *note = "GPU " + std::to_string(d) +
              " reports no memory size; treating the node as "
              "CPU-only";
      return {};
    }
    v1::GpuDevice& gpu = gpus.emplace_back();
    gpu.set_index(d);
    gpu.set_memory_mib(memory_mib);
    gpu.set_model(ModelName(cuda.Name(d), gpu.memory_mib(), major, minor));
    gpu.set_nvlink_domain(root(d));
    std::string uuid = cuda.Uuid(d);
    if (uuid.empty())
      uuid = "GPU-local-" + (cuda.PciBusId(d).empty() ? std::to_string(d) : cuda.PciBusId(d));
    gpu.set_uuid(uuid);
    gpu.set_healthy(true);
    listed += (d ? ", " : "") + gpu.model() + " (" + std::to_string(gpu.memory_mib()) + " MiB, sm" +
              std::to_string(major) + std::to_string(minor) + ", " + cuda.PciBusId(d) + ")";
  }
  *note = std::to_string(count) + " GPU(s): " + listed;
  return gpus;
}

}  // namespace tessera::local
