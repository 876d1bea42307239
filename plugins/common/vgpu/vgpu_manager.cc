#include "vgpu/vgpu_manager.h"

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "tessera/gpu/vgpu_types.h"
#include "vgpu/device_uuid.h"
#include "vgpu/pci_address.h"

namespace tessera::vgpu {

using plugin::PluginStatus;

namespace {

const std::string kMdevBus = "/sys/class/mdev_bus/";
const std::string kMdevDevices = "/sys/bus/mdev/devices/";
const std::string kPciDevices = "/sys/bus/pci/devices/";

std::string GpuName(const VgpuGpu& gpu, const std::string& address) {
  return "GPU " + std::to_string(gpu.index) + " (" + address + ")";
}

tessera_status CodeOfWriteError(int error) {
  switch (error) {
    case EUSERS:
    case ENOSPC:
    case EDQUOT:
      return TESSERA_RESOURCE_EXHAUSTED;
    case EACCES:
    case EPERM:
    case EROFS:
      return TESSERA_PERMISSION_DENIED;
    case EBUSY:
    case EAGAIN:
    case ENODEV:
      return TESSERA_UNAVAILABLE;
    case EINVAL:
      return TESSERA_FAILED_PRECONDITION;
    case EEXIST:
      return TESSERA_ALREADY_EXISTS;
    default:
      return TESSERA_INTERNAL;
  }
}

PluginStatus WriteFailed(const std::string& what, const std::string& path, const std::string& data,
                         int error) {
  return PluginStatus::Error(CodeOfWriteError(error), what + ": writing \"" + data + "\" to " +
                                                          path + " failed: " + ErrnoText(error));
}

std::string Trimmed(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

bool SameType(const VgpuDeviceInfo& device, const std::string& type, const VgpuTypeOffer* offer) {
  if (offer != nullptr && device.type_id == offer->id) return true;
  return !device.name.empty() && device.name == type;
}

}  // namespace

std::map<std::string, std::string> VgpuTaskEnv(const VgpuDevice& device) {
  return {{"TESSERA_VGPU_DEVICE", device.id},
          {"TESSERA_VGPU_SYSFS", device.sysfs_path},
          {"TESSERA_VGPU_TYPE", device.type},
          {"TESSERA_VGPU_FORM", std::string(FormName(device.form))}};
}

VgpuManager::VgpuManager(Sysfs* sysfs) : sysfs_(sysfs) {}

PluginStatus VgpuManager::Refresh(Gpu& gpu) {
  PluginStatus status = DiscoverGpu(*sysfs_, gpu.gpu.pci_bus_id, gpu.family, &gpu.state);
  if (!status.ok()) {
    status.message = "vGPU on " + GpuName(gpu.gpu, gpu.state.address) + ": " + status.message;
    return status;
  }
  // A VF's current_vgpu_type is a bare ID, and only free VFs list names: remember every name
  // seen, so that a GPU whose VFs are all taken still knows its devices' type.
  for (const VgpuTypeOffer& offer : gpu.state.types) {
    gpu.type_names[offer.id] = {offer.driver_name, offer.name};
  }
  for (VgpuDeviceInfo& device : gpu.state.devices) {
    auto known = gpu.type_names.find(device.type_id);
    if (!device.driver_name.empty() || known == gpu.type_names.end()) continue;
    device.driver_name = known->second.first;
    device.name = known->second.second;
  }
  return status;
}

PluginStatus VgpuManager::AddGpu(const VgpuGpu& gpu) {
  if (gpu.index < 0) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "vGPU: GPU index must be 0 or more, got " +
                                                             std::to_string(gpu.index));
  }
  const std::optional<std::string> address = SysfsPciAddress(gpu.pci_bus_id);
  if (!address) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "vGPU: GPU " + std::to_string(gpu.index) +
                                                             ": \"" + gpu.pci_bus_id +
                                                             "\" is not a PCI bus id");
  }
  if (auto it = gpus_.find(gpu.index); it != gpus_.end()) {
    if (it->second.state.address != *address) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 "vGPU: " + GpuName(gpu, it->second.state.address) +
                                     " was added already; it cannot become " + *address);
    }
    return Refresh(it->second);
  }
  Gpu entry;
  entry.gpu = gpu;
  entry.family = gpu.model.empty() ? "" : std::string(Family(gpu.model));
  entry.state.address = *address;
  PluginStatus status = Refresh(entry);
  if (!status.ok()) return status;
  if (entry.state.form == VgpuForm::kNone) {
    return PluginStatus::Error(
        TESSERA_FAILED_PRECONDITION,
        "vGPU on " + GpuName(gpu, *address) +
            ": the GPU offers no vGPU: no /sys/class/mdev_bus entry for it or its VFs, and no VF "
            "with nvidia/current_vgpu_type (is NVIDIA's vGPU manager driver loaded, and SR-IOV "
            "enabled with sriov-manage -e where the GPU needs it?)");
  }
  gpus_[gpu.index] = std::move(entry);
  return PluginStatus::Ok();
}

