#include "local_config.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <utility>

#include "tessera/plugin/key_value_config.h"

namespace tessera::local {
namespace {

// "none", "all", or a list of indices and ranges: "0,2-3".
plugin::PluginStatus ParseGpuSet(const plugin::KeyValueConfig& kv, const std::string& key,
                                 GpuSet* out) {
  std::string text;
  plugin::PluginStatus status = kv.String(key, &text);
  if (!status.ok() || !kv.Has(key)) return status;
  *out = GpuSet{};
  if (text == "none") return status;
  if (text == "all") {
    out->all = true;
    return status;
  }
  auto bad = [&](const std::string& why) {
    return plugin::PluginStatus::Error(
        TESSERA_INVALID_ARGUMENT,
        key + ": " + why + ", got '" + text + "' (expected none, all, or GPU indices like 0,2-3)");
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    int first = 0, last = 0;
    char extra = 0;
    if (std::sscanf(item.c_str(), "%d-%d%c", &first, &last, &extra) == 2) {
    } else if (std::sscanf(item.c_str(), "%d%c", &first, &extra) == 1) {
      last = first;
    } else {
      return bad("'" + item + "' is not a GPU index or range");
    }
    if (first < 0 || last < first || last > 1023) return bad("bad range '" + item + "'");
    for (int i = first; i <= last; ++i) out->indices.insert(i);
    pos = comma + 1;
  }
  return status;
}

}  // namespace

plugin::PluginStatus ParseLocalConfig(const std::string& text, LocalConfig* config) {
  plugin::KeyValueConfig kv;
  plugin::PluginStatus status = plugin::KeyValueConfig::Parse(
      text,
      {"node_name", "state_dir", "cpu_milli", "memory_mib", "poll_interval_ms", "task_logs",
       "cuda_runtime_library", "cuda_driver_library", "nvml_library", "mig_managed", "mig_enable",
       "time_slice_gpus", "time_slice_replicas", "mps_gpus", "mps_control", "mps_pipe_dir",
       "mps_log_dir", "vgpu_gpus", "vgpu_sysfs_root"},
      &kv);
  constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
  if (status.ok()) status = kv.String("node_name", &config->node_name);
  if (status.ok()) status = kv.String("state_dir", &config->state_dir);
  if (status.ok()) status = kv.Integer("cpu_milli", int64_t{1}, kUnbounded, &config->cpu_milli);
  if (status.ok()) status = kv.Integer("memory_mib", int64_t{1}, kUnbounded, &config->memory_mib);
  if (status.ok()) {
    status = kv.Integer("poll_interval_ms", int64_t{1}, kUnbounded, &config->poll_interval_ms);
  }
  std::string task_logs;
  if (status.ok()) status = kv.String("task_logs", &task_logs);
  if (status.ok() && !task_logs.empty()) {
    if (task_logs == "per_task") {
      config->task_logs = TaskLogs::kPerTask;
    } else if (task_logs == "shared") {
      config->task_logs = TaskLogs::kShared;
    } else if (task_logs == "none") {
      config->task_logs = TaskLogs::kNone;
    } else {
      status = plugin::PluginStatus::Error(
          TESSERA_INVALID_ARGUMENT,
          "task_logs: must be per_task, shared or none, got '" + task_logs + "'");
    }
  }
  if (status.ok()) {
    status = kv.String("cuda_runtime_library", &config->cuda_runtime_library, true);
  }
  if (status.ok()) status = kv.String("cuda_driver_library", &config->cuda_driver_library, true);
  if (status.ok()) status = kv.String("nvml_library", &config->nvml_library);
  if (status.ok()) status = ParseGpuSet(kv, "mig_managed", &config->mig_managed);
  if (status.ok()) status = ParseGpuSet(kv, "mig_enable", &config->mig_enable);
  if (status.ok()) status = ParseGpuSet(kv, "time_slice_gpus", &config->time_slice_gpus);
  if (status.ok()) {
    // The scheduler's bounds for GpuDevice.replicas.
    status =
        kv.Integer("time_slice_replicas", int64_t{2}, int64_t{1000}, &config->time_slice_replicas);
  }
  if (status.ok()) status = ParseGpuSet(kv, "mps_gpus", &config->mps_gpus);
  if (status.ok()) status = kv.String("mps_control", &config->mps_control);
  if (status.ok()) status = kv.String("mps_pipe_dir", &config->mps_pipe_dir);
  if (status.ok()) status = kv.String("mps_log_dir", &config->mps_log_dir);
  if (status.ok()) status = ParseGpuSet(kv, "vgpu_gpus", &config->vgpu_gpus);
  if (status.ok()) status = kv.String("vgpu_sysfs_root", &config->vgpu_sysfs_root);
  // A GPU is shared one way: no GPU in two of the lists.
  const std::pair<const char*, const GpuSet*> forms[] = {
      {"time_slice_gpus", &config->time_slice_gpus},
      {"mps_gpus", &config->mps_gpus},
      {"vgpu_gpus", &config->vgpu_gpus}};
  for (size_t a = 0; status.ok() && a < std::size(forms); ++a) {
    for (size_t b = a + 1; status.ok() && b < std::size(forms); ++b) {
      const GpuSet& x = *forms[a].second;
      const GpuSet& y = *forms[b].second;
      std::string both;
      if ((x.all && !y.empty()) || (y.all && !x.empty())) both = "all GPUs";
      for (int index : x.indices) {
        if (both.empty() && y.Contains(index)) both = "GPU " + std::to_string(index);
      }
      if (!both.empty()) {
        status = plugin::PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                             std::string(forms[b].first) + ": " + both + " in " +
                                                 forms[a].first + " too; a GPU is shared one way");
      }
    }
  }
  return status;
}

std::string TaskLogPath(const LocalConfig& config, const std::string& stem) {
  switch (config.task_logs) {
    case TaskLogs::kPerTask:
      return config.state_dir + "/logs/" + stem + ".log";
    case TaskLogs::kShared:
      return config.state_dir + "/logs/tasks.log";
    case TaskLogs::kNone:
      break;
  }
  return "/dev/null";
}

void ShareAsConfigured(const LocalConfig& config, v1::GpuDevice* gpu) {
  if (gpu->sharing() == v1::GPU_SHARING_MIG) return;
  if (config.time_slice_gpus.Contains(gpu->index())) {
    gpu->set_sharing(v1::GPU_SHARING_TIME_SLICE);
    gpu->set_replicas(static_cast<int32_t>(config.time_slice_replicas));
  } else if (config.mps_gpus.Contains(gpu->index())) {
    gpu->set_sharing(v1::GPU_SHARING_MPS);
  } else if (config.vgpu_gpus.Contains(gpu->index())) {
    gpu->set_sharing(v1::GPU_SHARING_VGPU);
  }
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
