// SimulatedExecutor: runs tasks in the scheduler's own clock, for tests, the demo, benchmarks
// and what-if replays. A task starts at once and exits after its declared duration
// (JobSpec.simulation.duration_ms; 0 = until stopped) with its declared exit code. Stopping a
// task makes it exit with 143 (128 + SIGTERM), as a process ended by SIGTERM would.
//
// Differences from a real executor: tasks do no work and cannot hang, and nothing survives the
// process, so after a restart LiveTasks() is empty and the engine requeues what was running.
#pragma once

#include <unordered_map>
#include <vector>

#include "engine/executor.h"
#include "engine/timer_queue.h"
#include "tessera/clock.h"
#include "tessera/status.h"
#include "tessera/v1/node.pb.h"

namespace tessera {

// The node list a simulated cluster describes. Errors: INVALID_ARGUMENT naming the field.
StatusOr<std::vector<v1::NodeSpec>> ExpandSimulatedCluster(const v1::SimulatedCluster& cluster);

class SimulatedExecutor final : public Executor {
 public:
  // A stopped task's exit code: 128 + SIGTERM after a grace period, 128 + SIGKILL without one.
  static constexpr int kStoppedExitCode = 143;
  static constexpr int kKilledExitCode = 137;

  SimulatedExecutor(std::vector<v1::NodeSpec> nodes, TimerQueue& timers, const Clock& clock,
                    ExecutorEvents& events);

  std::vector<v1::NodeSpec> Inventory() override { return nodes_; }
  // Simulated GPUs take any valid layout at once (a real partitioner may fail; see the MIG
  // backend). The new layout is what Inventory reports from then on.
  void ApplyMigLayout(const std::string& node, int gpu,
                      const std::vector<v1::MigInstance>& layout) override;
  void Launch(const LaunchRequest& request) override;
  void Stop(const TaskRef& task, int64_t grace_ms) override;
  std::vector<TaskRef> LiveTasks() override;

 private:
  struct Running {
    TimerQueue::TimerId exit_timer{};
    TimestampUs exit_at = 0;
    bool has_exit_timer = false;
    int exit_code = 0;  // what the pending exit timer reports.
  };
  struct TaskRefHash {
    size_t operator()(const TaskRef& r) const {
      return std::hash<uint64_t>()(r.job * 0x9e3779b97f4a7c15ULL ^
                                   (static_cast<uint64_t>(static_cast<uint32_t>(r.attempt)) << 32 |
                                    static_cast<uint32_t>(r.task)));
    }
  };
  using RunningMap = std::unordered_map<TaskRef, Running, TaskRefHash>;
  using RunningEntry = RunningMap::value_type;

  void ReportStarts();
  // Arms the task's exit at `at` (replacing an earlier exit timer) with run.exit_code.
  void ScheduleExit(RunningEntry& entry, TimestampUs at);
  void Exit(RunningEntry& entry);

  std::vector<v1::NodeSpec> nodes_;
  TimerQueue& timers_;
  const Clock& clock_;
  ExecutorEvents& events_;
  // Looked up on every launch, start, stop and exit: hashed, not ordered.
  RunningMap running_;
  // Launched tasks whose start is not reported yet, in launch order; and the batch being
  // reported (kept to reuse its buffer).
  std::vector<TaskRef> starting_;
  std::vector<TaskRef> reporting_;
};

}  // namespace tessera