PluginStatus VgpuManager::TypeAllowed(Gpu& gpu, const std::string& type,
                                      const VgpuTypeOffer** offer) const {
  const std::string where = "vGPU on " + GpuName(gpu.gpu, gpu.state.address);
  *offer = nullptr;
  for (const VgpuTypeOffer& t : gpu.state.types) {
    if (!t.name.empty() && t.name == type) *offer = &t;
  }
  int same = 0;
  for (const VgpuDeviceInfo& device : gpu.state.devices) {
    if (SameType(device, type, *offer)) {
      ++same;
      continue;
    }
    // A VF whose type no list names cannot be told apart; the driver still refuses a wrong one.
    if (device.name.empty() && *offer == nullptr) continue;
    const std::string held =
        device.name.empty()
            ? (device.driver_name.empty() ? "type " + device.type_id : device.driver_name)
            : device.name;
    return PluginStatus::Error(
        TESSERA_FAILED_PRECONDITION,
        where + ": the GPU holds vGPUs of type " + held + " (" + device.id +
            " and any others); NVIDIA's time-sliced vGPU holds one type per GPU, so " + type +
            " can be created only once they are removed");
  }
  if (*offer != nullptr) return PluginStatus::Ok();
  const bool no_free_vf = gpu.state.form == VgpuForm::kVendorVfio &&
                          gpu.state.devices.size() >= gpu.state.parents.size();
  if (same > 0 || no_free_vf) {
    return PluginStatus::Error(TESSERA_RESOURCE_EXHAUSTED,
                               where + ": no " + type +
                                   " instance left: " + std::to_string(gpu.state.devices.size()) +
                                   " vGPUs exist and no free VF lists the type");
  }
  std::string offered;
  for (const VgpuTypeOffer& t : gpu.state.types) {
    if (t.name.empty()) continue;
    offered += (offered.empty() ? "" : ", ") + t.name;
  }
  return PluginStatus::Error(TESSERA_NOT_FOUND,
                             where + ": no vGPU type " + type + " on this GPU; it offers " +
                                 (offered.empty() ? "none the scheduler can name" : offered));
}

PluginStatus VgpuManager::CheckType(int gpu, const std::string& type) {
  auto it = gpus_.find(gpu);
  if (it == gpus_.end()) {
    return PluginStatus::Error(TESSERA_NOT_FOUND,
                               "vGPU: GPU " + std::to_string(gpu) + " is not in vGPU mode here");
  }
  PluginStatus status = Refresh(it->second);
  if (!status.ok()) return status;
  const VgpuTypeOffer* offer = nullptr;
  status = TypeAllowed(it->second, type, &offer);
  return status.code == TESSERA_RESOURCE_EXHAUSTED ? PluginStatus::Ok() : status;
}

const VgpuDeviceInfo* VgpuManager::FindDevice(const Gpu& gpu, const std::string& device_id) const {
  for (const VgpuDeviceInfo& device : gpu.state.devices) {
    if (device.id == device_id) return &device;
  }
  return nullptr;
}

