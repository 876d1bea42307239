// Executor: what runs tasks once the engine has placed them (local processes, pods, or the
// built-in simulation). The engine calls it on the decision strand; it reports back through
// ExecutorEvents, also on the strand. Launch and Stop are idempotent per TaskRef, so a retry
// after a crash never runs a task twice.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/v1/job.pb.h"
#include "tessera/v1/node.pb.h"

namespace tessera {

// One task of one attempt of a job.
struct TaskRef {
  uint64_t job = 0;
  int32_t attempt = 0;
  int32_t task = 0;
  friend bool operator==(const TaskRef& a, const TaskRef& b) {
    return a.job == b.job && a.attempt == b.attempt && a.task == b.task;
  }
  friend bool operator<(const TaskRef& a, const TaskRef& b) {
    if (a.job != b.job) return a.job < b.job;
    if (a.attempt != b.attempt) return a.attempt < b.attempt;
    return a.task < b.task;
  }
};

// What a backend is told about a task's job beyond its resources: the process it runs (for
// backends that run processes), the job's labels and its backend spec (JobSpec.backend_spec,
// which only the backend reads). Shared by the job's tasks.
struct JobDetails {
  std::string job_name;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> labels;
  std::string backend_spec;
  // A job a backend submitted (model/job_source.h): that backend's name and the job's external
  // id there; empty for any other job.
  std::string submitted_by_backend;
  std::string external_id;
};

struct LaunchRequest {
  TaskRef ref;
  std::string node;
  std::vector<int> gpus;       // device indices on the node.
  int32_t gpu_milli = 0;       // share of each listed GPU.
  int64_t gpu_memory_mib = 0;  // memory reserved on each listed GPU.
  // Set for a share of one GPU: the form the backend must enforce (the MIG instance, the vGPU
  // type, an MPS thread percentage of gpu_milli/10 with a gpu_memory_mib limit, a time slice).
  std::optional<v1::GpuPartition> partition;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  std::string queue;                              // the job's leaf queue.
  int32_t priority = 0;                           // the job's priority.
  int64_t time_limit_s = 0;                       // 0 = none.
  int64_t sim_duration_ms = 0;                    // simulation only.
  int32_t sim_exit_code = 0;                      // simulation only.
  std::optional<double> sim_gpu_utilization_pct;  // simulation only (the sim backend's GPUs).
  std::shared_ptr<const JobDetails> details;      // null when the job has none of its fields.
};

class ExecutorEvents {
 public:
  virtual ~ExecutorEvents() = default;
  virtual void OnTaskStarted(const TaskRef& task) = 0;
  virtual void OnTaskExited(const TaskRef& task, int exit_code) = 0;
  // The task is gone without an exit status (evicted, its machine lost): its job is requeued
  // without spending an attempt.
  virtual void OnTaskLost(const TaskRef& task, const std::string& why) = 0;
  // The backend refused to launch this task alone: its job is requeued, spending an attempt,
  // when `retryable`, else it fails; `why` becomes its reason.
  virtual void OnLaunchRejected(const TaskRef& task, bool retryable, const std::string& why) = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // The nodes this executor offers.
  virtual std::vector<v1::NodeSpec> Inventory() = 0;
  virtual void Launch(const LaunchRequest& request) = 0;
  // Asks the task to stop; it must exit within `grace_ms`, then is killed (0: now, no notice).
  virtual void Stop(const TaskRef& task, int64_t grace_ms) = 0;
  // The job now runs `tasks` tasks: some were stopped to shrink it (elastic jobs), or added to
  // grow it. Informational: frameworks that rebalance work listen for it.
  virtual void Resize(const TaskRef& job, int tasks) {}
  // The scheduler re-partitioned a managed MIG GPU: the backend creates and destroys GPU
  // instances to match `layout` (instances listed there that tasks hold already exist). Called
  // before any task is launched on a new instance.
  virtual void ApplyMigLayout(const std::string& node, int gpu,
                              const std::vector<v1::MigInstance>& layout) {}
  // Tasks still alive (for reconciliation after a restart).
  virtual std::vector<TaskRef> LiveTasks() = 0;
  // True while calls to the backend are still in flight (a host waiting for quiet waits for
  // them too). Executors that act at once have none.
  virtual bool Busy() const { return false; }
};

}  // namespace tessera
