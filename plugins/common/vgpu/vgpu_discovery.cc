#include "vgpu/vgpu_discovery.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include "vgpu/pci_address.h"
#include "vgpu/vgpu_type_names.h"

namespace tessera::vgpu {

using plugin::PluginStatus;

namespace {

const std::string kPciDevices = "/sys/bus/pci/devices/";
const std::string kMdevBus = "/sys/class/mdev_bus/";
const std::string kMdevDevices = "/sys/bus/mdev/devices/";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParseInt(std::string_view text, int* value) {
  text = Trim(text);
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

PluginStatus ReadError(const std::string& path, int error) {
  return PluginStatus::Error(TESSERA_UNAVAILABLE,
                             "vGPU: cannot read " + path + ": " + ErrnoText(error));
}

PluginStatus ReadText(const Sysfs& sysfs, const std::string& path, std::string* text) {
  const int error = sysfs.Read(path, text);
  if (error != 0) return ReadError(path, error);
  *text = std::string(Trim(*text));
  return PluginStatus::Ok();
}

PluginStatus ReadNumber(const Sysfs& sysfs, const std::string& path, int* value) {
  std::string text;
  PluginStatus status = ReadText(sysfs, path, &text);
  if (!status.ok()) return status;
  if (!ParseInt(text, value)) {
    return PluginStatus::Error(TESSERA_UNAVAILABLE,
                               "vGPU: " + path + " holds \"" + text + "\", not a number");
  }
  return PluginStatus::Ok();
}

// The PF's VFs by index, from its virtfn<N> links.
PluginStatus VirtualFunctions(const Sysfs& sysfs, const std::string& pf,
                              std::vector<std::string>* vfs) {
  std::vector<std::string> names;
  const int error = sysfs.List(kPciDevices + pf, &names);
  if (error != 0) return ReadError(kPciDevices + pf, error);
  std::map<int, std::string> by_index;
  for (const std::string& name : names) {
    int index = 0;
    if (name.rfind("virtfn", 0) != 0 || !ParseInt(std::string_view(name).substr(6), &index)) {
      continue;
    }
    std::string target;
    const std::string link = kPciDevices + pf + "/" + name;
    const int link_error = sysfs.ReadLink(link, &target);
    if (link_error != 0) return ReadError(link, link_error);
    by_index[index] = LinkTargetAddress(target);
  }
  vfs->clear();
  for (auto& [index, address] : by_index) vfs->push_back(address);
  return PluginStatus::Ok();
}

PluginStatus ReadMdev(const Sysfs& sysfs, std::string_view gpu_family, GpuVgpuState* state) {
  std::map<std::string, VgpuTypeOffer> offers;
  for (const std::string& parent : state->parents) {
    const std::string types_dir = kMdevBus + parent + "/mdev_supported_types";
    std::vector<std::string> type_ids;
    const int error = sysfs.List(types_dir, &type_ids);
    if (error != 0) return ReadError(types_dir, error);
    for (const std::string& type_id : type_ids) {
      const std::string dir = types_dir + "/" + type_id;
      VgpuTypeOffer& offer = offers[type_id];
      offer.id = type_id;
      PluginStatus status = ReadText(sysfs, dir + "/name", &offer.driver_name);
      if (!status.ok()) return status;
      offer.name = SchedulerTypeName(offer.driver_name, gpu_family).value_or("");
      int available = 0;
      status = ReadNumber(sysfs, dir + "/available_instances", &available);
      if (!status.ok()) return status;
      offer.available += available;
      if (available > 0) offer.room.push_back(parent);
      std::string description;
      // The kernel shows `description` only when the driver provides one.
      if (sysfs.Read(dir + "/description", &description) == 0) {
        offer.max_instances = MaxInstancesOf(description);
      }
      std::vector<std::string> uuids;
      const int devices_error = sysfs.List(dir + "/devices", &uuids);
      if (devices_error != 0) return ReadError(dir + "/devices", devices_error);
      for (const std::string& uuid : uuids) {
        VgpuDeviceInfo device;
        device.id = uuid;
        device.parent = parent;
        device.type_id = type_id;
        device.driver_name = offer.driver_name;
        device.name = offer.name;
        device.sysfs_path = kMdevDevices + uuid;
        state->devices.push_back(std::move(device));
      }
    }
  }
  for (auto& entry : offers) {
    VgpuTypeOffer& offer = entry.second;
    // VF parents each show 1 until the GPU is full, so their sum can exceed what fits.
    if (offer.max_instances > 0) {
      const std::string& type_id = offer.id;
      const int made = static_cast<int>(
          std::count_if(state->devices.begin(), state->devices.end(),
                        [&](const VgpuDeviceInfo& d) { return d.type_id == type_id; }));
      offer.available = std::min(offer.available, std::max(0, offer.max_instances - made));
    }
    state->types.push_back(std::move(offer));
  }
  return PluginStatus::Ok();
}

PluginStatus ReadVendorVfio(const Sysfs& sysfs, std::string_view gpu_family, GpuVgpuState* state) {
  std::map<int, VgpuTypeOffer> offers;
  std::map<int, std::string> names;  // every type ID any VF lists, to name the VFs in use.
  std::vector<std::pair<std::string, int>> in_use;
  for (const std::string& vf : state->parents) {
    const std::string dir = kPciDevices + vf + "/nvidia";
    int current = 0;
    PluginStatus status = ReadNumber(sysfs, dir + "/current_vgpu_type", &current);
    if (!status.ok()) return status;
    std::string creatable;
    const int error = sysfs.Read(dir + "/creatable_vgpu_types", &creatable);
    if (error != 0) return ReadError(dir + "/creatable_vgpu_types", error);
    for (const CreatableType& type : ParseCreatableTypes(creatable)) {
      names[type.id] = type.name;
      if (current != 0) continue;
      VgpuTypeOffer& offer = offers[type.id];
      offer.id = std::to_string(type.id);
      offer.driver_name = type.name;
      offer.name = SchedulerTypeName(type.name, gpu_family).value_or("");
      offer.available += 1;
      offer.room.push_back(vf);
    }
    if (current != 0) in_use.emplace_back(vf, current);
  }
  for (auto& [id, offer] : offers) state->types.push_back(std::move(offer));
  for (const auto& [vf, type_id] : in_use) {
    VgpuDeviceInfo device;
    device.id = vf;
    device.parent = vf;
    device.type_id = std::to_string(type_id);
    if (auto it = names.find(type_id); it != names.end()) {
      device.driver_name = it->second;
      device.name = SchedulerTypeName(it->second, gpu_family).value_or("");
    }
    device.sysfs_path = kPciDevices + vf;
    state->devices.push_back(std::move(device));
  }
  return PluginStatus::Ok();
}

}  // namespace

std::string_view FormName(VgpuForm form) {
  switch (form) {
    case VgpuForm::kMdev:
      return "mdev";
    case VgpuForm::kVendorVfio:
      return "vendor-vfio";
    case VgpuForm::kNone:
      break;
  }
  return "none";
}

std::vector<CreatableType> ParseCreatableTypes(std::string_view content) {
  std::vector<CreatableType> types;
  while (!content.empty()) {
    const size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    content = newline == std::string_view::npos ? std::string_view() : content.substr(newline + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    CreatableType type;
    const std::string_view name = Trim(line.substr(colon + 1));
    if (!ParseInt(line.substr(0, colon), &type.id) || type.id <= 0 || name.empty()) continue;
    type.name = std::string(name);
    types.push_back(std::move(type));
  }
  return types;
}

int MaxInstancesOf(std::string_view description) {
  const std::string_view key = "max_instance=";
  const size_t at = description.find(key);
  if (at == std::string_view::npos) return 0;
  std::string_view rest = description.substr(at + key.size());
  rest = rest.substr(0, rest.find_first_of(", \n"));
  int value = 0;
  return ParseInt(rest, &value) && value > 0 ? value : 0;
}

PluginStatus DiscoverGpu(const Sysfs& sysfs, std::string_view pci_bus_id,
                         std::string_view gpu_family, GpuVgpuState* state) {
  const std::optional<std::string> address = SysfsPciAddress(pci_bus_id);
  if (!address) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                               "vGPU: \"" + std::string(pci_bus_id) + "\" is not a PCI bus id");
  }
  *state = GpuVgpuState{};
  state->address = *address;
  if (!sysfs.Exists(kPciDevices + *address)) {
    return PluginStatus::Error(TESSERA_NOT_FOUND, "vGPU: no PCI device " + kPciDevices + *address);
  }
  if (sysfs.Exists(kMdevBus + *address)) {
    state->form = VgpuForm::kMdev;
    state->parents = {*address};
    return ReadMdev(sysfs, gpu_family, state);
  }
  std::vector<std::string> vfs;
  PluginStatus status = VirtualFunctions(sysfs, *address, &vfs);
  if (!status.ok()) return status;
  for (const std::string& vf : vfs) {
    if (sysfs.Exists(kMdevBus + vf)) state->parents.push_back(vf);
  }
  if (!state->parents.empty()) {
    state->form = VgpuForm::kMdev;
    return ReadMdev(sysfs, gpu_family, state);
  }
  for (const std::string& vf : vfs) {
    if (sysfs.Exists(kPciDevices + vf + "/nvidia/current_vgpu_type")) state->parents.push_back(vf);
  }
  if (!state->parents.empty()) {
    state->form = VgpuForm::kVendorVfio;
    return ReadVendorVfio(sysfs, gpu_family, state);
  }
  return PluginStatus::Ok();
}

}  // namespace tessera::vgpu
