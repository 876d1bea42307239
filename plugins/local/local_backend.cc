// The local backend: runs tasks as child processes of the host, on this one machine, with its
// GPUs as NVML reports them (nvidia_gpus.h), or the CUDA Runtime where there is no NVML, or none
// (the node is then CPU-only). With NVML it is also the partitioner of its own GPUs: it carries
// out the scheduler's MIG layouts on the GPUs the configuration lets it manage, and reports
// telemetry (XID errors, ECC, temperature) for the scheduler's GPU health policy. GPUs the
// configuration shares otherwise are served here too: time slices, MPS with a control daemon per
// GPU, and vGPU devices made per task through /sys (gpu_shares.h; /sys is LocalSeams::sysfs, so
// that a test can give it a fake: local_backend.h).
//
// A task is LaunchTask.command started with posix_spawnp in a process group of its own, with
// the host's environment plus LaunchTask.env, TESSERA_JOB/ATTEMPT/TASK, CUDA_VISIBLE_DEVICES
// (the devices of the task: MIG-<uuid> for a MIG instance, GPU-<uuid> for GPUs found through
// NVML, indices for GPUs found through the CUDA runtime; empty for none, which hides every GPU)
// and what its GPU share needs (GpuShares::Grant). Its stdout and stderr go where task_logs says
// (a file per task by default), and a record of it (pid, process group, start time, the share it
// holds) to the journal in <state> (task_journal.h), so that after a restart of the host a new
// instance adopts it again and Reconcile lists it.
//
// A monitor thread (started by Start under a host of ABI 1.1; under one of 1.0, which has no
// on_start, by the first call after Init) checks the tasks every
// poll_interval_ms and reports through emit_event (PollEvents always answers empty):
// TASK_STARTED after a launch, TASK_EXITED with the exit status, or 128 + N for a task killed by
// signal N (143 after SIGTERM, 137 after SIGKILL). When a task's first process ends, whatever it
// left behind in its process group is killed. A task adopted after a restart is usually no longer
// our child: it cannot be waited for, so /proc is polled, and once it is gone its exit status is
// read from the file its wrapper wrote (task_process.h); -1 (unknown) when there is none, as
// after a SIGKILL. (If it is still our child, because the same process made a new instance, it
// is waited for.) Tasks that ended while no instance watched them are absent from Reconcile: the
// host treats them as lost.
//
// Stop sends SIGTERM to the task's process group and SIGKILL once grace_ms has passed (at once
// for grace 0). Launch is idempotent while the task is known. Shutdown stops the monitor thread
// and leaves the tasks running. The host clock stamps events; grace periods are real time,
// since real processes use them.
//
// The host process should not reap children it did not start (a waitpid(-1) loop, or SIGCHLD
// set to SIG_IGN): a task reaped behind the backend's back is reported with the status its
// wrapper wrote, or -1 when there is none.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "gpu_discovery.h"
#include "gpu_shares.h"
#include "local_backend.h"
#include "local_config.h"
#include "nvidia_gpus.h"
#include "task_journal.h"
#include "task_process.h"
#include "tessera/plugin/plugin.h"

extern char** environ;

