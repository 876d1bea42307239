#include "vgpu/testing/fake_vgpu_sysfs.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tessera/gpu/vgpu_types.h"
#include "vgpu/device_uuid.h"

namespace tessera::vgpu::testing {

namespace fs = std::filesystem;

namespace {

const std::string kPciDevices = "/sys/bus/pci/devices/";

std::string MakeTempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/tessera-fake-vgpu-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("FakeVgpuSysfs: mkdtemp failed");
  }
  return pattern;
}

void WriteFile(const fs::path& path, const std::string& content, fs::perms perms) {
  fs::create_directories(path.parent_path());
  fs::permissions(path.parent_path(), fs::perms::owner_all, fs::perm_options::add);
  if (fs::exists(path)) fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(path, std::ios::trunc) << content;
  fs::permissions(path, perms);
}

void Link(const fs::path& link, const std::string& target) {
  fs::create_directories(link.parent_path());
  std::error_code ignored;
  fs::remove(link, ignored);
  fs::create_directory_symlink(target, link);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "0000:3b:00.4" for the VF `index` of "0000:3b:00.0".
std::string VfAddress(const std::string& pf, int index) {
  const int bus_device = std::stoi(pf.substr(pf.size() - 4, 2), nullptr, 16);
  const int function = pf.back() - '0';
  const int devfn = (bus_device << 3 | function) + 4 + index;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%s%02x.%d", pf.substr(0, pf.size() - 4).c_str(),
                (devfn >> 3) & 0x1f, devfn & 7);
  return buffer;
}

// kstrtoul/kstrtoint as sysfs stores use them: the whole buffer, one trailing newline allowed,
// base 0 (0x.. hex, 0.. octal) for kstrtoul.
bool ParseKernelNumber(std::string_view data, int base, unsigned long* value) {
  if (!data.empty() && data.back() == '\n') data.remove_suffix(1);
  if (data.empty()) return false;
  std::string text(data);
  if (!std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  *value = std::strtoul(text.c_str(), &end, base);
  return errno == 0 && end == text.c_str() + text.size();
}

}  // namespace

FakeVgpuSysfs::FakeVgpuSysfs()
    : root_(MakeTempDir()), canonical_root_(fs::canonical(root_).string()), files_(root_) {
  fs::create_directories(root_ + "/sys/bus/pci/devices");
  fs::create_directories(root_ + "/sys/bus/mdev/devices");
  fs::create_directories(root_ + "/sys/class/mdev_bus");
}

FakeVgpuSysfs::~FakeVgpuSysfs() {
  std::error_code ignored;
  // Write-only attributes and their directories: make everything removable first.
  for (auto it = fs::recursive_directory_iterator(root_, ignored);
       it != fs::recursive_directory_iterator(); it.increment(ignored)) {
    if (!it->is_symlink())
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
  }
  fs::remove_all(root_, ignored);
}

std::string FakeVgpuSysfs::Host(const std::string& path) const { return files_.HostPath(path); }

std::string FakeVgpuSysfs::TypeId(const std::string& driver_name, bool mdev) {
  const std::string key = (mdev ? "mdev:" : "vfio:") + driver_name;
  auto it = type_numbers_.find(key);
  if (it == type_numbers_.end()) {
    int next = 0;
    for (const auto& [k, n] : type_numbers_) {
      if (k.rfind(mdev ? "mdev:" : "vfio:", 0) == 0) ++next;
    }
    it = type_numbers_.emplace(key, next).first;
  }
  return mdev ? "nvidia-" + std::to_string(500 + it->second) : std::to_string(1400 + it->second);
}

