// The local backend as a class an embedder or a test can make: MakeLocalBackend builds it with
// its seams, the parts of the machine it reaches through an interface a test can fill in. The
// shared object (local_plugin.cc) makes it with the real ones; a test can hand it, say, a fake
// /sys as a linked plugin (tessera/plugin/linked.h) and drive it with the SDK's FakeHost.
//
// What the backend does is described in local_backend.cc and plugins/local/README.md.
#pragma once

#include <memory>

#include "tessera/plugin/plugin.h"
#include "vgpu/sysfs.h"

namespace tessera::local {

inline constexpr char kPluginName[] = "local";
inline constexpr char kPluginVersion[] = "1.1.0";
inline constexpr uint32_t kPluginKinds =
    TESSERA_PLUGIN_KIND_EXECUTOR | TESSERA_PLUGIN_KIND_PARTITIONER;

struct LocalSeams {
  // /sys for vGPU devices (mdev and vendor VFIO); null = the files under vgpu_sysfs_root.
  std::shared_ptr<vgpu::Sysfs> sysfs;
};

std::unique_ptr<plugin::Plugin> MakeLocalBackend(plugin::Host host, LocalSeams seams);

}  // namespace tessera::local
