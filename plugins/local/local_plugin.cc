// libtessera_plugin_local.so: the local backend (local_backend.h) on this machine's own /sys.
#include "local_backend.h"

namespace tessera::local {

std::unique_ptr<plugin::Plugin> MakeForThisMachine(plugin::Host host) {
  return MakeLocalBackend(host, LocalSeams{});
}

}  // namespace tessera::local

TESSERA_PLUGIN_FACTORY(tessera::local::MakeForThisMachine, tessera::local::kPluginName,
                       tessera::local::kPluginVersion, tessera::local::kPluginKinds)