VgpuDevice VgpuManager::DeviceOf(const Gpu& gpu, const VgpuDeviceInfo& info) const {
  VgpuDevice device;
  device.gpu = gpu.gpu.index;
  device.form = gpu.state.form;
  device.type = info.name;
  device.type_id = info.type_id;
  device.id = info.id;
  device.sysfs_path = info.sysfs_path;
  if (auto it = gpu.owners.find(info.id); it != gpu.owners.end()) device.owner = it->second;
  return device;
}

PluginStatus VgpuManager::CreateMdev(Gpu& gpu, const VgpuTypeOffer& offer, const std::string& type,
                                     const std::string& owner, std::string* device_id) {
  const std::string uuid = MdevUuidFor(owner);
  const std::string what = "vGPU on " + GpuName(gpu.gpu, gpu.state.address) + ": creating " + type +
                           " (" + offer.id + ")";
  const std::string& parent = offer.room.front();
  const std::string path = kMdevBus + parent + "/mdev_supported_types/" + offer.id + "/create";
  const int error = sysfs_->Write(path, uuid);
  if (error != 0) return WriteFailed(what, path, uuid, error);
  if (!sysfs_->Exists(kMdevDevices + uuid)) {
    return PluginStatus::Error(TESSERA_INTERNAL, what + ": the write to " + path +
                                                     " succeeded but " + kMdevDevices + uuid +
                                                     " does not exist");
  }
  *device_id = uuid;
  return PluginStatus::Ok();
}

PluginStatus VgpuManager::CreateOnVf(Gpu& gpu, const VgpuTypeOffer& offer, const std::string& type,
                                     std::string* device_id) {
  const std::string what = "vGPU on " + GpuName(gpu.gpu, gpu.state.address) + ": creating " + type +
                           " (type ID " + offer.id + ")";
  const std::string& vf = offer.room.front();
  const std::string path = kPciDevices + vf + "/nvidia/current_vgpu_type";
  const int error = sysfs_->Write(path, offer.id);
  if (error != 0) return WriteFailed(what, path, offer.id, error);
  std::string current;
  const int read_error = sysfs_->Read(path, &current);
  if (read_error != 0 || Trimmed(current) != offer.id) {
    return PluginStatus::Error(
        TESSERA_INTERNAL,
        what + ": the write to " + path + " succeeded but it reads " +
            (read_error != 0 ? ErrnoText(read_error) : "\"" + Trimmed(current) + "\""));
  }
  *device_id = vf;
  return PluginStatus::Ok();
}