namespace tessera::local {
namespace {

using plugin::PluginStatus;
using SteadyTime = std::chrono::steady_clock::time_point;

constexpr int32_t kUnknownExitCode = -1;
// How often the MPS control daemons are checked (a restart blocks the monitor while it runs).
constexpr std::chrono::seconds kMpsCheckInterval{2};

using TaskKey = std::tuple<uint64_t, int32_t, int32_t>;
TaskKey KeyOf(const v1::TaskRef& ref) { return {ref.job(), ref.attempt(), ref.task()}; }

std::string Join(const google::protobuf::RepeatedField<int32_t>& values) {
  std::string text;
  for (int i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text;
}

class LocalBackend final : public plugin::Plugin {
 public:
  LocalBackend(plugin::Host host, LocalSeams seams) : Plugin(host), seams_(std::move(seams)) {}
  ~LocalBackend() override { StopMonitor(); }

  PluginStatus Init(const std::string& text) override {
    PluginStatus status = ParseLocalConfig(text, &config_);
    if (status.ok()) status = ResolveMachineDefaults(&config_);
    if (!status.ok()) return status;
    // logs/ (with state_dir itself) only where task_logs puts logs there.
    const std::string dir =
        config_.state_dir + (config_.task_logs == TaskLogs::kNone ? "" : "/logs");
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 "state_dir: cannot create " + dir + ": " + error.message());
    }
    node_.set_name(config_.node_name);
    node_.set_cpu_milli(config_.cpu_milli);
    node_.set_memory_mib(config_.memory_mib);
    std::string note;
    std::vector<std::string> warnings;
    nvidia_ = NvidiaGpus::Open(config_, &note, &warnings);
    if (nvidia_ != nullptr) {
      for (const v1::GpuDevice& gpu : nvidia_->devices()) *node_.add_gpus() = gpu;
    } else {
      // No NVML: the CUDA runtime still finds the GPUs, without MIG or telemetry.
      std::string cuda_note;
      std::unique_ptr<CudaRuntime> cuda =
          OpenCudaRuntime(config_.cuda_runtime_library, config_.cuda_driver_library, &cuda_note);
      if (cuda != nullptr) {
        for (v1::GpuDevice& gpu : DiscoverGpus(*cuda, &cuda_note)) *node_.add_gpus() = gpu;
      }
      note += "; CUDA runtime: " + cuda_note;
    }
    StartSharing(&warnings);
    host().Log(TESSERA_LOG_INFO, "local: node '" + node_.name() + "', " +
                                     std::to_string(node_.cpu_milli()) + " milli-CPU, " +
                                     std::to_string(node_.memory_mib()) + " MiB; " + note);
    for (const std::string& warning : warnings) host().Log(TESSERA_LOG_WARN, "local: " + warning);
    return AdoptRecordedTasks();
  }

  void Shutdown() override { StopMonitor(); }

  // The host's callbacks are usable from here on: the monitor may report from its first pass.
  PluginStatus Start(const v1::StartRequest& /*request*/) override {
    std::lock_guard lock(mutex_);
    EnsureMonitor();
    return PluginStatus::Ok();
  }

  PluginStatus Inventory(v1::Inventory* out) override {
    std::lock_guard lock(mutex_);
    EnsureMonitor();
    *out->add_nodes() = node_;
    return PluginStatus::Ok();
  }

  // A launch this backend cannot run (no command, another node, a GPU it lacks, a program that
  // will not start) is rejected for that task alone, for good: LAUNCH_REJECTED with the reason,
  // and Ok. Only a failure of the backend itself (its state directory) is an error.
  PluginStatus Launch(const v1::LaunchTask& request) override {
    const int64_t now = host().NowUs();  // never call the host with mutex_ held.
    std::lock_guard lock(mutex_);
    EnsureMonitor();
    if (tasks_.count(KeyOf(request.ref()))) return PluginStatus::Ok();  // idempotent.
    PluginStatus status = StartTask(request, now);
    // Refused for this task alone: for good (a bad request), or for now (the GPU's MPS clients
    // are all taken, its daemon is restarting).
    const bool for_now =
        status.code == TESSERA_RESOURCE_EXHAUSTED || status.code == TESSERA_UNAVAILABLE;
    if (status.code != TESSERA_INVALID_ARGUMENT && status.code != TESSERA_NOT_FOUND && !for_now) {
      return status;
    }
    Report(v1::BackendEvent::LAUNCH_REJECTED, request.ref(), 0, now, status.message);
    outbox_.back().set_retryable(for_now);
    wake_.notify_all();
    return PluginStatus::Ok();
  }