void FakeVgpuSysfs::AddGpu(const std::string& pf, const FakeGpuModel& model, FakeVgpuForm form,
                           int vfs) {
  Gpu gpu;
  gpu.pf = pf;
  gpu.form = form;
  const bool mdev = form != FakeVgpuForm::kVendorVfio;
  std::vector<int32_t> sizes = model.framebuffers_gib;
  if (sizes.empty()) {
    const int32_t gib = MemoryGib(model.memory_mib);
    for (int32_t size : StandardFramebuffers()) {
      if (size <= gib && gib % size == 0) sizes.push_back(size);
    }
  }
  for (int32_t size : sizes) {
    Type type;
    type.driver_name =
        model.name_prefix + " " + model.family + "-" + std::to_string(size) + model.series;
    type.id = TypeId(type.driver_name, mdev);
    type.framebuffer_gib = size;
    type.max_instances = InstancesPerGpu(size, model.memory_mib);
    gpu.types.push_back(type);
  }

  const fs::path pf_dir = Host(kPciDevices + pf);
  WriteFile(pf_dir / "vendor", "0x10de\n", fs::perms::owner_read);
  WriteFile(pf_dir / "class", "0x030200\n", fs::perms::owner_read);
  if (form != FakeVgpuForm::kMdevOnPf) {
    WriteFile(pf_dir / "sriov_totalvfs", std::to_string(vfs) + "\n", fs::perms::owner_read);
    WriteFile(pf_dir / "sriov_numvfs", std::to_string(vfs) + "\n", fs::perms::owner_read);
    for (int i = 0; i < vfs; ++i) {
      const std::string vf = VfAddress(pf, i);
      gpu.vfs.push_back(vf);
      Link(pf_dir / ("virtfn" + std::to_string(i)), "../" + vf);
      Link(fs::path(Host(kPciDevices + vf)) / "physfn", "../" + pf);
      gpu_of_[vf] = pf;
    }
  }
  gpu_of_[pf] = pf;
  if (form == FakeVgpuForm::kMdevOnPf) gpu.parents = {pf};
  if (form == FakeVgpuForm::kMdevOnVfs) gpu.parents = gpu.vfs;
  for (const std::string& parent : gpu.parents) {
    Link(Host("/sys/class/mdev_bus/" + parent), "../../bus/pci/devices/" + parent);
    for (const Type& type : gpu.types) {
      const fs::path dir = Host(kPciDevices + parent + "/mdev_supported_types/" + type.id);
      WriteFile(dir / "name", type.driver_name + "\n", fs::perms::owner_read);
      WriteFile(dir / "device_api", "vfio-pci\n", fs::perms::owner_read);
      const int fb_mib = type.framebuffer_gib * 1024;
      WriteFile(dir / "description",
                "num_heads=1, frl_config=60, framebuffer=" + std::to_string(fb_mib) +
                    "M, max_resolution=4096x2160, max_instance=" +
                    std::to_string(type.max_instances) + "\n",
                fs::perms::owner_read);
      WriteFile(dir / "create", "", fs::perms::owner_write);
      fs::create_directories(dir / "devices");
    }
  }
  if (form == FakeVgpuForm::kVendorVfio) {
    for (const std::string& vf : gpu.vfs) gpu.vf_types[vf] = "";
  }
  gpus_[pf] = gpu;
  Publish(gpus_[pf]);
}

std::vector<std::string> FakeVgpuSysfs::VfsOf(const std::string& pf) const {
  auto it = gpus_.find(pf);
  return it == gpus_.end() ? std::vector<std::string>{} : it->second.vfs;
}

void FakeVgpuSysfs::FailNextWrite(const std::string& path, int error) { failures_[path] = error; }

int FakeVgpuSysfs::Available(const Gpu& gpu, const std::string& parent, const Type& type) const {
  int same = 0;
  bool parent_busy = false;
  for (const auto& [uuid, mdev] : gpu.mdevs) {
    if (mdev.type_id != type.id) return 0;  // one type per GPU.
    ++same;
    parent_busy = parent_busy || mdev.parent == parent;
  }
  const int left = std::max(0, type.max_instances - same);
  if (gpu.form == FakeVgpuForm::kMdevOnVfs) return parent_busy ? 0 : std::min(1, left);
  return left;
}

std::vector<const FakeVgpuSysfs::Type*> FakeVgpuSysfs::Creatable(const Gpu& gpu,
                                                                 const std::string& vf) const {
  std::vector<const Type*> types;
  if (!gpu.vf_types.at(vf).empty()) return types;
  std::string in_use;
  int count = 0;
  for (const auto& [other, type_id] : gpu.vf_types) {
    if (type_id.empty()) continue;
    in_use = type_id;
    ++count;
  }
  for (const Type& type : gpu.types) {
    if (in_use.empty() || (type.id == in_use && count < type.max_instances)) {
      types.push_back(&type);
    }
  }
  return types;
}

void FakeVgpuSysfs::Publish(const Gpu& gpu) {
  for (const std::string& parent : gpu.parents) {
    for (const Type& type : gpu.types) {
      WriteFile(
          Host(kPciDevices + parent + "/mdev_supported_types/" + type.id + "/available_instances"),
          std::to_string(Available(gpu, parent, type)) + "\n", fs::perms::owner_read);
    }
  }
  for (const auto& [vf, type_id] : gpu.vf_types) {
    std::string creatable = "ID    : vGPU Name\n";
    for (const Type* type : Creatable(gpu, vf)) {
      creatable += type->id + "  : " + type->driver_name + "\n";
    }
    const fs::path dir = Host(kPciDevices + vf + "/nvidia");
    WriteFile(dir / "creatable_vgpu_types", creatable, fs::perms::owner_read);
    WriteFile(dir / "current_vgpu_type", (type_id.empty() ? "0" : type_id) + "\n",
              fs::perms::owner_read | fs::perms::owner_write);
  }
}

FakeVgpuSysfs::Gpu* FakeVgpuSysfs::GpuOfParent(const std::string& address) {
  auto it = gpu_of_.find(address);
  return it == gpu_of_.end() ? nullptr : &gpus_.at(it->second);
}

