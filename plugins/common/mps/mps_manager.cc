#include "mps/mps_manager.h"

namespace tessera::mps {

using plugin::PluginStatus;

namespace {

std::string GpuName(int index) { return "GPU " + std::to_string(index); }

}  // namespace

MpsManager::MpsManager(MpsManagerOptions options) : options_(std::move(options)) {}

MpsDaemonOptions MpsManager::DaemonOptions(const MpsGpu& gpu) const {
  MpsDaemonOptions daemon;
  daemon.control_binary = options_.control_binary;
  daemon.device = gpu.uuid.empty() ? std::to_string(gpu.index) : gpu.uuid;
  daemon.pipe_dir = options_.pipe_root + "/gpu" + std::to_string(gpu.index);
  daemon.log_dir = options_.log_root + "/gpu" + std::to_string(gpu.index);
  daemon.defaults = options_.defaults;
  daemon.adopt_running = true;
  daemon.start_timeout = options_.start_timeout;
  daemon.command_timeout = options_.command_timeout;
  daemon.stop_timeout = options_.stop_timeout;
  return daemon;
}

PluginStatus MpsManager::StartGpu(const MpsGpu& gpu) {
  if (options_.pipe_root.empty() || options_.log_root.empty()) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                               "MPS: pipe_root and log_root are required");
  }
  if (options_.max_clients_per_gpu < 1) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                               "MPS: max_clients_per_gpu must be 1 or more");
  }
  if (gpu.index < 0) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "MPS: GPU index must be 0 or more, got " +
                                                             std::to_string(gpu.index));
  }
  Gpu& entry = gpus_[gpu.index];
  if (entry.daemon && entry.daemon->Alive()) return PluginStatus::Ok();
  if (entry.daemon) {
    // Restarting here would drop its clients without handing them back.
    return PluginStatus::Error(TESSERA_FAILED_PRECONDITION,
                               "MPS on " + GpuName(gpu.index) +
                                   ": its daemon is down; CheckHealth() restarts it and hands back "
                                   "its clients");
  }
  entry.gpu = gpu;
  entry.daemon = std::make_unique<MpsDaemon>(DaemonOptions(gpu));
  entry.health = entry.daemon->Start();
  if (!entry.health.ok()) {
    entry.health.message = "MPS on " + GpuName(gpu.index) + ": " + entry.health.message;
  }
  return entry.health;
}

MpsGrant MpsManager::GrantFor(const Gpu& gpu, const MpsLimits& limits) const {
  MpsGrant grant;
  grant.effective = EffectiveLimits(limits, options_.defaults);
  const MpsDaemonOptions& daemon = gpu.daemon->options();
  grant.env["CUDA_MPS_PIPE_DIRECTORY"] = daemon.pipe_dir;
  grant.env["CUDA_MPS_LOG_DIRECTORY"] = daemon.log_dir;
  grant.env["CUDA_VISIBLE_DEVICES"] = gpu.gpu.uuid.empty() ? "0" : gpu.gpu.uuid;
  grant.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] =
      std::to_string(grant.effective.active_thread_pct);
  if (grant.effective.pinned_memory_mib > 0) {
    // Ordinal 0: the only device the client sees (whichever way CUDA_VISIBLE_DEVICES names it).
    grant.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] =
        "0=" + PinnedMemoryValue(grant.effective.pinned_memory_mib);
  }
  return grant;
}

PluginStatus MpsManager::Admit(const std::string& client, int gpu, const MpsLimits& limits,
                               MpsGrant* grant) {
  if (client.empty()) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "MPS: a client needs a name");
  }
  PluginStatus status = CheckLimits(limits, "mps");
  if (!status.ok()) return status;
  auto it = gpus_.find(gpu);
  if (it == gpus_.end()) {
    return PluginStatus::Error(TESSERA_NOT_FOUND,
                               GpuName(gpu) + " does not serve MPS shares on this node");
  }
  Gpu& entry = it->second;
  auto known = client_gpu_.find(client);
  if (known != client_gpu_.end() && known->second != gpu) {
    return PluginStatus::Error(TESSERA_ALREADY_EXISTS, "MPS client " + client + " is already on " +
                                                           GpuName(known->second) + ", not " +
                                                           GpuName(gpu));
  }
  if (!entry.daemon->Alive()) {
    return PluginStatus::Error(
        TESSERA_UNAVAILABLE,
        "MPS on " + GpuName(gpu) + ": no control daemon running" +
            (entry.health.ok() ? " (it died; the next health check restarts it)"
                               : " (" + entry.health.message + ")"));
  }
  if (known == client_gpu_.end() &&
      static_cast<int>(entry.clients.size()) >= options_.max_clients_per_gpu) {
    return PluginStatus::Error(TESSERA_RESOURCE_EXHAUSTED,
                               GpuName(gpu) + " has " + std::to_string(entry.clients.size()) +
                                   " MPS clients, the most MPS serves on one GPU (" +
                                   std::to_string(options_.max_clients_per_gpu) +
                                   "); retry when one ends");
  }
  *grant = GrantFor(entry, limits);
  entry.clients[client] = *grant;
  client_gpu_[client] = gpu;
  return PluginStatus::Ok();
}

void MpsManager::Release(const std::string& client) {
  auto known = client_gpu_.find(client);
  if (known == client_gpu_.end()) return;
  auto it = gpus_.find(known->second);
  if (it != gpus_.end()) it->second.clients.erase(client);
  client_gpu_.erase(known);
}

std::vector<MpsRestart> MpsManager::CheckHealth() {
  std::vector<MpsRestart> restarts;
  for (auto& [index, entry] : gpus_) {
    if (entry.daemon->Alive()) continue;
    MpsRestart restart;
    restart.gpu = index;
    restart.old_pid = entry.daemon->pid();
    for (const auto& [client, grant] : entry.clients) {
      restart.lost_clients.push_back(client);
      client_gpu_.erase(client);
    }
    entry.clients.clear();
    entry.daemon = std::make_unique<MpsDaemon>(DaemonOptions(entry.gpu));
    entry.health = entry.daemon->Start();
    if (!entry.health.ok()) {
      entry.health.message = "MPS on " + GpuName(index) + ": " + entry.health.message;
    }
    restart.restarted = entry.health;
    restarts.push_back(std::move(restart));
  }
  return restarts;
}

PluginStatus MpsManager::StopAll() {
  PluginStatus first;
  for (auto& [index, entry] : gpus_) {
    for (const auto& [client, grant] : entry.clients) client_gpu_.erase(client);
    entry.clients.clear();
    PluginStatus stopped = entry.daemon->Stop();
    if (!stopped.ok() && first.ok()) {
      first = stopped;
      first.message = "MPS on " + GpuName(index) + ": " + first.message;
    }
  }
  return first;
}

int MpsManager::ClientCount(int gpu) const {
  auto it = gpus_.find(gpu);
  return it == gpus_.end() ? 0 : static_cast<int>(it->second.clients.size());
}

const MpsDaemon* MpsManager::Daemon(int gpu) const {
  auto it = gpus_.find(gpu);
  return it == gpus_.end() ? nullptr : it->second.daemon.get();
}

}  // namespace tessera::mps
