#include "local_config.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <limits>

#include "tessera/plugin/key_value_config.h"

namespace tessera::local {

plugin::PluginStatus ParseLocalConfig(const std::string& text, LocalConfig* config) {
  plugin::KeyValueConfig kv;
  plugin::PluginStatus status = plugin::KeyValueConfig::Parse(
      text,
      {"node_name", "state_dir", "cpu_milli", "memory_mib", "poll_interval_ms",
       "cuda_runtime_library", "cuda_driver_library"},
      &kv);
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  if (status.ok()) status = kv.String("node_name", &config->node_name);
  if (status.ok()) status = kv.String("state_dir", &config->state_dir);
  if (status.ok()) status = kv.Integer("cpu_milli", int64_t{1}, kUnbounded, &config->cpu_milli);
  if (status.ok()) status = kv.Integer("memory_mib", int64_t{1}, kUnbounded, &config->memory_mib);
  if (status.ok()) {
    status = kv.Integer("poll_interval_ms", int64_t{1}, kUnbounded, &config->poll_interval_ms);
  }
  if (status.ok()) {
    status = kv.String("cuda_runtime_library", &config->cuda_runtime_library, true);
  }
  if (status.ok()) status = kv.String("cuda_driver_library", &config->cuda_driver_library, true);
  return status;
}

plugin::PluginStatus ResolveMachineDefaults(LocalConfig* config) {
  if (config->node_name.empty()) {
    char name[HOST_NAME_MAX + 1] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
      return plugin::PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                         "node_name: not set and the host name is unknown; set it");
    }
    config->node_name = name;
  }
  if (config->cpu_milli == 0) {
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus <= 0) {
      return plugin::PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                         "cpu_milli: not set and the CPU count is unknown; set it");
    }
    config->cpu_milli = static_cast<int64_t>(cpus) * 1000;
  }
  if (config->memory_mib == 0) {
    std::ifstream meminfo("/proc/meminfo");
    std::string line;
    while (std::getline(meminfo, line)) {
      long long kib = 0;
      if (std::sscanf(line.c_str(), "MemTotal: %lld kB", &kib) == 1) {
        config->memory_mib = kib / 1024;
        break;
      }
    }
    if (config->memory_mib <= 0) {
      return plugin::PluginStatus::Error(
          TESSERA_INVALID_ARGUMENT, "memory_mib: not set and /proc/meminfo unreadable; set it");
    }
  }
  return plugin::PluginStatus::Ok();
}

}  // namespace tessera::local
