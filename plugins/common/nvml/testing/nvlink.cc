// The fake NVML's NVLink links. A GPU's "nvlink" list in the state file names where each of its
// links ends, link 0 first: a GPU index, or "switch" for an NVSwitch (as on HGX boards, where
// every GPU's links go to the switches). Links past the list are inactive; a GPU without the
// list has no NVLink at all and answers NOT_SUPPORTED, as PCIe-only boards do.
//
// Where it differs from the real driver: every switch link reports the same switch PCI address
// (00000000:C0:00.0), where a board has several switches; a link to a GPU index that does not
// exist reports UNKNOWN as its remote device type.
#include <cstdio>
#include <cstring>
#include <string>

#include "nvml/nvml_api.h"
#include "nvml/testing/handles.h"
#include "nvml/testing/state_file.h"

namespace tessera::fake_nvml {
namespace {

// Where link `link` of the GPU that `device` names ends; NVML_SUCCESS with `end` null for an
// inactive link.
nvmlReturn_t LinkEnd(State& state, nvmlDevice_t device, unsigned link, const json** end) {
  Resolved r;
  if (nvmlReturn_t ret = Resolve(state, device, &r); ret != NVML_SUCCESS) return ret;
  if (r.handle->kind != Kind::kGpu || link >= NVML_NVLINK_MAX_LINKS) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (!r.gpu->contains("nvlink")) return NVML_ERROR_NOT_SUPPORTED;
  const json& links = (*r.gpu)["nvlink"];
  *end = link < links.size() ? &links[link] : nullptr;
  return NVML_SUCCESS;
}

}  // namespace
}  // namespace tessera::fake_nvml

using namespace tessera::fake_nvml;  // NOLINT: the definitions below are NVML's C functions.

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                       nvmlEnableState_t* is_active) {
  FAKE_NVML_BEGIN(state);
  if (is_active == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const json* end = nullptr;
  if (nvmlReturn_t ret = LinkEnd(state, device, link, &end); ret != NVML_SUCCESS) return ret;
  *is_active = end != nullptr ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device,
                                                                  unsigned int link,
                                                                  nvmlIntNvLinkDeviceType_t* type) {
  FAKE_NVML_BEGIN(state);
  if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const json* end = nullptr;
  if (nvmlReturn_t ret = LinkEnd(state, device, link, &end); ret != NVML_SUCCESS) return ret;
  if (end == nullptr) return NVML_ERROR_NOT_FOUND;  // an inactive link ends nowhere.
  if (end->is_string() && end->get<std::string>() == "switch") {
    *type = NVML_NVLINK_DEVICE_TYPE_SWITCH;
  } else if (end->is_number_unsigned() && end->get<unsigned>() < state.gpu_count()) {
    *type = NVML_NVLINK_DEVICE_TYPE_GPU;
  } else {
    *type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  }
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                  unsigned int link,
                                                                  nvmlPciInfo_t* pci) {
  FAKE_NVML_BEGIN(state);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const json* end = nullptr;
  if (nvmlReturn_t ret = LinkEnd(state, device, link, &end); ret != NVML_SUCCESS) return ret;
  if (end == nullptr) return NVML_ERROR_NOT_FOUND;
  std::memset(pci, 0, sizeof(*pci));
  // A GPU's address as nvmlDeviceGetPciInfo_v3 gives it (devices.cc), or the switch's.
  pci->bus = end->is_number_unsigned() ? 0x10 + end->get<unsigned>() : 0xC0;
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", pci->bus);
  std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
  return NVML_SUCCESS;
}
