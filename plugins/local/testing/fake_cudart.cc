// A stand-in for libcudart and libcuda with two "NVIDIA H100 80GB HBM3" GPUs (sm90, 81559 MiB,
// peers of each other), for the local backend's tests on machines without a GPU. It exports the
// functions discovery looks up, with CUDA's C signatures (enums as int, CUdevice as int), so
// the plugin runs its ordinary dlopen path against it.
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace {
constexpr int kDevices = 2;
constexpr int kInvalidDevice = 101;  // cudaErrorInvalidDevice / CUDA_ERROR_INVALID_DEVICE.
bool Valid(int device) { return device >= 0 && device < kDevices; }
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cudaGetDeviceCount(int* count) {
  *count = kDevices;
  return 0;
}

__attribute__((visibility("default"))) int cudaDeviceGetAttribute(int* value, int attribute,
                                                                  int device) {
  if (!Valid(device)) return kInvalidDevice;
  switch (attribute) {
    case 75:  // cudaDevAttrComputeCapabilityMajor
      *value = 9;
      return 0;
    case 76:  // cudaDevAttrComputeCapabilityMinor
      *value = 0;
      return 0;
    default:
      return 1;  // cudaErrorInvalidValue
  }
}

__attribute__((visibility("default"))) int cudaDeviceGetPCIBusId(char* id, int length, int device) {
  if (!Valid(device)) return kInvalidDevice;
  std::snprintf(id, static_cast<size_t>(length), "0000:%02x:00.0", 0x17 + device);
  return 0;
}

__attribute__((visibility("default"))) int cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  if (!Valid(device) || !Valid(peer)) return kInvalidDevice;
  *can = device != peer ? 1 : 0;
  return 0;
}

__attribute__((visibility("default"))) const char* cudaGetErrorString(int error) {
  return error == 0 ? "no error" : "fake error";
}

__attribute__((visibility("default"))) int cuInit(unsigned flags) { return 0; }

__attribute__((visibility("default"))) int cuDeviceGet(int* device, int ordinal) {
  if (!Valid(ordinal)) return kInvalidDevice;
  *device = ordinal;
  return 0;
}

__attribute__((visibility("default"))) int cuDeviceGetName(char* name, int length, int device) {
  if (!Valid(device)) return kInvalidDevice;
  std::snprintf(name, static_cast<size_t>(length), "NVIDIA H100 80GB HBM3");
  return 0;
}

__attribute__((visibility("default"))) int cuDeviceTotalMem_v2(size_t* bytes, int device) {
  if (!Valid(device)) return kInvalidDevice;
  *bytes = size_t{81559} << 20;
  return 0;
}

__attribute__((visibility("default"))) int cuDeviceGetUuid(unsigned char* uuid, int device) {
  if (!Valid(device)) return kInvalidDevice;
  for (int i = 0; i < 16; ++i) uuid[i] = static_cast<unsigned char>(0x10 * device + i);
  return 0;
}

}  // extern "C"
