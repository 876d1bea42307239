#include "local_config.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace tessera::local {
namespace {

plugin::PluginStatus Invalid(std::string message) {
  return plugin::PluginStatus::Error(TESSERA_INVALID_ARGUMENT, std::move(message));
}

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

plugin::PluginStatus ParsePositive(const std::string& key, const std::string& value, int64_t* out) {
  int64_t parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error != std::errc() || end != value.data() + value.size() || parsed <= 0) {
    return Invalid(key + ": must be a positive integer, got '" + value + "'");
  }
  *out = parsed;
  return plugin::PluginStatus::Ok();
}

}  // namespace

plugin::PluginStatus ParseLocalConfig(const std::string& text, LocalConfig* config) {
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = Trim(line);
    if (line.empty()) continue;
    const size_t equals = line.find('=');
    if (equals == std::string::npos) {
      return Invalid("config line " + std::to_string(number) + ": expected key = value, got '" +
                     line + "'");
    }
    const std::string key = Trim(line.substr(0, equals));
    const std::string value = Trim(line.substr(equals + 1));
    plugin::PluginStatus status;
    if (key == "node_name") {
      if (value.empty()) return Invalid("node_name: must not be empty");
      config->node_name = value;
    } else if (key == "state_dir") {
      if (value.empty()) return Invalid("state_dir: must not be empty");
      config->state_dir = value;
    } else if (key == "cpu_milli") {
      status = ParsePositive(key, value, &config->cpu_milli);
    } else if (key == "memory_mib") {
      status = ParsePositive(key, value, &config->memory_mib);
    } else if (key == "poll_interval_ms") {
      status = ParsePositive(key, value, &config->poll_interval_ms);
    } else if (key == "cuda_runtime_library") {
      config->cuda_runtime_library = value;
    } else if (key == "cuda_driver_library") {
      config->cuda_driver_library = value;
    } else {
      return Invalid("config line " + std::to_string(number) + ": unknown key '" + key +
                     "' (known: node_name, state_dir, cpu_milli, memory_mib, poll_interval_ms, "
                     "cuda_runtime_library, cuda_driver_library)");
    }
    if (!status.ok()) return status;
  }
  return plugin::PluginStatus::Ok();
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