PluginStatus VgpuManager::Create(int gpu, const std::string& type, const std::string& owner,
                                 VgpuDevice* device) {
  if (owner.empty() || type.empty()) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "vGPU: Create needs an owner and a type");
  }
  auto it = gpus_.find(gpu);
  if (it == gpus_.end()) {
    return PluginStatus::Error(TESSERA_NOT_FOUND,
                               "vGPU: GPU " + std::to_string(gpu) + " is not in vGPU mode here");
  }
  Gpu& entry = it->second;
  PluginStatus status = Refresh(entry);
  if (!status.ok()) return status;
  const std::string where = "vGPU on " + GpuName(entry.gpu, entry.state.address);

  if (auto own = owned_.find(owner); own != owned_.end()) {
    const VgpuDeviceInfo* info =
        own->second.gpu == gpu ? FindDevice(entry, own->second.device_id) : nullptr;
    if (info != nullptr && info->name == type) {
      *device = DeviceOf(entry, *info);
      return PluginStatus::Ok();
    }
    if (info != nullptr || own->second.gpu != gpu) {
      return PluginStatus::Error(TESSERA_ALREADY_EXISTS, where + ": " + owner + " has vGPU " +
                                                             own->second.device_id + " on GPU " +
                                                             std::to_string(own->second.gpu) +
                                                             " already, not a " + type + " here");
    }
    // Its device is gone (removed behind our back): it may have a new one.
    entry.owners.erase(own->second.device_id);
    owned_.erase(own);
  }
  if (entry.state.form == VgpuForm::kMdev) {
    // An mdev device named for this owner: the task's, from before a restart.
    if (const VgpuDeviceInfo* info = FindDevice(entry, MdevUuidFor(owner))) {
      if (info->name != type) {
        return PluginStatus::Error(TESSERA_ALREADY_EXISTS, where + ": " + owner + "'s vGPU " +
                                                               info->id + " exists with type " +
                                                               info->driver_name + ", not " + type);
      }
      entry.owners[info->id] = owner;
      owned_[owner] = {gpu, info->id};
      *device = DeviceOf(entry, *info);
      return PluginStatus::Ok();
    }
  }

  const VgpuTypeOffer* offer = nullptr;
  status = TypeAllowed(entry, type, &offer);
  if (!status.ok()) return status;
  if (offer->available <= 0 || offer->room.empty()) {
    const std::string detail = entry.state.form == VgpuForm::kMdev
                                   ? "available_instances is 0 on every parent"
                                   : "no free VF lists it";
    return PluginStatus::Error(TESSERA_RESOURCE_EXHAUSTED,
                               where + ": no " + type + " instance left (" +
                                   std::to_string(entry.state.devices.size()) + " vGPUs exist; " +
                                   detail + ")");
  }
  std::string device_id;
  status = entry.state.form == VgpuForm::kMdev ? CreateMdev(entry, *offer, type, owner, &device_id)
                                               : CreateOnVf(entry, *offer, type, &device_id);
  if (!status.ok()) return status;
  entry.owners[device_id] = owner;
  owned_[owner] = {gpu, device_id};
  PluginStatus refreshed = Refresh(entry);
  const VgpuDeviceInfo* info = refreshed.ok() ? FindDevice(entry, device_id) : nullptr;
  if (info == nullptr) {
    return PluginStatus::Error(TESSERA_INTERNAL,
                               where + ": created " + device_id +
                                   " but cannot find it among the GPU's vGPUs" +
                                   (refreshed.ok() ? "" : ": " + refreshed.message));
  }
  *device = DeviceOf(entry, *info);
  // The type is what was asked for even where the driver's name has no scheduler name.
  device->type = type;
  return PluginStatus::Ok();
}

PluginStatus VgpuManager::Claim(const std::string& owner, int gpu, const std::string& device_id,
                                VgpuDevice* device) {
  auto it = gpus_.find(gpu);
  if (it == gpus_.end()) {
    return PluginStatus::Error(TESSERA_NOT_FOUND,
                               "vGPU: GPU " + std::to_string(gpu) + " is not in vGPU mode here");
  }
  Gpu& entry = it->second;
  PluginStatus status = Refresh(entry);
  if (!status.ok()) return status;
  const std::string where = "vGPU on " + GpuName(entry.gpu, entry.state.address);
  const VgpuDeviceInfo* info = FindDevice(entry, device_id);
  if (info == nullptr) {
    return PluginStatus::Error(TESSERA_NOT_FOUND, where + ": no vGPU " + device_id);
  }
  if (auto holder = entry.owners.find(device_id);
      holder != entry.owners.end() && holder->second != owner) {
    return PluginStatus::Error(TESSERA_ALREADY_EXISTS,
                               where + ": vGPU " + device_id + " belongs to " + holder->second);
  }
  if (auto own = owned_.find(owner);
      own != owned_.end() && (own->second.gpu != gpu || own->second.device_id != device_id)) {
    return PluginStatus::Error(TESSERA_ALREADY_EXISTS, where + ": " + owner + " has vGPU " +
                                                           own->second.device_id + " already");
  }
  entry.owners[device_id] = owner;
  owned_[owner] = {gpu, device_id};
  *device = DeviceOf(entry, *info);
  return PluginStatus::Ok();
}

