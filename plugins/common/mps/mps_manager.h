// MpsManager: the MPS control daemons of the GPUs that serve MPS shares on one node, one per
// GPU, and the clients (tasks) admitted to each.
//
// Per GPU: StartGpu() starts (or adopts) its daemon with a pipe and a log directory of its own,
// <pipe_root>/gpu<index> and <log_root>/gpu<index>. A task's share goes through Admit(): at most
// kMaxClientsPerGpu (48) clients per GPU, its limits checked, and back comes the environment
// the task must get on top of its own, which is where its share is enforced (mps_limits.h: the
// client variables are the only per-client mechanism, and the lower of the client's value and
// the daemon's default wins):
//   CUDA_MPS_PIPE_DIRECTORY            the GPU's pipe directory (how the client finds its daemon)
//   CUDA_MPS_LOG_DIRECTORY             the GPU's log directory
//   CUDA_VISIBLE_DEVICES               the GPU's UUID, or "0" when only its index is known: the
//                                      server renumbers the daemon's one GPU to 0, so the host's
//                                      index would name a device the client does not have
//   CUDA_MPS_ACTIVE_THREAD_PERCENTAGE  the effective thread share, 1..100
//   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT   "0=<MiB>M", when there is a limit
// Release() frees the client's place when the task ends. CheckHealth() finds daemons that died,
// restarts them and returns the clients that were on them: their MPS server went with the
// daemon, so the backend stops those tasks and reports them lost. StopAll() quits every daemon.
//
// One task is one client on one GPU: a process connects to one control daemon (one pipe
// directory), so a task that asks for MPS shares of two GPUs cannot be served by per-GPU
// daemons; Admit() takes one GPU.
//
// Not thread-safe: the backend calls it under its own mutex. CheckHealth() and StartGpu() run
// the control binary and wait for it (up to the start timeout), so call them from the monitor
// thread or Init, not from a latency-sensitive path. Destroying the manager leaves the daemons
// running (a new instance adopts them, with the tasks it adopts); StopAll() stops them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mps/mps_daemon.h"
#include "mps/mps_limits.h"
#include "tessera/plugin/plugin.h"

namespace tessera::mps {

struct MpsManagerOptions {
  // The control binary (MpsDaemonOptions::control_binary).
  std::string control_binary = kDefaultControlBinary;
  // Parents of the per-GPU pipe and log directories. Required. The pipe root should be short
  // (a local /run or /tmp path): <pipe_root>/gpu<index>/control must fit a Unix socket path.
  std::string pipe_root;
  std::string log_root;
  // Clients per GPU. Default kMaxClientsPerGpu; lower it for GPUs that take fewer.
  int max_clients_per_gpu = kMaxClientsPerGpu;
  // Every daemon's defaults: the ceiling for every client (100% and no memory limit, unless the
  // operator narrows them for the whole GPU).
  MpsLimits defaults;
  std::chrono::milliseconds start_timeout{10000};
  std::chrono::milliseconds command_timeout{5000};
  std::chrono::milliseconds stop_timeout{10000};
};

// A GPU that serves MPS shares.
struct MpsGpu {
  int index = 0;     // the backend's GPU index; the key of every other call.
  std::string uuid;  // "GPU-..."; strongly preferred (see CUDA_VISIBLE_DEVICES above).
};

// What Admit() gives a client.
struct MpsGrant {
  std::map<std::string, std::string> env;  // set in the task's environment, over its own.
  MpsLimits effective;                     // what the client gets after lower-wins.
};

// A daemon CheckHealth() found dead.
struct MpsRestart {
  int gpu = 0;
  pid_t old_pid = 0;
  std::vector<std::string> lost_clients;  // admitted to it; no longer admitted anywhere.
  plugin::PluginStatus restarted;         // Ok, or why the GPU has no daemon now.
};

class MpsManager {
 public:
  explicit MpsManager(MpsManagerOptions options);
  MpsManager(const MpsManager&) = delete;
  MpsManager& operator=(const MpsManager&) = delete;

  // Starts or adopts the daemon of `gpu`, at Init. Calling it again for a GPU whose daemon is
  // alive is Ok. Errors: INVALID_ARGUMENT (options, or a negative index); FAILED_PRECONDITION
  // for a GPU already started whose daemon is down (CheckHealth() restarts it, and hands back
  // its clients); the errors of MpsDaemon::Start() (NOT_FOUND for no control binary,
  // UNAVAILABLE, ...). A GPU whose start failed is known but has no daemon: Admit() refuses it
  // and CheckHealth() retries it.
  [[nodiscard]] plugin::PluginStatus StartGpu(const MpsGpu& gpu);

  // Admits `client` (a name unique on the node, e.g. the task's "<job>-<attempt>-<task>") to
  // `gpu` with its `limits`, and says in *grant what it gets. Admitting a client again on the
  // same GPU (a repeated or adopted launch) gives the same grant and takes no second place.
  // Errors, each naming the GPU:
  //   INVALID_ARGUMENT: limits out of range, an empty client name;
  //   NOT_FOUND: `gpu` does not serve MPS here (StartGpu was not called for it);
  //   ALREADY_EXISTS: the client is admitted to another GPU;
  //   RESOURCE_EXHAUSTED: the GPU has max_clients_per_gpu clients already (the 48-client cap);
  //   UNAVAILABLE: the GPU's daemon is not running (the reason it was last given).
  [[nodiscard]] plugin::PluginStatus Admit(const std::string& client, int gpu,
                                           const MpsLimits& limits, MpsGrant* grant);

  // Frees the place of `client` (a no-op for a client not admitted).
  void Release(const std::string& client);

  // For each GPU whose daemon is no longer running: its clients, now dropped, and the outcome of
  // starting it again. Empty when every daemon is alive. A GPU whose restart failed is tried
  // again at the next call (its clients were returned the first time).
  std::vector<MpsRestart> CheckHealth();

  // Quits every daemon. Clients are dropped. Returns the first error, having tried all.
  [[nodiscard]] plugin::PluginStatus StopAll();

  // Clients admitted to `gpu` (0 for a GPU not known).
  int ClientCount(int gpu) const;
  // The daemon of `gpu`, or null when StartGpu was never called for it.
  const MpsDaemon* Daemon(int gpu) const;

 private:
  struct Gpu {
    MpsGpu gpu;
    std::unique_ptr<MpsDaemon> daemon;
    plugin::PluginStatus health;  // the last start's outcome.
    std::map<std::string, MpsGrant> clients;
  };

  MpsDaemonOptions DaemonOptions(const MpsGpu& gpu) const;
  MpsGrant GrantFor(const Gpu& gpu, const MpsLimits& limits) const;

  MpsManagerOptions options_;
  std::map<int, Gpu> gpus_;
  std::map<std::string, int> client_gpu_;
};

}  // namespace tessera::mps
