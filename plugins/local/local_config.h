// The local backend's configuration: a few "key = value" lines.
//
//   # comments and blank lines are ignored; spaces around keys and values are trimmed.
//   node_name = gpu-box-1               # default: the host name
//   state_dir = /var/lib/tessera/local  # default: ./var/local-plugin (task records and logs/)
//   cpu_milli = 32000                   # default: online CPUs x 1000
//   memory_mib = 128000                 # default: MemTotal of /proc/meminfo
//   poll_interval_ms = 100              # how often running tasks are checked; default 100
//   task_logs = per_task                # per_task (default), shared or none; see TaskLogs
//   cuda_runtime_library = /opt/cuda/lib64/libcudart.so.12  # default: the usual sonames
//   cuda_driver_library = /usr/lib/x86_64-linux-gnu/libcuda.so.1  # default: libcuda.so.1
//   nvml_library = libnvidia-ml.so.1    # default; "none" = find GPUs through CUDA only
//   mig_managed = all                   # MIG GPUs the scheduler may re-partition; default none
//   mig_enable = 0,1                    # GPUs to turn MIG mode on at start; default none
//   time_slice_gpus = 2-3               # GPUs shared by time slices; default none
//   time_slice_replicas = 4             # slices per time-sliced GPU; default 4
//   mps_gpus = 4-7                      # GPUs serving CUDA MPS shares; default none
//   mps_control = /usr/bin/nvidia-cuda-mps-control  # default: found on PATH
//   mps_pipe_dir = /run/tessera-mps     # default: <state_dir>/mps/pipe (keep it short)
//   mps_log_dir = /var/log/tessera-mps  # default: <state_dir>/mps/log
//   vgpu_gpus = 0-3                     # GPUs serving NVIDIA vGPUs; default none
//   vgpu_sysfs_root = /                 # where /sys is; default /
//
// GPU lists are "none", "all", or indices and ranges ("0,2-3"), as NVML numbers the GPUs.
// A plain line format rather than protobuf JSON keeps the plugin free of a second schema for
// a dozen settings; the SDK's KeyValueConfig parses it. Unknown or repeated keys and malformed
// values are INVALID_ARGUMENT naming the key and the line.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "tessera/plugin/plugin.h"
#include "tessera/v1/node.pb.h"

namespace tessera::local {

// Where tasks' stdout and stderr go. A file per task is a new inode per task, which a storm of
// short tasks pays for on a disk filesystem (task_journal.h); shared and none create none.
enum class TaskLogs {
  kPerTask,  // <state_dir>/logs/<job>-<attempt>-<task>.log, one per task, kept.
  kShared,   // <state_dir>/logs/tasks.log, appended to by every task (lines interleave).
  kNone,     // /dev/null.
};

// A set of GPUs named by index in the configuration.
struct GpuSet {
  bool all = false;
  std::set<int> indices;
  bool Contains(int index) const { return all || indices.count(index) > 0; }
  bool empty() const { return !all && indices.empty(); }
};

struct LocalConfig {
  std::string node_name;  // empty = gethostname().
  std::string state_dir = "./var/local-plugin";
  int64_t cpu_milli = 0;             // 0 = from the machine.
  int64_t memory_mib = 0;            // 0 = from the machine.
  int64_t poll_interval_ms = 100;    // lower = faster exit reports, more wake-ups.
  std::string cuda_runtime_library;  // empty = try libcudart.so, .so.13, .so.12, .so.11.0.
  std::string cuda_driver_library;   // empty = libcuda.so.1 (only for GPU names and memory).
  // The default, a file per task, is the easiest to read, and an inode per task.
  TaskLogs task_logs = TaskLogs::kPerTask;
  std::string nvml_library = "libnvidia-ml.so.1";  // "none" = do not use NVML.
  GpuSet mig_managed;      // MIG layouts the scheduler may change (GpuDevice.mig_managed).
  GpuSet mig_enable;       // MIG mode turned on at start where it is off (may need a reset).
  GpuSet time_slice_gpus;  // reported as GPU_SHARING_TIME_SLICE.
  int64_t time_slice_replicas = 4;
  GpuSet mps_gpus;  // reported as GPU_SHARING_MPS, each with its control daemon.
  std::string mps_control = "nvidia-cuda-mps-control";
  std::string mps_pipe_dir;  // empty = <state_dir>/mps/pipe.
  std::string mps_log_dir;   // empty = <state_dir>/mps/log.
  GpuSet vgpu_gpus;          // reported as GPU_SHARING_VGPU; devices made per task.
  std::string vgpu_sysfs_root = "/";
};

// How the configuration shares `gpu`, a GPU not in MIG mode: time slices for time_slice_gpus,
// MPS for mps_gpus (whose daemon the caller must still start), vGPU for vgpu_gpus (whose /sys
// the caller must still read), else as it is.
void ShareAsConfigured(const LocalConfig& config, v1::GpuDevice* gpu);

// Parses `text` into `config` (fields not mentioned keep their defaults).
plugin::PluginStatus ParseLocalConfig(const std::string& text, LocalConfig* config);

// The file a task's stdout and stderr are appended to; `stem` is TaskStem of its TaskRef.
std::string TaskLogPath(const LocalConfig& config, const std::string& stem);

// Fills what the config left to the machine: host name, CPUs, memory.
plugin::PluginStatus ResolveMachineDefaults(LocalConfig* config);

}  // namespace tessera::local
