// A linked plugin: a backend that the program embedding the scheduler implements itself, as a
// tessera::plugin::Plugin class (plugin.h), and links in, instead of a shared object for the
// scheduler to load. A portal that already runs tasks its own way uses one as its in-process
// executor, to let Tessera decide and its own code launch, stop and report:
//
//   class PortalExecutor : public tessera::plugin::Plugin {
//    public:
//     PortalExecutor(tessera::plugin::Host host, TaskRunner& runner);
//     tessera::plugin::PluginStatus Inventory(tessera::v1::Inventory* out) override;
//     tessera::plugin::PluginStatus Launch(const tessera::v1::LaunchTask& request) override;
//     ...
//   };
//
//   tessera::BackendOptions portal;
//   portal.name = "portal";
//   portal.plugin.linked = tessera::plugin::MakeLinkedPlugin(
//       "portal-executor", "1.0.0", TESSERA_PLUGIN_KIND_EXECUTOR,
//       [&runner](tessera::plugin::Host host) {
//         return std::make_unique<PortalExecutor>(host, runner);
//       });
//   options.backends.push_back(portal);
//
// The contract is the plugin ABI's, unchanged (abi.h, docs/plugins.md): the scheduler calls a
// linked plugin through the descriptor trampolines TESSERA_PLUGIN defines, from the same worker
// threads, under the same deadlines, and marks it unhealthy and restarts it by the same rules as
// a shared object loaded in process. A restart shuts the instance down, destroys it and asks
// `make` for a new one, so `make` must be callable more than once, from any thread; state that
// must outlive an instance (the runner above) belongs outside the Plugin. What differs from a
// shared object: nothing is loaded (PluginOptions::plugin stays empty), and it cannot be isolated
// (it is code of this program). The conformance kit checks one with RunConformance(plugin,
// config) (conformance.h), exactly as it checks a shared object.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "tessera/plugin/abi.h"
#include "tessera/plugin/plugin.h"

namespace tessera::plugin {

struct LinkedPlugin {
  // What the plugin calls itself and its version, as TESSERA_PLUGIN's arguments; both required.
  std::string name;
  std::string version;
  // TESSERA_PLUGIN_KIND_* bits, as TESSERA_PLUGIN's.
  uint32_t kinds = TESSERA_PLUGIN_KIND_EXECUTOR;
  // Makes an instance for `host`; its Init follows. Called once per on_init: when the scheduler
  // opens, and at each restart.
  std::function<std::unique_ptr<Plugin>(Host)> make;
};

inline std::shared_ptr<const LinkedPlugin> MakeLinkedPlugin(
    std::string name, std::string version, uint32_t kinds,
    std::function<std::unique_ptr<Plugin>(Host)> make) {
  return std::make_shared<const LinkedPlugin>(
      LinkedPlugin{std::move(name), std::move(version), kinds, std::move(make)});
}

// The descriptor a host calls `plugin` through: that of TESSERA_PLUGIN for plugin.kinds, except
// that on_init is InitLinked (the C on_init, having no way to reach `make`, refuses with
// FAILED_PRECONDITION). Its name and version point into `plugin`, which must outlive it.
inline tessera_plugin_descriptor LinkedDescriptor(const LinkedPlugin& plugin) {
  tessera_plugin_descriptor d = detail::DescribeCalls(plugin.kinds);
  d.name = plugin.name.c_str();
  d.version = plugin.version.c_str();
  d.tessera_plugin_on_init = [](const tessera_host_api*, tessera_bytes, tessera_plugin_instance**,
                                tessera_sink* error) {
    detail::Write(error, "on_init: a linked plugin is made with InitLinked");
    return TESSERA_FAILED_PRECONDITION;
  };
  return d;
}

// on_init for `plugin`: makes an instance with plugin.make and runs its Init with `config`.
// Errors as on_init's; INTERNAL when make returns no plugin or throws.
inline tessera_status InitLinked(const LinkedPlugin& plugin, const tessera_host_api* host,
                                 tessera_bytes config, tessera_plugin_instance** out,
                                 tessera_sink* error) {
  if (!plugin.make) {
    detail::Write(error, "on_init: linked plugin '" + plugin.name + "' has no make");
    return TESSERA_INVALID_ARGUMENT;
  }
  return detail::InitInstance(host, config, out, error, plugin.make);
}

}  // namespace tessera::plugin
