#include "plugins/plugin_library.h"

#include <dlfcn.h>

#include <boost/dll/shared_library.hpp>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <optional>

#include "plugins/remote/forwarding_descriptor.h"
#include "plugins/remote/plugin_host_process.h"
#include "tessera/plugin/handshake.h"
#include "tessera/plugin/linked.h"

namespace tessera {
namespace {

StatusOr<std::string> Resolve(const std::string& plugin, const std::vector<std::string>& dirs) {
  if (plugin.empty()) return InvalidArgumentError("plugin: required (a path or a name)");
  if (plugin.find('/') != std::string::npos || plugin.ends_with(".so")) {
    if (!std::filesystem::exists(plugin)) {
      return NotFoundError("plugin '" + plugin + "': no such file");
    }
    return plugin;
  }
  std::string searched;
  for (const std::string& dir : dirs) {
    const std::filesystem::path candidate =
        std::filesystem::path(dir) / ("libtessera_plugin_" + plugin + ".so");
    if (std::filesystem::exists(candidate)) return candidate.string();
    searched += (searched.empty() ? "" : ", ") + dir;
  }
  return NotFoundError("plugin '" + plugin + "': no libtessera_plugin_" + plugin +
                       ".so in plugin_dirs (" + (searched.empty() ? "none set" : searched) + ")");
}

}  // namespace

std::string InstalledPluginDir() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<const void*>(&InstalledPluginDir), &self) == 0 ||
      self.dli_fname == nullptr) {
    return "";
  }
  // The file this code was loaded from: libtessera, or the program itself when linked in
  // statically (for which dladdr may name argv[0], so /proc/self/exe is asked instead).
  std::error_code error;
  std::filesystem::path file = std::filesystem::canonical(self.dli_fname, error);
  if (error) file = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "";
  return (file.parent_path() / "tessera" / "plugins").string();
}

Status PluginLibrary::CheckDescriptor(const tessera_plugin_descriptor* d,
                                      const std::string& where) {
  const std::optional<plugin::HandshakeProblem> problem = plugin::CheckHandshake(d);
  if (!problem) return Status::Ok();
  const std::string message = where + ": " + problem->message;
  return problem->wrong_major ? FailedPreconditionError(message) : InvalidArgumentError(message);
}

StatusOr<std::shared_ptr<PluginLibrary>> PluginLibrary::Load(const std::string& plugin,
                                                             const std::vector<std::string>& dirs) {
  TESSERA_ASSIGN_OR_RETURN(const std::string path, Resolve(plugin, dirs));
  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->library_ = std::make_unique<boost::dll::shared_library>();
  boost::dll::fs::error_code ec;
  // RTLD_LOCAL (Boost.DLL's default on POSIX) keeps the plugin's symbols to itself; the shared
  // tessera_proto library is found through the plugin's own dependencies.
  lib->library_->load(path, boost::dll::load_mode::default_mode, ec);
  if (ec) return InvalidArgumentError("plugin '" + path + "': cannot load: " + ec.message());
  if (!lib->library_->has(TESSERA_PLUGIN_ENTRY_SYMBOL)) {
    return InvalidArgumentError("plugin '" + path +
                                "': no " TESSERA_PLUGIN_ENTRY_SYMBOL
                                " symbol; is it a Tessera plugin?");
  }
  auto entry = lib->library_->get<const tessera_plugin_descriptor*()>(TESSERA_PLUGIN_ENTRY_SYMBOL);
  const tessera_plugin_descriptor* d = entry();
  TESSERA_RETURN_IF_ERROR(CheckDescriptor(d, "plugin '" + path + "'"));
  std::memcpy(&lib->descriptor_, d, std::min<size_t>(d->struct_size, sizeof(lib->descriptor_)));

  PluginInfo& info = lib->info_;
  info.path = path;
  info.name = d->name;
  info.version = d->version ? d->version : "";
  info.abi_major = d->abi_major;
  info.abi_minor = d->abi_minor;
  info.executor = d->kinds & TESSERA_PLUGIN_KIND_EXECUTOR;
  info.partitioner = d->kinds & TESSERA_PLUGIN_KIND_PARTITIONER;
  info.capacity_provider = d->kinds & TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER;
  return lib;
}

