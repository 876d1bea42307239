// A tessera_plugin_descriptor whose functions forward each call to a plugin host process, so
// that an isolated plugin looks to PluginExecutor exactly like one loaded in process.
//
// The instance pointer the forwarders receive is the PluginHostProcess itself (one instance per
// process); on_init has no such pointer and goes through PluginLibrary::Init instead. Each
// forwarder blocks until the reply (it runs on the plugin's PluginWorker thread, whose deadline
// applies unchanged) and returns UNAVAILABLE once the process is lost.
#pragma once

#include "plugins/remote/plugin_host_process.h"
#include "plugins/remote/wire.h"
#include "tessera/plugin/abi.h"

namespace tessera {

// The descriptor `info` describes, with forwarders for the functions it has (NULL for the
// others). name and version point into `info`, which must outlive the descriptor.
tessera_plugin_descriptor ForwardingDescriptor(const plugin_wire::DescriptorInfo& info);

// The instance pointer the forwarders expect for `process`.
tessera_plugin_instance* ForwardingInstance(PluginHostProcess* process);

}  // namespace tessera