PluginStatus VgpuManager::RemoveDevice(Gpu& gpu, const VgpuDeviceInfo& device) {
  const std::string what =
      "vGPU on " + GpuName(gpu.gpu, gpu.state.address) + ": removing " + device.id;
  if (gpu.state.form == VgpuForm::kMdev) {
    const std::string path = kMdevDevices + device.id + "/remove";
    const int error = sysfs_->Write(path, "1");
    if (error == ENOENT) return PluginStatus::Ok();  // gone already.
    if (error != 0) return WriteFailed(what, path, "1", error);
    if (sysfs_->Exists(kMdevDevices + device.id)) {
      return PluginStatus::Error(TESSERA_INTERNAL, what + ": the write to " + path +
                                                       " succeeded but the device is still there");
    }
    return PluginStatus::Ok();
  }
  const std::string path = kPciDevices + device.id + "/nvidia/current_vgpu_type";
  const int error = sysfs_->Write(path, "0");
  if (error != 0) return WriteFailed(what, path, "0", error);
  std::string current;
  const int read_error = sysfs_->Read(path, &current);
  if (read_error != 0 || Trimmed(current) != "0") {
    return PluginStatus::Error(
        TESSERA_INTERNAL,
        what + ": the write to " + path + " succeeded but it reads " +
            (read_error != 0 ? ErrnoText(read_error) : "\"" + Trimmed(current) + "\""));
  }
  return PluginStatus::Ok();
}

PluginStatus VgpuManager::Remove(const std::string& owner) {
  auto own = owned_.find(owner);
  if (own == owned_.end()) {
    // Not known here: perhaps a task that ended while the backend was down, whose mdev device
    // carries its name.
    const std::string uuid = MdevUuidFor(owner);
    for (auto& [index, gpu] : gpus_) {
      if (gpu.state.form != VgpuForm::kMdev) continue;
      PluginStatus status = Refresh(gpu);
      if (!status.ok()) return status;
      const VgpuDeviceInfo* info = FindDevice(gpu, uuid);
      if (info == nullptr || gpu.owners.count(uuid) > 0) continue;
      status = RemoveDevice(gpu, *info);
      (void)Refresh(gpu);
      return status;
    }
    return PluginStatus::Ok();
  }
  Gpu& gpu = gpus_.at(own->second.gpu);
  PluginStatus status = Refresh(gpu);
  if (!status.ok()) return status;
  const std::string device_id = own->second.device_id;
  if (const VgpuDeviceInfo* info = FindDevice(gpu, device_id)) {
    status = RemoveDevice(gpu, *info);
    if (!status.ok()) return status;
  }
  gpu.owners.erase(device_id);
  owned_.erase(own);
  return Refresh(gpu);
}

PluginStatus VgpuManager::RemoveUnclaimed(int gpu) {
  PluginStatus first;
  for (auto& [index, entry] : gpus_) {
    if (gpu >= 0 && index != gpu) continue;
    PluginStatus status = Refresh(entry);
    if (!status.ok()) {
      if (first.ok()) first = status;
      continue;
    }
    const std::vector<VgpuDeviceInfo> devices = entry.state.devices;
    for (const VgpuDeviceInfo& device : devices) {
      if (entry.owners.count(device.id) > 0) continue;
      status = RemoveDevice(entry, device);
      if (!status.ok() && first.ok()) first = status;
    }
    (void)Refresh(entry);
  }
  return first;
}

PluginStatus VgpuManager::RemoveAll() {
  PluginStatus first;
  std::vector<std::string> owners;
  for (const auto& [owner, owned] : owned_) owners.push_back(owner);
  for (const std::string& owner : owners) {
    PluginStatus status = Remove(owner);
    if (!status.ok() && first.ok()) first = status;
  }
  PluginStatus status = RemoveUnclaimed();
  return first.ok() ? status : first;
}

std::vector<VgpuDevice> VgpuManager::Devices(int gpu) const {
  std::vector<VgpuDevice> devices;
  auto it = gpus_.find(gpu);
  if (it == gpus_.end()) return devices;
  for (const VgpuDeviceInfo& info : it->second.state.devices) {
    devices.push_back(DeviceOf(it->second, info));
  }
  return devices;
}

std::string VgpuManager::TypeInUse(int gpu) const {
  auto it = gpus_.find(gpu);
  if (it == gpus_.end()) return "";
  for (const VgpuDeviceInfo& info : it->second.state.devices) {
    if (!info.name.empty()) return info.name;
  }
  return "";
}

const GpuVgpuState* VgpuManager::State(int gpu) const {
  auto it = gpus_.find(gpu);
  return it == gpus_.end() ? nullptr : &it->second.state;
}

}  // namespace tessera::vgpu