int FakeVgpuSysfs::MdevCreate(Gpu& gpu, const std::string& parent, const std::string& type_id,
                              std::string_view data) {
  // create_store(): UUID_STRING_LEN (36) or one more, then guid_parse().
  if (data.size() < 36 || data.size() > 37) return EINVAL;
  const std::string_view text = data.substr(0, 36);
  if (!IsUuid(text) || (data.size() == 37 && data[36] != '\n')) return EINVAL;
  const std::string uuid = Lower(text);
  for (const auto& [pf, other] : gpus_) {
    if (other.mdevs.count(uuid) > 0) return EEXIST;  // the kernel's one mdev_list.
  }
  const Type* type = nullptr;
  for (const Type& t : gpu.types) {
    if (t.id == type_id) type = &t;
  }
  if (type == nullptr) return ENOENT;
  if (Available(gpu, parent, *type) <= 0) return EUSERS;
  gpu.mdevs[uuid] = {parent, type_id};
  const fs::path device = Host(kPciDevices + parent + "/" + uuid);
  WriteFile(device / "remove", "", fs::perms::owner_write);
  Link(device / "mdev_type", "../mdev_supported_types/" + type_id);
  Link(Host("/sys/bus/mdev/devices/" + uuid), "../../../bus/pci/devices/" + parent + "/" + uuid);
  Link(Host(kPciDevices + parent + "/mdev_supported_types/" + type_id + "/devices/" + uuid),
       "../../../" + uuid);
  Publish(gpu);
  return 0;
}

int FakeVgpuSysfs::MdevRemove(Gpu& gpu, const std::string& uuid, std::string_view data) {
  unsigned long value = 0;
  if (!ParseKernelNumber(data, 0, &value)) return EINVAL;
  if (value == 0) return 0;
  auto it = gpu.mdevs.find(uuid);
  if (it == gpu.mdevs.end()) return ENODEV;
  const std::string parent = it->second.parent;
  const std::string type_id = it->second.type_id;
  gpu.mdevs.erase(it);
  std::error_code ignored;
  fs::remove(Host(kPciDevices + parent + "/mdev_supported_types/" + type_id + "/devices/" + uuid),
             ignored);
  fs::remove(Host("/sys/bus/mdev/devices/" + uuid), ignored);
  const fs::path device = Host(kPciDevices + parent + "/" + uuid);
  fs::permissions(device / "remove", fs::perms::owner_all, fs::perm_options::add, ignored);
  fs::remove_all(device, ignored);
  Publish(gpu);
  return 0;
}

int FakeVgpuSysfs::SetVfType(Gpu& gpu, const std::string& vf, std::string_view data) {
  unsigned long value = 0;
  if (!ParseKernelNumber(data, 10, &value)) return EINVAL;
  std::string& held = gpu.vf_types.at(vf);
  if (value == 0) {
    held.clear();
    Publish(gpu);
    return 0;
  }
  if (!held.empty()) return EBUSY;
  const std::string id = std::to_string(value);
  bool listed = false;
  for (const Type* type : Creatable(gpu, vf)) listed = listed || type->id == id;
  if (!listed) return EINVAL;
  held = id;
  Publish(gpu);
  return 0;
}

int FakeVgpuSysfs::Write(const std::string& path, std::string_view data) {
  if (auto it = failures_.find(path); it != failures_.end()) {
    const int error = it->second;
    failures_.erase(it);
    return error;
  }
  std::error_code error;
  const fs::path resolved = fs::canonical(Host(path), error);
  if (error) return ENOENT;
  std::string relative = resolved.string();
  if (relative.rfind(canonical_root_, 0) != 0) return EACCES;
  relative = relative.substr(canonical_root_.size());
  // Every attribute written lives under a PCI device: /sys/bus/pci/devices/<addr>/...
  if (relative.rfind(kPciDevices, 0) == 0) {
    const std::string rest = relative.substr(kPciDevices.size());
    const std::string address = rest.substr(0, rest.find('/'));
    std::vector<std::string> parts;
    for (size_t at = address.size() + 1; at <= rest.size();) {
      const size_t slash = rest.find('/', at);
      parts.push_back(rest.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
      if (slash == std::string::npos) break;
      at = slash + 1;
    }
    if (Gpu* gpu = GpuOfParent(address)) {
      if (parts.size() == 3 && parts[0] == "mdev_supported_types" && parts[2] == "create") {
        return MdevCreate(*gpu, address, parts[1], data);
      }
      if (parts.size() == 2 && parts[1] == "remove" && gpu->mdevs.count(parts[0]) > 0) {
        return MdevRemove(*gpu, parts[0], data);
      }
      if (parts.size() == 2 && parts[0] == "nvidia" && parts[1] == "current_vgpu_type" &&
          gpu->vf_types.count(address) > 0) {
        return SetVfType(*gpu, address, data);
      }
    }
  }
  return EACCES;  // kernfs: no store for this attribute.
}

int FakeVgpuSysfs::Read(const std::string& path, std::string* content) const {
  const std::string name = fs::path(path).filename().string();
  if ((name == "create" || name == "remove") && fs::exists(Host(path))) return EACCES;
  return files_.Read(path, content);
}

int FakeVgpuSysfs::List(const std::string& path, std::vector<std::string>* names) const {
  return files_.List(path, names);
}

int FakeVgpuSysfs::ReadLink(const std::string& path, std::string* target) const {
  return files_.ReadLink(path, target);
}

bool FakeVgpuSysfs::Exists(const std::string& path) const { return files_.Exists(path); }

}  // namespace tessera::vgpu::testing
