// Plugins: resource backends loaded at run time from shared objects that speak the C ABI of
// sdk/include/tessera/plugin/abi.h (docs/plugins.md), or written by the embedding program as a
// C++ class and linked in (PluginOptions::linked, tessera/plugin/linked.h).
//
// The scheduler runs its tasks through the executor plugins Options::backends lists, each on
// the nodes it reports (otherwise through the built-in simulation). A plugin is found by path, or
// by name in Options::plugin_dirs ("sim" is libtessera_plugin_sim.so). Loading checks the ABI
// version before anything else: a plugin built for another major version is refused with the
// versions in the message; a newer minor version is accepted.
//
// Every call into a plugin runs on a worker thread of that plugin with a deadline. A plugin
// whose calls keep failing (PluginOptions::max_consecutive_errors in a row), or that returns
// bytes that do not parse, or does not answer within its deadline, is marked unhealthy: it gets no
// more calls, its nodes are cordoned, the tasks it was asked to launch fail, and the scheduler
// keeps deciding. A hung call is abandoned, never waited for.
//
// An isolated plugin (PluginOptions::isolate) runs in a tessera-plugin-host process of its own,
// so that a crash, a leak or a stuck call cannot take the scheduler down. When it turns
// unhealthy, its process is killed and restarted (with backoff, at most max_restarts_per_minute
// times a minute): the new instance gets on_init with the same config, on_inventory and
// on_reconcile; tasks it still reports from requeued attempts are stopped, the plugin's nodes
// are uncordoned and scheduling goes on.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

namespace plugin {
struct LinkedPlugin;  // tessera/plugin/linked.h, in the plugin SDK.
}

struct PluginOptions {
  // A path to the shared object, or a plugin name looked up in Options::plugin_dirs.
  std::string plugin;
  // Instead of `plugin`: a backend this program implements as a tessera::plugin::Plugin class
  // and links in (tessera/plugin/linked.h, in the plugin SDK), called through the same ABI,
  // threads, deadlines and restarts as a loaded one. Set one of the two; it cannot be isolated.
  std::shared_ptr<const plugin::LinkedPlugin> linked;
  // Passed to the plugin's on_init unchanged, in the plugin's own format.
  std::string config;
  // How long one call may take before the plugin is marked unhealthy: on_init, on_inventory,
  // on_reconcile, on_start, on_node_groups, on_shutdown, and the kinds below left at zero.
  std::chrono::milliseconds call_deadline{5000};
  // The same for each kind of operation, and for the reads (on_poll_events, on_telemetry) that
  // run beside them, so that a slow launch never delays a poll. Zero (default): call_deadline.
  std::chrono::milliseconds launch_deadline{0};
  std::chrono::milliseconds stop_deadline{0};
  std::chrono::milliseconds resize_deadline{0};
  std::chrono::milliseconds partition_deadline{0};  // on_apply_partition_layout / _mig_layout.
  std::chrono::milliseconds read_deadline{0};
  // How long a provisioning request may take, from on_provision to the plugin's
  // PROVISION_COMPLETED or PROVISION_FAILED event (clouds take minutes); past it the request
  // fails and the plugin stays healthy. Default 10 min.
  std::chrono::milliseconds provision_deadline{600000};
  // How often the host asks the plugin for events it has not pushed (on the real clock).
  std::chrono::milliseconds poll_interval{100};
  // Run the plugin in a separate tessera-plugin-host process, restarted when it crashes or
  // turns unhealthy. Default false: in process, where every call is a function call, but a
  // crash in the plugin is a crash of the scheduler. Isolation costs a socket round trip per
  // call (tens of microseconds) and one process per plugin.
  bool isolate = false;
  // The tessera-plugin-host executable for isolate. Empty (default): next to libtessera, as in
  // the build tree, or in the bin/ beside its lib/, as installed.
  std::string host_executable;
  // Restarts allowed within any minute (default 3): an isolated plugin in a new process, an
  // in-process one as a new instance unless a call hung in it. Past them, or 0, it stays down.
  int max_restarts_per_minute = 3;
  // Calls of one kind (launches, stops, polls, ...) in a row that may return an error before the
  // plugin is marked unhealthy (default 3; >= 1; 1 is the first error). Until then an error
  // fails only its own request: a launch is reported lost and its job placed again without
  // spending an attempt; a stop is sent again after a backoff; a resize or re-partition is
  // logged; a poll or telemetry read is asked again. A call of that kind that succeeds starts
  // its count again. A hung call, a crash or bytes that do not parse mark the plugin unhealthy
  // at once.
  int max_consecutive_errors = 3;
};

// One backend of a scheduler's set (Options::backends): a plugin that runs tasks on the nodes
// it reports. Every node belongs to the one backend that reported it; a backend that fails
// cordons only its own nodes and requeues only the jobs that had tasks there.
struct BackendOptions {
  // Unique among the backends; it names the backend in node status, events, logs and errors.
  // Empty: the plugin's own name (two backends of one plugin must then be named).
  std::string name;
  PluginOptions plugin;
  // Backends (by name) whose nodes' GPUs this one re-partitions (on_apply_mig_layout) in place
  // of their own executor: a MIG partitioner beside a backend that only runs processes, say.
  // Its plugin must declare TESSERA_PLUGIN_KIND_PARTITIONER. Empty: it partitions nothing but
  // its own nodes. A backend is named here by at most one other.
  std::vector<std::string> partitions;
};

// What a plugin says about itself.
struct PluginInfo {
  std::string path;  // The shared object; "(linked)" for PluginOptions::linked.
  std::string name;
  std::string version;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  bool executor = false;
  bool partitioner = false;
  bool capacity_provider = false;
};

// Loads `plugin` (a path, or a name searched in `dirs`), checks its ABI version and describes it.
// Errors: NOT_FOUND (no such file), INVALID_ARGUMENT (not a plugin: no entry symbol, a bad
// descriptor), FAILED_PRECONDITION (another ABI major version).
TESSERA_EXPORT StatusOr<PluginInfo> InspectPlugin(const std::string& plugin,
                                                  const std::vector<std::string>& dirs = {});

}  // namespace tessera
