// PluginLibrary: one plugin shared object, loaded with Boost.DLL, whose descriptor passed the
// ABI handshake (sdk/include/tessera/plugin/abi.h).
//
// The handshake happens before any plugin function is called: the entry symbol must exist and
// return a descriptor whose major version equals ours, whose struct_size covers every field of
// minor version 0, and whose name is set. A newer minor version is accepted; fields the plugin's
// struct does not have (an older minor) read as NULL, because the host works on a copy of the
// descriptor truncated to the plugin's struct_size.
//
// The library stays loaded as long as any shared_ptr to it lives: everything that can run plugin
// code (instances, worker threads, callbacks) holds one, so code is never unloaded under a call.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/plugin/abi.h"
#include "tessera/plugin_host.h"
#include "tessera/status.h"

namespace boost::dll {
class shared_library;
}

namespace tessera {

class PluginLibrary {
 public:
  // Finds `plugin` (a path, or a name searched in `dirs` as libtessera_plugin_<name>.so),
  // loads it and checks its descriptor.
  static StatusOr<std::shared_ptr<PluginLibrary>> Load(const std::string& plugin,
                                                       const std::vector<std::string>& dirs);
  // Checks a descriptor as Load does; `where` names the plugin in messages.
  static Status CheckDescriptor(const tessera_plugin_descriptor* descriptor,
                                const std::string& where);

  ~PluginLibrary();

  // The plugin's descriptor, truncated to its struct_size (missing functions are NULL).
  const tessera_plugin_descriptor& descriptor() const { return descriptor_; }
  const PluginInfo& info() const { return info_; }

 private:
  PluginLibrary() = default;

  std::unique_ptr<boost::dll::shared_library> library_;
  tessera_plugin_descriptor descriptor_{};
  PluginInfo info_;
};

}  // namespace tessera
