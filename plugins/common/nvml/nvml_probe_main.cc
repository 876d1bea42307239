// tessera-nvml-probe: what NVML says of this machine's GPUs, read-only, as JSON on stdout: the
// driver version, each GPU as the backends' inventory reads it (model, memory, UUID, PCI bus id,
// NVLink domain, MIG mode current and pending, MIG instances with their UUIDs), and NVML's GPU
// instance profiles for its model (enum, ID, slices, instance count, memory, placements).
//
//   tessera-nvml-probe [--library PATH]     # default libnvidia-ml.so.1
//
// scripts/device-check.sh runs it on a real driver and on the fake libnvidia-ml.so.1 with the
// same GPU model, and prints the difference: where the fake's model of that GPU is wrong. It
// changes nothing: no MIG mode, no instances. Exit status 0 when NVML answered, 1 otherwise
// (with the reason on stderr).
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nvml/gpu_inventory.h"
#include "nvml/mig_instances.h"
#include "nvml/nvml_library.h"
#include "tessera/gpu/mig_profiles.h"

namespace {

using json = nlohmann::json;
using tessera::nvml::NvmlLibrary;

json Profiles(NvmlLibrary& nvml, nvmlDevice_t device) {
  json out = json::array();
  for (int k = 0; k < tessera::mig::kNumProfileKinds; ++k) {
    const auto kind = static_cast<tessera::mig::ProfileKind>(k);
    const unsigned index = tessera::nvml::GpuInstanceProfileEnum(kind);
    json row = {{"enum", index}};
    nvmlGpuInstanceProfileInfo_t info{};
    const nvmlReturn_t r = nvml.DeviceGetGpuInstanceProfileInfo
                               ? nvml.DeviceGetGpuInstanceProfileInfo(device, index, &info)
                               : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (r != NVML_SUCCESS) {
      row["error"] = nvml.ErrorString(r);
      out.push_back(row);
      continue;
    }
    row["id"] = info.id;
    row["slices"] = info.sliceCount;
    row["instances"] = info.instanceCount;
    row["memory_mb"] = info.memorySizeMB;
    row["multiprocessors"] = info.multiprocessorCount;
    std::vector<nvmlGpuInstancePlacement_t> placements(8);
    unsigned count = static_cast<unsigned>(placements.size());
    const nvmlReturn_t p = nvml.DeviceGetGpuInstancePossiblePlacements
                               ? nvml.DeviceGetGpuInstancePossiblePlacements(
                                     device, info.id, placements.data(), &count)
                               : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (p == NVML_SUCCESS) {
      json starts = json::array();
      for (unsigned i = 0; i < count; ++i) {
        starts.push_back({{"start", placements[i].start}, {"size", placements[i].size}});
      }
      row["placements"] = starts;
    } else {
      row["placements_error"] = nvml.ErrorString(p);
    }
    out.push_back(row);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string library = tessera::nvml::kDefaultLibrary;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--library") == 0 && i + 1 < argc) {
      library = argv[++i];
    } else {
      std::cerr << "usage: tessera-nvml-probe [--library PATH]\n";
      return 2;
    }
  }
  std::string error;
  std::unique_ptr<NvmlLibrary> nvml = NvmlLibrary::Load(library, &error);
  if (nvml == nullptr) {
    std::cerr << "tessera-nvml-probe: no NVML: " << error << "\n";
    return 1;
  }
  if (nvmlReturn_t r = nvml->Init(); r != NVML_SUCCESS) {
    std::cerr << "tessera-nvml-probe: NVML did not start: " << nvml->ErrorString(r) << "\n";
    return 1;
  }
  tessera::nvml::NvmlInventory inventory;
  std::vector<std::string> warnings;
  if (!tessera::nvml::ReadNvmlInventory(*nvml, &inventory, &warnings, &error)) {
    std::cerr << "tessera-nvml-probe: " << error << "\n";
    return 1;
  }
  json out = {{"driver_version", inventory.driver_version},
              {"has_mig_calls", nvml->HasMig()},
              {"warnings", warnings},
              {"gpus", json::array()}};
  for (const tessera::nvml::NvmlGpu& gpu : inventory.gpus) {
    const tessera::v1::GpuDevice& d = gpu.device;
    json instances = json::array();
    for (const tessera::v1::PartitionInstance& i : d.instances()) {
      instances.push_back({{"profile", i.mig().profile()},
                           {"start", i.mig().start()},
                           {"gpu_instance_id", i.gpu_instance_id()},
                           {"compute_instance_id", i.compute_instance_id()},
                           {"uuid", i.uuid()}});
    }
    out["gpus"].push_back({{"index", d.index()},
                           {"device_name", gpu.device_name},
                           {"model", d.model()},
                           {"memory_mib", d.memory_mib()},
                           {"uuid", d.uuid()},
                           {"pci_bus_id", gpu.pci_bus_id},
                           {"nvlink_domain", d.nvlink_domain()},
                           {"mig_capable", gpu.mig_capable},
                           {"mig_current", gpu.mig_current},
                           {"mig_pending", gpu.mig_pending},
                           {"mig_instances", instances},
                           {"profiles", Profiles(*nvml, gpu.handle)}});
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}
