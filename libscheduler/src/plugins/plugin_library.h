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
//
// An isolated plugin (LoadIsolated) is loaded in a tessera-plugin-host process instead; its
// descriptor forwards every call there (plugins/remote/). A linked plugin (Linked) is not
// loaded at all: its descriptor is the SDK's trampolines over the embedder's Plugin class.
// Callers treat all three alike, except that an instance is made with Init rather than
// descriptor().on_init.
#pragma once

#include <chrono>
#include <functional>
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

class PluginHostProcess;

// Where an install puts plugins: <libdir>/tessera/plugins, beside libtessera (<libdir>/
// libtessera.so), which is where `cmake --install` puts Tessera's own backends and the plugin
// template puts its plugin, under the same prefix. Found from where this code is loaded from, so
// it holds for any install prefix. Empty when that cannot be told.
std::string InstalledPluginDir();

class PluginLibrary {
 public:
  // Finds `plugin` (a path, or a name searched in `dirs` as libtessera_plugin_<name>.so),
  // loads it and checks its descriptor.
  static StatusOr<std::shared_ptr<PluginLibrary>> Load(const std::string& plugin,
                                                       const std::vector<std::string>& dirs);
  // Checks a descriptor as Load does; `where` names the plugin in messages.
  static Status CheckDescriptor(const tessera_plugin_descriptor* descriptor,
                                const std::string& where);

  // Finds `plugin` as Load does, starts `host_executable` (empty: DefaultPluginHostExecutable)
  // on it and checks the descriptor it reports, waiting at most `deadline` for it.
  // Errors: those of Load, NOT_FOUND (no host executable), UNAVAILABLE (it did not start).
  static StatusOr<std::shared_ptr<PluginLibrary>> LoadIsolated(const std::string& plugin,
                                                               const std::vector<std::string>& dirs,
                                                               const std::string& host_executable,
                                                               std::chrono::milliseconds deadline);

  // A linked plugin (tessera/plugin/linked.h), checked as Load checks a descriptor.
  // Errors: INVALID_ARGUMENT (no make, or a descriptor the handshake refuses).
  static StatusOr<std::shared_ptr<PluginLibrary>> Linked(
      std::shared_ptr<const plugin::LinkedPlugin> plugin);

  ~PluginLibrary();

  // Makes an instance: the descriptor's on_init, run in the host process for an isolated plugin,
  // the plugin's `make` and Init for a linked one.
  tessera_status Init(const tessera_host_api* host, tessera_bytes config,
                      tessera_plugin_instance** out, tessera_sink* error) const;
  // The host gives up on the plugin. An isolated plugin's process is killed: calls in flight
  // return UNAVAILABLE and no callback reaches the host API after this returns. In-process code
  // cannot be stopped, so for an in-process plugin nothing happens.
  void Abandon();
  // `on_lost(why)` runs once, from any thread, if an isolated plugin's process ends or breaks
  // the protocol. Never called for an in-process plugin.
  void SetOnLost(std::function<void(const std::string& why)> on_lost);
  bool isolated() const { return process_ != nullptr; }
  // An isolated plugin's process is gone (it crashed, or broke the protocol): a call that failed
  // then failed for that, not for the request. Set before the calls waiting on it return.
  bool lost() const;

  // The plugin's descriptor, truncated to its struct_size (missing functions are NULL).
  const tessera_plugin_descriptor& descriptor() const { return descriptor_; }
  const PluginInfo& info() const { return info_; }

 private:
  PluginLibrary() = default;

  std::unique_ptr<boost::dll::shared_library> library_;
  std::unique_ptr<PluginHostProcess> process_;          // isolated plugins only.
  std::shared_ptr<const plugin::LinkedPlugin> linked_;  // linked plugins only.
  tessera_plugin_descriptor descriptor_{};
  PluginInfo info_;
};

}  // namespace tessera