StatusOr<std::shared_ptr<PluginLibrary>> PluginLibrary::LoadIsolated(
    const std::string& plugin, const std::vector<std::string>& dirs,
    const std::string& host_executable, std::chrono::milliseconds deadline) {
  TESSERA_ASSIGN_OR_RETURN(const std::string path, Resolve(plugin, dirs));
  std::string executable = host_executable;
  if (executable.empty()) {
    TESSERA_ASSIGN_OR_RETURN(executable, DefaultPluginHostExecutable());
  }
  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());
  plugin_wire::DescriptorInfo remote;
  TESSERA_ASSIGN_OR_RETURN(lib->process_,
                           PluginHostProcess::Start(executable, path, deadline, &remote));
  PluginInfo& info = lib->info_;
  info.path = path;
  info.name = remote.name;
  info.version = remote.version;
  info.abi_major = remote.abi_major;
  info.abi_minor = remote.abi_minor;
  info.executor = remote.kinds & TESSERA_PLUGIN_KIND_EXECUTOR;
  info.partitioner = remote.kinds & TESSERA_PLUGIN_KIND_PARTITIONER;
  info.capacity_provider = remote.kinds & TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER;
  // The descriptor's strings point into info_, which lives as long as the library.
  remote.name = info.name;
  remote.version = info.version;
  lib->descriptor_ = ForwardingDescriptor(remote);
  lib->descriptor_.name = info.name.c_str();
  lib->descriptor_.version = info.version.c_str();
  TESSERA_RETURN_IF_ERROR(CheckDescriptor(&lib->descriptor_, "plugin '" + path + "'"));
  return lib;
}

StatusOr<std::shared_ptr<PluginLibrary>> PluginLibrary::Linked(
    std::shared_ptr<const plugin::LinkedPlugin> plugin) {
  if (plugin == nullptr) return InvalidArgumentError("linked: not set");
  if (!plugin->make) return InvalidArgumentError("linked.make: not set");
  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->descriptor_ = plugin::LinkedDescriptor(*plugin);
  TESSERA_RETURN_IF_ERROR(CheckDescriptor(&lib->descriptor_, "linked plugin"));
  const uint32_t kinds = plugin->kinds;
  PluginInfo& info = lib->info_;
  info.path = "(linked)";
  info.name = plugin->name;
  info.version = plugin->version;
  info.abi_major = lib->descriptor_.abi_major;
  info.abi_minor = lib->descriptor_.abi_minor;
  info.executor = kinds & TESSERA_PLUGIN_KIND_EXECUTOR;
  info.partitioner = kinds & TESSERA_PLUGIN_KIND_PARTITIONER;
  info.capacity_provider = kinds & TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER;
  lib->linked_ = std::move(plugin);  // The descriptor's name and version point into it.
  return lib;
}

PluginLibrary::~PluginLibrary() = default;

tessera_status PluginLibrary::Init(const tessera_host_api* host, tessera_bytes config,
                                   tessera_plugin_instance** out, tessera_sink* error) const {
  if (linked_) return plugin::InitLinked(*linked_, host, config, out, error);
  if (!process_) return descriptor_.tessera_plugin_on_init(host, config, out, error);
  const std::string bytes =
      config.size == 0 ? "" : std::string(reinterpret_cast<const char*>(config.data), config.size);
  const PluginHostProcess::Reply reply = process_->Init(host, bytes);
  if (!reply.error.empty()) {
    error->write(error, reinterpret_cast<const uint8_t*>(reply.error.data()), reply.error.size());
  }
  if (reply.status == TESSERA_OK) *out = ForwardingInstance(process_.get());
  return reply.status;
}

void PluginLibrary::Abandon() {
  if (process_) process_->Abandon();
}

bool PluginLibrary::lost() const { return process_ != nullptr && process_->lost(); }

void PluginLibrary::SetOnLost(std::function<void(const std::string& why)> on_lost) {
  if (process_) process_->SetOnLost(std::move(on_lost));
}

StatusOr<PluginInfo> InspectPlugin(const std::string& plugin,
                                   const std::vector<std::string>& dirs) {
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<PluginLibrary> lib, PluginLibrary::Load(plugin, dirs));
  return lib->info();
}

}  // namespace tessera
