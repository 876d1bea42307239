#include "nvidia_gpus.h"

#include "nvml/mig_partitioner.h"

namespace tessera::local {
namespace {

// Turns MIG mode on for the GPUs `config.mig_enable` lists where it is off. True when any GPU's
// mode changed now (the inventory must be read again).
bool EnableMig(nvml::NvmlLibrary& nvml, const LocalConfig& config,
               const nvml::NvmlInventory& inventory, std::vector<std::string>* warnings) {
  bool changed = false;
  for (const nvml::NvmlGpu& gpu : inventory.gpus) {
    const int index = gpu.device.index();
    const std::string which = "GPU " + std::to_string(index) + " (" + gpu.device.model() + ")";
    if (!config.mig_enable.Contains(index) || gpu.mig_current == NVML_DEVICE_MIG_ENABLE) continue;
    if (!gpu.mig_capable || !nvml.DeviceSetMigMode) {
      if (!config.mig_enable.all) warnings->push_back("mig_enable: " + which + " has no MIG");
      continue;
    }
    if (gpu.mig_pending == NVML_DEVICE_MIG_ENABLE) {
      warnings->push_back("mig_enable: " + which +
                          " has MIG mode pending; it takes effect when the GPU is reset "
                          "(nvidia-smi -r -i " +
                          std::to_string(index) + ") or the machine reboots");
      continue;
    }
    nvmlReturn_t activation = NVML_SUCCESS;
    const nvmlReturn_t r = nvml.DeviceSetMigMode(gpu.handle, NVML_DEVICE_MIG_ENABLE, &activation);
    if (r != NVML_SUCCESS) {
      warnings->push_back("mig_enable: " + which +
                          ": turning MIG mode on failed: " + nvml.ErrorString(r));
    } else if (activation != NVML_SUCCESS) {
      warnings->push_back("mig_enable: " + which + ": MIG mode is pending (" +
                          nvml.ErrorString(activation) +
                          "); it takes effect when the GPU is idle and reset (nvidia-smi -r -i " +
                          std::to_string(index) + ") or the machine reboots");
    } else {
      changed = true;
    }
  }
  return changed;
}

}  // namespace

std::unique_ptr<NvidiaGpus> NvidiaGpus::Open(const LocalConfig& config, std::string* note,
                                             std::vector<std::string>* warnings) {
  if (config.nvml_library == "none") {
    *note = "NVML not used (nvml_library = none)";
    return nullptr;
  }
  std::string error;
  std::unique_ptr<nvml::NvmlLibrary> nvml = nvml::NvmlLibrary::Load(config.nvml_library, &error);
  if (nvml == nullptr) {
    *note = "no NVML (" + error + ")";
    return nullptr;
  }
  if (nvmlReturn_t r = nvml->Init(); r != NVML_SUCCESS) {
    *note = "NVML did not start: " + nvml->ErrorString(r);
    return nullptr;
  }
  std::unique_ptr<NvidiaGpus> gpus(new NvidiaGpus());
  if (!nvml::ReadNvmlInventory(*nvml, &gpus->inventory_, warnings, &error)) {
    *note = "NVML could not list the GPUs: " + error;
    return nullptr;
  }
  if (EnableMig(*nvml, config, gpus->inventory_, warnings) &&
      !nvml::ReadNvmlInventory(*nvml, &gpus->inventory_, warnings, &error)) {
    *note = "NVML could not list the GPUs after turning MIG on: " + error;
    return nullptr;
  }
  std::vector<nvmlDevice_t> handles;
  std::string listed;
  for (const nvml::NvmlGpu& gpu : gpus->inventory_.gpus) {
    v1::GpuDevice device = gpu.device;
    const int index = device.index();
    const bool mig = device.sharing() == v1::GPU_SHARING_MIG;
    if (mig) device.set_mig_managed(config.mig_managed.Contains(index));
    for (const auto& [key, set] : {std::pair{"time_slice_gpus", &config.time_slice_gpus},
                                   std::pair{"mps_gpus", &config.mps_gpus}}) {
      if (mig && set->indices.count(index)) {
        warnings->push_back(std::string(key) + ": GPU " + std::to_string(index) +
                            " is in MIG mode; it is shared by its MIG instances");
      }
    }
    if (!mig && config.mig_managed.indices.count(index)) {
      warnings->push_back("mig_managed: GPU " + std::to_string(index) + " is not in MIG mode");
    }
    if (gpu.mig_pending != gpu.mig_current) {
      warnings->push_back("GPU " + std::to_string(index) + " has MIG mode " +
                          (gpu.mig_pending == NVML_DEVICE_MIG_ENABLE ? "on" : "off") +
                          " pending (after a GPU reset); it is used as it is now");
    }
    listed += (index ? ", " : "") + device.model() + " (" + std::to_string(device.memory_mib()) +
              " MiB, " + gpu.pci_bus_id +
              (mig ? ", MIG: " + std::to_string(device.mig_instances_size()) + " instances" +
                         (device.mig_managed() ? ", managed" : ", fixed")
                   : "") +
              ")";
    handles.push_back(gpu.handle);
    gpus->devices_.push_back(std::move(device));
  }
  gpus->telemetry_ = std::make_unique<nvml::GpuTelemetrySource>(*nvml, handles);
  if (!gpus->telemetry_->note().empty()) warnings->push_back(gpus->telemetry_->note());
  *note = "NVML, driver " + gpus->inventory_.driver_version + ": " +
          std::to_string(gpus->devices_.size()) + " GPU(s)" + (listed.empty() ? "" : ": ") + listed;
  gpus->nvml_ = std::move(nvml);
  return gpus;
}

void NvidiaGpus::SetSharing(int index, const v1::GpuDevice& device) {
  if (index < 0 || index >= static_cast<int>(devices_.size())) return;
  devices_[index].set_sharing(device.sharing());
  devices_[index].set_replicas(device.replicas());
}

void NvidiaGpus::ApplyLayout(const v1::PartitionLayoutRequest& request,
                             v1::PartitionLayoutResult* result) {
  const int index = request.gpu();
  if (index < 0 || index >= static_cast<int>(devices_.size())) {
    result->set_error("gpu: this node has no GPU " + std::to_string(index));
    return;
  }
  v1::GpuDevice& device = devices_[index];
  auto keep = [&](const std::string& why) {
    v1::PartitionLayout* applied = result->mutable_applied();
    applied->set_sharing(device.sharing());
    *applied->mutable_mig_instances() = device.mig_instances();
    applied->set_replicas(device.replicas());
    *result->mutable_instances() = device.instances();
    result->set_error(why);
  };
  const std::string which = "GPU " + std::to_string(index);
  if (request.layout().sharing() != v1::GPU_SHARING_MIG) {
    if (request.layout().sharing() == device.sharing() &&
        request.layout().replicas() == device.replicas()) {
      return keep("");  // what it has already: nothing to do.
    }
    return keep(which + " is shared as " + v1::GpuSharing_Name(device.sharing()) +
                "; this backend changes MIG layouts only");
  }
  if (device.sharing() != v1::GPU_SHARING_MIG) {
    return keep(which + " is not in MIG mode (mig_enable turns it on at start)");
  }
  if (!device.mig_managed()) {
    return keep(which + "'s MIG layout is fixed by the operator (not in mig_managed)");
  }
  nvml::MigPartitioner partitioner(*nvml_);
  if (!partitioner.Apply(inventory_.gpus[index].handle, device.model(), request.layout(), result) &&
      result->error().empty()) {
    result->set_error(which + " could not be read");
  }
  *device.mutable_mig_instances() = result->applied().mig_instances();
  *device.mutable_instances() = result->instances();
}

std::vector<v1::GpuTelemetry> NvidiaGpus::Telemetry(const std::string& node, int64_t now_us) {
  return telemetry_->Read(node, now_us);
}

}  // namespace tessera::local
