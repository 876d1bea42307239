// NvidiaGpus: the local backend's GPUs when the NVIDIA driver is there, through NVML
// (plugins/common/nvml): what they are, how they are shared, their MIG layouts carried out, and
// their telemetry.
//
// At start it reads every GPU (model, memory, UUID, PCI bus id, NVLink domain, MIG mode) and
// adopts the MIG instances a GPU has, in use or not. It changes MIG mode only on the GPUs the
// configuration lists in `mig_enable`, and only from off to on: on a busy GPU, or one that needs a
// reset, the change stays pending and the GPU is reported as it is now (the log says what to
// do). A GPU in MIG mode is re-partitioned by the scheduler only when `mig_managed` lists it;
// otherwise its layout is the operator's and a layout request for it is refused.
//
// Tasks name their devices by UUID (CUDA_VISIBLE_DEVICES=GPU-... or MIG-...): NVML numbers GPUs
// by PCI bus while the CUDA runtime's default order is fastest first, so an index would not
// always name the same GPU for both.
//
// Not thread-safe except Telemetry (which the ABI lets overlap other calls): the backend calls
// the rest under its own lock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "local_config.h"
#include "nvml/gpu_inventory.h"
#include "nvml/gpu_telemetry.h"
#include "nvml/nvml_library.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::local {

class NvidiaGpus {
 public:
  // Null when NVML is not there (no driver: the node is found through the CUDA runtime or is
  // CPU-only), with the reason in *note. Problems worth a warning (a MIG mode change that waits
  // for a reset, a layout that could not be read) go to *warnings.
  static std::unique_ptr<NvidiaGpus> Open(const LocalConfig& config, std::string* note,
                                          std::vector<std::string>* warnings);

  // GPU `index`'s PCI bus id as NVML gives it ("00000000:3B:00.0"); empty when unknown.
  std::string PciBusId(int index) const {
    return index >= 0 && index < static_cast<int>(inventory_.gpus.size())
               ? inventory_.gpus[index].pci_bus_id
               : std::string();
  }

  // The GPUs as the node's inventory has them, mig_managed set from the configuration (and the
  // sharing the backend chose, SetSharing).
  const std::vector<v1::GpuDevice>& devices() const { return devices_; }

  // The form of sharing the backend chose for GPU `index`, not in MIG mode (time slices, MPS:
  // the configuration's, nothing the driver does).
  void SetSharing(int index, const v1::GpuDevice& device);

  // Shapes GPU request.gpu() to request.layout() (MIG only: other forms need no driver work and
  // are refused here with an error naming the form). The result always says what the GPU has.
  void ApplyLayout(const v1::PartitionLayoutRequest& request, v1::PartitionLayoutResult* result);

  // A reading of every GPU.
  std::vector<v1::GpuTelemetry> Telemetry(const std::string& node, int64_t now_us);

 private:
  NvidiaGpus() = default;

  std::unique_ptr<nvml::NvmlLibrary> nvml_;
  nvml::NvmlInventory inventory_;
  std::vector<v1::GpuDevice> devices_;
  std::unique_ptr<nvml::GpuTelemetrySource> telemetry_;
};

}  // namespace tessera::local