  // Starts the task `request` asks for (mutex_ held).
  PluginStatus StartTask(const v1::LaunchTask& request, int64_t now) {
    if (request.command().empty()) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 "command: required for the local backend");
    }
    if (request.node() != node_.name()) {
      return PluginStatus::Error(
          TESSERA_NOT_FOUND,
          "node: this backend runs node '" + node_.name() + "', not '" + request.node() + "'");
    }
    for (int i = 0; i < request.gpus_size(); ++i) {
      if (request.gpus(i) < 0 || request.gpus(i) >= node_.gpus_size()) {
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                   "gpus[" + std::to_string(i) + "]: node '" + node_.name() +
                                       "' has no GPU " + std::to_string(request.gpus(i)));
      }
    }
    std::vector<std::string> env;
    std::string share = "-";
    PluginStatus status = TaskEnvironment(request, &env, &share);
    if (!status.ok()) return status;

    TaskRecord record;
    record.ref = request.ref();
    record.share = share;
    record.log_path = TaskLogPath(config_, TaskStem(request.ref()));
    record.started_us = now;
    status = journal_->ClaimExitSlot(&record);
    if (!status.ok()) {
      shares_->Release(request.ref());
      return status;
    }
    const std::vector<std::string> argv(request.command().begin(), request.command().end());
    status = SpawnTask(argv, env, record.log_path, journal_->ExitStatusPath(record), &record.pid);
    if (!status.ok()) {
      journal_->ReleaseExitSlot(record);
      shares_->Release(request.ref());
      return status;
    }
    record.pgid = record.pid;
    // The child is ours until we reap it, so its /proc entry is there even if it already exited.
    if (std::optional<ProcStat> stat = ReadProcStat(record.pid)) {
      record.start_ticks = stat->start_ticks;
    }
    status = journal_->Started(record);
    if (!status.ok()) {
      // The task runs; only a restart of the host would lose track of it.
      pending_logs_.push_back("local: task " + TaskStem(record.ref) +
                              " has no record; a host restart will not find it: " + status.message);
    }
    Task& task = tasks_[KeyOf(record.ref)];
    task.record = std::move(record);
    task.our_child = true;
    Report(v1::BackendEvent::TASK_STARTED, task.record.ref, 0, now,
           "pid " + std::to_string(task.record.pid));
    wake_.notify_all();
    return PluginStatus::Ok();
  }

  PluginStatus Stop(const v1::StopTask& request) override {
    std::lock_guard lock(mutex_);
    EnsureMonitor();
    auto it = tasks_.find(KeyOf(request.ref()));
    if (it == tasks_.end()) return PluginStatus::Ok();  // gone already (or never here).
    Task& task = it->second;
    if (!task.our_child && !StillTheSameProcess(task.record)) return PluginStatus::Ok();
    if (request.grace_ms() <= 0) {
      ::kill(-task.record.pgid, SIGKILL);
      return PluginStatus::Ok();
    }
    ::kill(-task.record.pgid, SIGTERM);
    const SteadyTime kill_at =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(request.grace_ms());
    if (!task.kill_at || kill_at < *task.kill_at) task.kill_at = kill_at;
    return PluginStatus::Ok();
  }

  // Partitioner of this node's GPUs (ABI 1.1): MIG layouts through NVML, on the GPUs
  // mig_managed lists. A layout that cannot be carried out is Ok with the error in the result and
  // the layout the GPU has (nvidia_gpus.h); no NVML means no GPU can be shaped.
  PluginStatus ApplyPartitionLayout(const v1::PartitionLayoutRequest& request,
                                    v1::PartitionLayoutResult* result) override {
    std::lock_guard lock(mutex_);
    EnsureMonitor();
    if (request.node() != node_.name()) {
      result->set_error("node: this backend runs node '" + node_.name() + "', not '" +
                        request.node() + "'");
      return PluginStatus::Ok();
    }
    if (nvidia_ == nullptr) {
      result->set_error("node '" + node_.name() +
                        "' has no NVML: its GPUs cannot be re-partitioned");
      return PluginStatus::Ok();
    }
    nvidia_->ApplyLayout(request, result);
    if (request.gpu() >= 0 && request.gpu() < node_.gpus_size()) {
      *node_.mutable_gpus(request.gpu()) = nvidia_->devices()[request.gpu()];
    }
    if (!result->error().empty()) {
      pending_logs_.push_back("local: GPU " + std::to_string(request.gpu()) +
                              " layout not applied: " + result->error());
    }
    return PluginStatus::Ok();
  }

  // ABI 1.0 hosts: the same, with a failure as the error of the call.
  PluginStatus ApplyMigLayout(const v1::MigLayoutRequest& request) override {
    v1::PartitionLayoutRequest layout;
    layout.set_node(request.node());
    layout.set_gpu(request.gpu());
    layout.mutable_layout()->set_sharing(v1::GPU_SHARING_MIG);
    *layout.mutable_layout()->mutable_mig_instances() = request.layout();
    layout.set_epoch(request.epoch());
    v1::PartitionLayoutResult result;
    PluginStatus status = ApplyPartitionLayout(layout, &result);
    if (status.ok() && !result.error().empty()) {
      return PluginStatus::Error(TESSERA_FAILED_PRECONDITION, result.error());
    }
    return status;
  }

  // Readings of every GPU through NVML; none without it. May overlap any other call.
  PluginStatus Telemetry(v1::TelemetryBatch* out) override {
    if (nvidia_ == nullptr) return PluginStatus::Ok();
    for (v1::GpuTelemetry& reading : nvidia_->Telemetry(config_.node_name, host().NowUs())) {
      *out->add_readings() = std::move(reading);
    }
    return PluginStatus::Ok();
  }

  PluginStatus Reconcile(v1::LiveTasks* out) override {
    std::lock_guard lock(mutex_);
    EnsureMonitor();
    for (const auto& [key, task] : tasks_) *out->add_tasks() = task.record.ref;
    return PluginStatus::Ok();
  }

  // Events go out through emit_event as they happen; nothing is left for a poll.
  PluginStatus PollEvents(v1::BackendEvents* out) override {
    std::lock_guard lock(mutex_);
    EnsureMonitor();
    return PluginStatus::Ok();
  }

 private:
  struct Task {
    TaskRecord record;
    bool our_child = false;             // started by this instance (waitable).
    std::optional<SteadyTime> kill_at;  // SIGKILL due (a stop's grace ends).
    bool lost = false;  // reported TASK_LOST (its MPS daemon died); its end is not reported.
  };

  // The host's environment, then the request's, then what the backend sets itself. *share is
  // set to the GPU share the task now holds (TaskRecord::share).
  PluginStatus TaskEnvironment(const v1::LaunchTask& request, std::vector<std::string>* env,
                               std::string* share) {
    std::map<std::string, std::string> vars;
    for (char** e = environ; e && *e; ++e) {
      const std::string entry(*e);
      const size_t equals = entry.find('=');
      if (equals != std::string::npos) vars[entry.substr(0, equals)] = entry.substr(equals + 1);
    }
    for (const auto& [name, value] : request.env()) {
      if (name.empty() || name.find('=') != std::string::npos) {
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                   "env: invalid variable name '" + name + "'");
      }
      vars[name] = value;
    }
    vars["TESSERA_JOB"] = std::to_string(request.ref().job());
    vars["TESSERA_ATTEMPT"] = std::to_string(request.ref().attempt());
    vars["TESSERA_TASK"] = std::to_string(request.ref().task());
    std::string devices;
    PluginStatus status = VisibleDevices(request, &devices);
    if (!status.ok()) return status;
    vars["CUDA_VISIBLE_DEVICES"] = devices;
    std::map<std::string, std::string> share_env;
    status = shares_->Grant(request, node_.name(), &share_env, share);
    if (!status.ok()) return status;
    for (const auto& [name, value] : share_env) vars[name] = value;
    for (const auto& [name, value] : vars) env->push_back(name + "=" + value);
    return PluginStatus::Ok();
  }

  // What CUDA_VISIBLE_DEVICES says for `request` (mutex_ held). A MIG share names its instance's
  // MIG UUID: the one the host passes (LaunchTask.mig, from the partition result), else the one
  // this node has at the share's placement. GPUs found through NVML are named by UUID, since
  // NVML's numbering (by PCI bus) and the CUDA runtime's (fastest first, unless the task sets
  // CUDA_DEVICE_ORDER=PCI_BUS_ID) can differ; GPUs found through the CUDA runtime by index, in
  // the order discovery used (the task inherits the host's CUDA_DEVICE_ORDER).
  PluginStatus VisibleDevices(const v1::LaunchTask& request, std::string* out) const {
    const v1::GpuPartition& partition = request.partition();
    if (partition.sharing() == v1::GPU_SHARING_MIG) {
      if (request.gpus_size() != 1) {
        return PluginStatus::Error(
            TESSERA_INVALID_ARGUMENT,
            "gpus: a MIG share names one GPU, got " + std::to_string(request.gpus_size()));
      }
      if (request.has_mig() && !request.mig().uuid().empty()) {
        *out = request.mig().uuid();
        return PluginStatus::Ok();
      }
      const v1::GpuDevice& gpu = node_.gpus(request.gpus(0));
      for (const v1::PartitionInstance& instance : gpu.instances()) {
        if (instance.mig().profile() == partition.mig_profile() &&
            instance.mig().start() == partition.mig_start() && !instance.uuid().empty()) {
          *out = instance.uuid();
          return PluginStatus::Ok();
        }
      }
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 "partition: GPU " + std::to_string(request.gpus(0)) +
                                     " of node '" + node_.name() + "' has no usable MIG instance " +
                                     partition.mig_profile() + " at memory slice " +
                                     std::to_string(partition.mig_start()));
    }
    if (nvidia_ == nullptr) {
      *out = Join(request.gpus());
      return PluginStatus::Ok();
    }
    out->clear();
    for (int i = 0; i < request.gpus_size(); ++i) {
      *out += (i ? "," : "") + node_.gpus(request.gpus(i)).uuid();
    }
    return PluginStatus::Ok();
  }

  // Shares the GPUs not in MIG mode as the configuration says: time slices, MPS with a control
  // daemon per GPU, or vGPU devices (gpu_shares.h). A GPU that cannot serve its form is offered
  // whole instead, with a warning saying why. Init only.
  void StartSharing(std::vector<std::string>* warnings) {
    shares_ = std::make_unique<GpuShares>(config_, seams_.sysfs);
    for (v1::GpuDevice& gpu : *node_.mutable_gpus()) {
      ShareAsConfigured(config_, &gpu);
      if (gpu.sharing() == v1::GPU_SHARING_MPS || gpu.sharing() == v1::GPU_SHARING_VGPU) {
        const char* key = gpu.sharing() == v1::GPU_SHARING_MPS ? "mps_gpus" : "vgpu_gpus";
        const std::string why =
            shares_->Start(&gpu, nvidia_ != nullptr ? nvidia_->PciBusId(gpu.index()) : "");
        if (!why.empty()) {
          warnings->push_back(std::string(key) + ": GPU " + std::to_string(gpu.index()) +
                              " offered whole: " + why);
          gpu.set_sharing(v1::GPU_SHARING_DEFAULT);
        }
      }
      if (nvidia_ != nullptr) nvidia_->SetSharing(gpu.index(), gpu);
    }
  }

  // Stops and reports lost the tasks whose MPS control daemon died (their MPS server went with
  // it), after it was restarted. Every few seconds from the monitor, without mutex_: a restart
  // waits for the control binary.
  void CheckMpsDaemons(int64_t now_us) {
    const std::vector<GpuShares::LostClients> lost = shares_->CheckDaemons();
    if (lost.empty()) return;
    std::lock_guard lock(mutex_);
    for (const GpuShares::LostClients& daemon : lost) {
      pending_logs_.push_back("local: " + daemon.what + "; " +
                              std::to_string(daemon.clients.size()) + " task(s) lost");
      for (const std::string& client : daemon.clients) {
        for (auto& [key, task] : tasks_) {
          if (TaskStem(task.record.ref) != client || task.lost) continue;
          ::kill(-task.record.pgid, SIGKILL);
          task.lost = true;
          Report(v1::BackendEvent::TASK_LOST, task.record.ref, 0, now_us,
                 "the MPS control daemon of GPU " + std::to_string(daemon.gpu) + " died");
        }
      }
    }
    wake_.notify_all();
  }

  // Takes back the tasks a previous instance recorded, where the same process still runs.
  // Errors: INVALID_ARGUMENT when the journal cannot be opened (the state_dir is unusable).
  PluginStatus AdoptRecordedTasks() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> problems;
    std::vector<TaskRecord> records;
    PluginStatus status = TaskJournal::Open(config_.state_dir, &journal_, &records, &problems);
    for (const std::string& problem : problems) host().Log(TESSERA_LOG_WARN, "local: " + problem);
    if (!status.ok()) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "state_dir: " + status.message);
    }
    for (TaskRecord& record : records) {
      if (!StillTheSameProcess(record)) {
        host().Log(TESSERA_LOG_INFO, "local: task " + TaskStem(record.ref) + " (pid " +
                                         std::to_string(record.pid) +
                                         ") ended while no instance watched it");
        std::vector<std::string> problems;
        shares_->TakeBack(record, &problems);  // its vGPU device, to be removed now.
        shares_->Release(record.ref);
        for (const std::string& problem : problems) host().Log(TESSERA_LOG_WARN, problem);
        if (status = journal_->Ended(record); !status.ok()) {
          host().Log(TESSERA_LOG_WARN, "local: " + status.message);
        }
        continue;
      }
      host().Log(TESSERA_LOG_INFO, "local: adopted running task " + TaskStem(record.ref) +
                                       " (pid " + std::to_string(record.pid) + ")");
      std::vector<std::string> problems;
      shares_->TakeBack(record, &problems);
      for (const std::string& problem : problems) host().Log(TESSERA_LOG_WARN, problem);
      Task& task = tasks_[KeyOf(record.ref)];
      task.record = std::move(record);
    }
    return PluginStatus::Ok();
  }

  // Whether the recorded pid still names the recorded process (zombies included: they still
  // hold the pid, and are dealt with by the monitor).
  static bool StillTheSameProcess(const TaskRecord& record) {
    std::optional<ProcStat> stat = ReadProcStat(record.pid);
    return stat && stat->state != 'X' && stat->start_ticks == record.start_ticks;
  }

  // Starts the monitor thread, in Start, or under a host of ABI 1.0 (no on_start) on the first
  // call after Init: the host's callbacks may be used only once on_init has returned, and the
  // monitor uses them from its first pass. Called with mutex_ held (the new thread waits for
  // it).
  void EnsureMonitor() {
    if (!monitor_.joinable() && !stopping_) monitor_ = std::thread([this] { MonitorLoop(); });
  }

  void MonitorLoop() {
    SteadyTime next_mps_check = std::chrono::steady_clock::now() + kMpsCheckInterval;
    std::unique_lock lock(mutex_);
    while (true) {
      const bool stopping = stopping_;
      lock.unlock();
      const int64_t now = host().NowUs();
      if (std::chrono::steady_clock::now() >= next_mps_check) {
        CheckMpsDaemons(now);
        next_mps_check = std::chrono::steady_clock::now() + kMpsCheckInterval;
      }
      lock.lock();
      shares_->Tick(&pending_logs_);
      CheckTasks(now);
      // Send what is due outside the lock: the host may call back in from emit_event.
      std::vector<v1::BackendEvent> events = std::move(outbox_);
      outbox_.clear();
      std::vector<std::string> logs = std::move(pending_logs_);
      pending_logs_.clear();
      lock.unlock();
      for (const std::string& line : logs) host().Log(TESSERA_LOG_WARN, line);
      for (const v1::BackendEvent& event : events) host().Emit(event);
      lock.lock();
      if (stopping) return;  // one last pass after the stop was asked, so nothing is dropped.
      wake_.wait_for(lock, std::chrono::milliseconds(config_.poll_interval_ms),
                     [this] { return stopping_ || !outbox_.empty(); });
    }
  }

  // Finds ended tasks and sends the SIGKILLs that are due. Called with mutex_ held.
  void CheckTasks(int64_t now_us) {
    const SteadyTime now = std::chrono::steady_clock::now();
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      Task& task = it->second;
      std::optional<int32_t> exit_code = ExitCode(task);
      if (!exit_code) {
        if (task.kill_at && now >= *task.kill_at) {
          ::kill(-task.record.pgid, SIGKILL);
          task.kill_at.reset();
        }
        ++it;
        continue;
      }
      std::string how = *exit_code == kUnknownExitCode ? "ended; exit status unknown"
                        : *exit_code > 128 ? "killed by signal " + std::to_string(*exit_code - 128)
                                           : "exited with " + std::to_string(*exit_code);
      if (!task.lost)
        Report(v1::BackendEvent::TASK_EXITED, task.record.ref, *exit_code, now_us, how);
      shares_->Release(task.record.ref);
      if (PluginStatus status = journal_->Ended(task.record); !status.ok()) {
        pending_logs_.push_back("local: task " + TaskStem(task.record.ref) + ": " + status.message);
      }
      it = tasks_.erase(it);
    }
  }

  // The task's exit code once its first process has ended, else nothing.
  std::optional<int32_t> ExitCode(Task& task) {
    const pid_t pid = task.record.pid;
    siginfo_t info{};
    // WNOWAIT: look without reaping, so the pid (and with it the process group id) cannot be
    // reused while the group's leftovers are killed.
    if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
      if (info.si_pid != pid) return std::nullopt;  // still running.
      ::kill(-task.record.pgid, SIGKILL);
      int status = 0;
      ::waitpid(pid, &status, WNOHANG);
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return kUnknownExitCode;
    }
    // Not our child (or reaped by someone else): watch /proc instead, and once it is gone read
    // the status its wrapper wrote (none when SIGKILL ended the wrapper too).
    if (!task.our_child || errno != ECHILD) {
      std::optional<ProcStat> stat = ReadProcStat(pid);
      if (stat && stat->start_ticks == task.record.start_ticks && stat->state != 'Z' &&
          stat->state != 'X') {
        return std::nullopt;
      }
    }
    return journal_->ExitStatus(task.record).value_or(kUnknownExitCode);
  }

  void Report(v1::BackendEvent::Kind kind, const v1::TaskRef& ref, int32_t exit_code,
              int64_t time_us, const std::string& message) {
    v1::BackendEvent& event = outbox_.emplace_back();
    event.set_kind(kind);
    *event.mutable_ref() = ref;
    event.set_exit_code(exit_code);
    event.set_time_us(time_us);
    event.set_message(message);
  }

  void StopMonitor() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (monitor_.joinable()) monitor_.join();
  }

  LocalSeams seams_;
  LocalConfig config_;
  std::unique_ptr<NvidiaGpus> nvidia_;  // null without NVML.
  std::unique_ptr<GpuShares> shares_;   // MPS client places and vGPU devices; made in Init.
  v1::NodeSpec node_;

  std::mutex mutex_;  // guards everything below.
  std::unique_ptr<TaskJournal> journal_;
  std::condition_variable wake_;
  std::map<TaskKey, Task> tasks_;  // running, or ended but not yet reported.
  std::vector<v1::BackendEvent> outbox_;
  std::vector<std::string> pending_logs_;
  bool stopping_ = false;
  std::thread monitor_;
};

}  // namespace

std::unique_ptr<plugin::Plugin> MakeLocalBackend(plugin::Host host, LocalSeams seams) {
  return std::make_unique<LocalBackend>(host, std::move(seams));
}

}  // namespace tessera::local
