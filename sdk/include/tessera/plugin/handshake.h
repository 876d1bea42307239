// The plugin handshake: what a host checks in a plugin's descriptor before it calls anything in
// it. One set of rules, used by the scheduler's plugin host and by the SDK's FakeHost (and so by
// the conformance kit), so a plugin that passes the kit loads in the scheduler and one that the
// scheduler refuses fails the kit with the same message (docs/plugins.md, "Versioning"):
//
//   - a descriptor at all;
//   - abi_major equal to the host's TESSERA_PLUGIN_ABI_MAJOR (any minor is accepted: minors only
//     append fields, and fields past the plugin's struct_size count as NULL);
//   - struct_size covering every field of minor 0 (kMinDescriptorSize);
//   - a non-empty name and version, on_init and on_shutdown present;
//   - kinds a non-empty set of TESSERA_PLUGIN_KIND_* bits.
//
// Header-only and free of the scheduler's types; safe to call from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "tessera/plugin/abi.h"

namespace tessera::plugin {

// The size of a minor-0 descriptor: every descriptor must hold at least the fields of minor 0.
inline constexpr size_t kMinDescriptorSize =
    offsetof(tessera_plugin_descriptor, tessera_plugin_on_deprovision) +
    sizeof(tessera_plugin_descriptor::tessera_plugin_on_deprovision);

struct HandshakeProblem {
  // The plugin was built for another ABI major: rebuilding it is the fix. Every other problem is
  // a malformed descriptor.
  bool wrong_major = false;
  std::string message;  // e.g. "built for plugin ABI 2.0, but this scheduler speaks 1.0; ..."
};

// nullopt when `d` passes the handshake.
inline std::optional<HandshakeProblem> CheckHandshake(const tessera_plugin_descriptor* d) {
  auto malformed = [](std::string message) {
    return std::optional<HandshakeProblem>(HandshakeProblem{false, std::move(message)});
  };
  if (d == nullptr) return malformed("the entry function returned no descriptor");
  if (d->abi_major != TESSERA_PLUGIN_ABI_MAJOR) {
    return HandshakeProblem{true, "built for plugin ABI " + std::to_string(d->abi_major) + "." +
                                      std::to_string(d->abi_minor) +
                                      ", but this scheduler speaks " +
                                      std::to_string(TESSERA_PLUGIN_ABI_MAJOR) + "." +
                                      std::to_string(TESSERA_PLUGIN_ABI_MINOR) +
                                      "; rebuild the plugin against this Tessera"};
  }
  if (d->struct_size < kMinDescriptorSize) {
    return malformed("descriptor struct_size " + std::to_string(d->struct_size) +
                     " is smaller than ABI " + std::to_string(TESSERA_PLUGIN_ABI_MAJOR) + ".0's " +
                     std::to_string(kMinDescriptorSize));
  }
  if (d->name == nullptr || d->name[0] == '\0') return malformed("descriptor has no name");
  const std::string plugin = "plugin '" + std::string(d->name) + "'";
  if (d->version == nullptr || d->version[0] == '\0') return malformed(plugin + " has no version");
  if (d->tessera_plugin_on_init == nullptr || d->tessera_plugin_on_shutdown == nullptr) {
    return malformed(plugin + " lacks on_init or on_shutdown");
  }
  const uint32_t known = TESSERA_PLUGIN_KIND_EXECUTOR | TESSERA_PLUGIN_KIND_PARTITIONER |
                         TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER;
  if (d->kinds == 0 || (d->kinds & ~known) != 0) {
    return malformed(plugin + ": descriptor kinds " + std::to_string(d->kinds) +
                     " is not a set of TESSERA_PLUGIN_KIND_* bits");
  }
  return std::nullopt;
}

}  // namespace tessera::plugin
