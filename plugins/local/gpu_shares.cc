#include "gpu_shares.h"

#include <algorithm>
#include <cstdio>

#include "vgpu/device_uuid.h"

namespace tessera::local {
namespace {

using plugin::PluginStatus;

// A launch waits at most this long for the MPS manager (a daemon being restarted holds it).
constexpr std::chrono::milliseconds kMpsWait{500};

}  // namespace

GpuShares::GpuShares(const LocalConfig& config, std::shared_ptr<vgpu::Sysfs> sysfs)
    : config_(config), sysfs_(std::move(sysfs)) {
  if (sysfs_ == nullptr) sysfs_ = std::make_shared<vgpu::RootedSysfs>(config_.vgpu_sysfs_root);
}

std::string GpuShares::Start(v1::GpuDevice* gpu, const std::string& pci_bus_id) {
  if (gpu->sharing() == v1::GPU_SHARING_MPS) {
    std::lock_guard lock(mps_mutex_);
    if (mps_ == nullptr) {
      mps::MpsManagerOptions options;
      options.control_binary = config_.mps_control;
      options.pipe_root =
          config_.mps_pipe_dir.empty() ? config_.state_dir + "/mps/pipe" : config_.mps_pipe_dir;
      options.log_root =
          config_.mps_log_dir.empty() ? config_.state_dir + "/mps/log" : config_.mps_log_dir;
      mps_ = std::make_unique<mps::MpsManager>(options);
    }
    const PluginStatus started = mps_->StartGpu({gpu->index(), gpu->uuid()});
    return started.ok() ? "" : "its MPS control daemon did not start: " + started.message;
  }
  if (gpu->sharing() == v1::GPU_SHARING_VGPU) {
    if (pci_bus_id.empty()) return "vGPU needs NVML to find the GPU's PCI address";
    std::lock_guard lock(vgpu_mutex_);
    if (vgpu_ == nullptr) vgpu_ = std::make_unique<vgpu::VgpuManager>(sysfs_.get());
    const PluginStatus added = vgpu_->AddGpu({gpu->index(), pci_bus_id, gpu->model()});
    if (!added.ok()) return added.message;
    gpu->set_vgpu_type(vgpu_->TypeInUse(gpu->index()));
  }
  return "";
}

PluginStatus GpuShares::Grant(const v1::LaunchTask& request, const std::string& node,
                              std::map<std::string, std::string>* env, std::string* share) {
  *share = "-";
  switch (request.partition().sharing()) {
    case v1::GPU_SHARING_MPS:
      return GrantMps(request, node, env, share);
    case v1::GPU_SHARING_VGPU:
      return GrantVgpu(request, node, env, share);
    default:
      return PluginStatus::Ok();
  }
}

// An MPS client's share: its active-thread percentage and pinned memory limit as the host says
// (LaunchTask.mps; a host of ABI 1.0 leaves them to the share's size). On a GPU with a daemon of
// ours the task is admitted as one of its clients and gets the daemon's pipe directory and the
// device as the daemon numbers it (mps/mps_manager.h).
PluginStatus GpuShares::GrantMps(const v1::LaunchTask& request, const std::string& node,
                                 std::map<std::string, std::string>* env, std::string* share) {
  mps::MpsLimits limits;
  limits.active_thread_pct =
      request.has_mps() ? request.mps().active_thread_pct() : std::max(1, request.gpu_milli() / 10);
  limits.pinned_memory_mib =
      request.has_mps() ? request.mps().pinned_memory_mib() : request.gpu_memory_mib();
  const int gpu = request.gpus_size() == 1 ? request.gpus(0) : -1;
  std::unique_lock lock(mps_mutex_, kMpsWait);
  if (!lock.owns_lock() && config_.mps_gpus.Contains(gpu)) {
    return PluginStatus::Error(TESSERA_UNAVAILABLE, "partition: an MPS control daemon of node '" +
                                                        node + "' is being restarted; try again");
  }
  const bool ours = lock.owns_lock() && mps_ != nullptr && gpu >= 0 && mps_->Daemon(gpu);
  if (!ours) {
    (*env)["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(limits.active_thread_pct);
    if (limits.pinned_memory_mib > 0) {
      std::string text;
      for (int i = 0; i < request.gpus_size(); ++i) {
        text += (i ? "," : "") + std::to_string(i) + "=" +
                mps::PinnedMemoryValue(limits.pinned_memory_mib);
      }
      (*env)["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = text;
    }
    return PluginStatus::Ok();
  }
  mps::MpsGrant grant;
  PluginStatus status = mps_->Admit(TaskStem(request.ref()), gpu, limits, &grant);
  if (!status.ok()) return status;
  *env = grant.env;
  *share = "mps:" + std::to_string(gpu) + ":" + std::to_string(limits.active_thread_pct) + ":" +
           std::to_string(limits.pinned_memory_mib);
  return PluginStatus::Ok();
}

// A vGPU task's device: made now for the placed type, one per task, named in its environment
// (vgpu/vgpu_manager.h: TESSERA_VGPU_DEVICE, the mdev UUID or VF address, and TESSERA_VGPU_SYSFS).
PluginStatus GpuShares::GrantVgpu(const v1::LaunchTask& request, const std::string& node,
                                  std::map<std::string, std::string>* env, std::string* share) {
  const int gpu = request.gpus_size() == 1 ? request.gpus(0) : -1;
  std::lock_guard lock(vgpu_mutex_);
  if (vgpu_ == nullptr || gpu < 0 || vgpu_->State(gpu) == nullptr) {
    return PluginStatus::Error(
        TESSERA_INVALID_ARGUMENT,
        "partition: GPU " + std::to_string(gpu) + " of node '" + node + "' serves no vGPUs here");
  }
  vgpu::VgpuDevice device;
  PluginStatus status =
      vgpu_->Create(gpu, request.partition().vgpu_type(), TaskStem(request.ref()), &device);
  if (!status.ok()) {
    // For now when the GPU is full, busy, or holds another type until its devices go; for good
    // otherwise (no such type here, a kernel that refuses the write).
    const bool for_now = status.code == TESSERA_RESOURCE_EXHAUSTED ||
                         status.code == TESSERA_UNAVAILABLE ||
                         status.code == TESSERA_FAILED_PRECONDITION;
    return PluginStatus::Error(for_now ? TESSERA_UNAVAILABLE : TESSERA_INVALID_ARGUMENT,
                               "partition: " + status.message);
  }
  *env = vgpu::VgpuTaskEnv(device);
  *share = "vgpu:" + std::to_string(gpu) + ":" + device.id;
  return PluginStatus::Ok();
}

bool GpuShares::TryRelease(const v1::TaskRef& ref, std::string* why) {
  const std::string owner = TaskStem(ref);
  {
    std::unique_lock lock(mps_mutex_, std::defer_lock);
    if (!lock.try_lock_for(kMpsWait)) {
      *why = "the MPS manager is busy restarting a daemon";
      return false;
    }
    if (mps_ != nullptr) mps_->Release(owner);
  }
  std::lock_guard lock(vgpu_mutex_);
  if (vgpu_ == nullptr) return true;
  const PluginStatus removed = vgpu_->Remove(owner);
  if (removed.ok()) return true;
  *why = "its vGPU device was not removed: " + removed.message;
  return false;
}

void GpuShares::Release(const v1::TaskRef& ref) {
  std::string why;
  if (TryRelease(ref, &why)) return;
  std::lock_guard lock(waiting_mutex_);
  waiting_.push_back(ref);
}

void GpuShares::Tick(std::vector<std::string>* problems) {
  std::vector<v1::TaskRef> waiting;
  {
    std::lock_guard lock(waiting_mutex_);
    waiting.swap(waiting_);
  }
  for (const v1::TaskRef& ref : waiting) {
    std::string why;
    if (TryRelease(ref, &why)) continue;
    problems->push_back("local: task " + TaskStem(ref) + ": " + why + "; trying again");
    std::lock_guard lock(waiting_mutex_);
    waiting_.push_back(ref);
  }
}

void GpuShares::TakeBack(const TaskRecord& record, std::vector<std::string>* problems) {
  const std::string& share = record.share;
  const std::string owner = TaskStem(record.ref);
  int gpu = -1, thread_pct = 0;
  long long memory_mib = 0;
  char device[128] = {};
  PluginStatus status = PluginStatus::Ok();
  if (std::sscanf(share.c_str(), "mps:%d:%d:%lld", &gpu, &thread_pct, &memory_mib) == 3) {
    std::lock_guard lock(mps_mutex_);
    if (mps_ == nullptr) return;
    mps::MpsGrant grant;
    status = mps_->Admit(owner, gpu, {thread_pct, memory_mib}, &grant);
  } else if (std::sscanf(share.c_str(), "vgpu:%d:%127s", &gpu, device) == 2) {
    std::lock_guard lock(vgpu_mutex_);
    if (vgpu_ == nullptr) return;
    vgpu::VgpuDevice claimed;
    status = vgpu_->Claim(owner, gpu, device, &claimed);
  }
  if (!status.ok()) {
    problems->push_back("local: task " + owner + " keeps running without its " + share + ": " +
                        status.message);
  }
}

std::vector<GpuShares::LostClients> GpuShares::CheckDaemons() {
  std::vector<mps::MpsRestart> restarts;
  {
    std::lock_guard lock(mps_mutex_);
    if (mps_ == nullptr) return {};
    restarts = mps_->CheckHealth();
  }
  std::vector<LostClients> lost;
  for (mps::MpsRestart& restart : restarts) {
    LostClients& out = lost.emplace_back();
    out.gpu = restart.gpu;
    out.clients = std::move(restart.lost_clients);
    out.what =
        "the MPS control daemon of GPU " + std::to_string(restart.gpu) + " (pid " +
        std::to_string(restart.old_pid) + ") died; " +
        (restart.restarted.ok() ? "restarted" : "not restarted: " + restart.restarted.message);
  }
  return lost;
}

}  // namespace tessera::local
