// GpuShares: what a task's share of a GPU needs on this node beyond naming the GPU in
// CUDA_VISIBLE_DEVICES: a client place with the GPU's CUDA MPS control daemon (mps_gpus;
// plugins/common/mps) or a vGPU device of the type the scheduler placed (vgpu_gpus;
// plugins/common/vgpu).
//
//   Start      at Init, per GPU the configuration shares so: its MPS daemon started (or adopted),
//              or its vGPU offer read from /sys; a GPU that cannot is offered whole by the caller;
//   Grant      at a launch: the environment the share needs (the daemon's pipe directory and
//              the client's limits; the vGPU device for the VM launcher the task is) and a token
//              naming what the task now holds, for its record (TaskRecord::share);
//   Release    when the task has ended, or its launch failed after Grant;
//   TakeBack   at adoption after a restart, from the token in the task's record;
//   CheckDaemons, Tick   from the monitor: dead MPS daemons restarted (their clients come back
//              as lost tasks), releases and vGPU removals that had to wait tried again.
//
// An MPS share on a GPU without a daemon of ours gets the limits alone (a daemon run outside
// Tessera). Thread-safe: the MPS manager is behind a timed lock, so that a launch waits at most
// half a second for a daemon being restarted (and is then refused for now) and a healthy check
// (microseconds) never refuses one; the vGPU manager is behind a lock of its own.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "local_config.h"
#include "mps/mps_manager.h"
#include "task_process.h"
#include "tessera/plugin/plugin.h"
#include "tessera/v1/node.pb.h"
#include "vgpu/sysfs.h"
#include "vgpu/vgpu_manager.h"

namespace tessera::local {

class GpuShares {
 public:
  // `sysfs` null: the files under config.vgpu_sysfs_root.
  GpuShares(const LocalConfig& config, std::shared_ptr<vgpu::Sysfs> sysfs);

  // Prepares `gpu`, shared as GPU_SHARING_MPS or GPU_SHARING_VGPU; `pci_bus_id` is NVML's for it
  // (vGPU needs it; empty when unknown). Returns why it cannot serve that form, or empty; for a
  // vGPU GPU sets its vgpu_type to the type of the devices it holds. Init only.
  std::string Start(v1::GpuDevice* gpu, const std::string& pci_bus_id);

  // The environment `request`'s share needs, into *env, and the token of what the task now holds
  // into *share ("-" when nothing). Errors, each for this task alone: INVALID_ARGUMENT when it
  // can never be served here, RESOURCE_EXHAUSTED or UNAVAILABLE when it may be later (the 48
  // MPS clients, a daemon restarting, no vGPU instance left, another vGPU type in use).
  plugin::PluginStatus Grant(const v1::LaunchTask& request, const std::string& node,
                             std::map<std::string, std::string>* env, std::string* share);

  // Gives back what task `ref` holds. What cannot be given back now is tried again by Tick.
  void Release(const v1::TaskRef& ref);

  // Takes back, for a task adopted after a restart, what its record says it holds. Problems go
  // to *problems (the task keeps running without it).
  void TakeBack(const TaskRecord& record, std::vector<std::string>* problems);

  // A dead MPS control daemon and the clients it had: their tasks are lost.
  struct LostClients {
    int gpu = 0;
    std::vector<std::string> clients;  // task stems (TaskStem).
    std::string what;                  // for the log: the daemon, and whether it came back.
  };
  // Restarts the MPS daemons that died; may wait for the control binary (seconds).
  std::vector<LostClients> CheckDaemons();

  // Tries again the releases and vGPU removals that had to wait; problems go to *problems.
  void Tick(std::vector<std::string>* problems);

 private:
  plugin::PluginStatus GrantMps(const v1::LaunchTask& request, const std::string& node,
                                std::map<std::string, std::string>* env, std::string* share);
  plugin::PluginStatus GrantVgpu(const v1::LaunchTask& request, const std::string& node,
                                 std::map<std::string, std::string>* env, std::string* share);
  // Gives back what `ref` holds; false when something must wait (*why says what).
  bool TryRelease(const v1::TaskRef& ref, std::string* why);

  const LocalConfig config_;
  std::shared_ptr<vgpu::Sysfs> sysfs_;

  std::timed_mutex mps_mutex_;               // guards mps_.
  std::unique_ptr<mps::MpsManager> mps_;     // null until a GPU serves MPS.
  std::mutex vgpu_mutex_;                    // guards vgpu_.
  std::unique_ptr<vgpu::VgpuManager> vgpu_;  // null until a GPU serves vGPUs.
  std::mutex waiting_mutex_;                 // guards waiting_.
  std::vector<v1::TaskRef> waiting_;         // releases that could not be done when asked.
};

}  // namespace tessera::local
