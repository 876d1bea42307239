#include "engine/simulated_executor.h"

#include <algorithm>

#include "model/cluster.h"

namespace tessera {

StatusOr<std::vector<v1::NodeSpec>> ExpandSimulatedCluster(const v1::SimulatedCluster& cluster) {
  if (cluster.changes_size() > 0 || cluster.rejecting_nodes_size() > 0) {
    return InvalidArgumentError(
        std::string(cluster.changes_size() > 0 ? "changes" : "rejecting_nodes") +
        ": scripted node changes and faults are run by the sim plugin (executor_plugin: sim), "
        "not by the built-in simulation");
  }
  if (cluster.report_telemetry()) {
    return InvalidArgumentError(
        "report_telemetry: GPU telemetry is reported by the sim plugin (executor_plugin: sim), "
        "not by the built-in simulation");
  }
  std::vector<v1::NodeSpec> nodes;
  for (int g = 0; g < cluster.groups_size(); ++g) {
    const v1::SimulatedNodeGroup& group = cluster.groups(g);
    const std::string field = "groups[" + std::to_string(g) + "].";
    if (group.name_prefix().empty()) {
      return InvalidArgumentError(field + "name_prefix: must not be empty");
    }
    if (group.count() <= 0) return InvalidArgumentError(field + "count: must be > 0");
    if (group.gpus() < 0) return InvalidArgumentError(field + "gpus: must be >= 0");
    if (group.gpus() > 0 && group.gpu_model().empty()) {
      return InvalidArgumentError(field + "gpu_model: required when gpus > 0");
    }
    if (group.gpus() > 0 && group.gpu_memory_mib() <= 0) {
      return InvalidArgumentError(field + "gpu_memory_mib: must be > 0 when gpus > 0");
    }
    if (group.gpus_per_nvlink_domain() < 0) {
      return InvalidArgumentError(field + "gpus_per_nvlink_domain: must be >= 0");
    }
    for (int i = 0; i < group.count(); ++i) {
      v1::NodeSpec node;
      node.set_name(group.name_prefix() + "-" + std::to_string(i));
      node.set_cpu_milli(group.cpu_milli());
      node.set_memory_mib(group.memory_mib());
      *node.mutable_labels() = group.labels();
      *node.mutable_taints() = group.taints();
      node.set_zone(group.zone());
      for (int d = 0; d < group.gpus(); ++d) {
        v1::GpuDevice* gpu = node.add_gpus();
        gpu->set_index(d);
        gpu->set_model(group.gpu_model());
        gpu->set_memory_mib(group.gpu_memory_mib());
        gpu->set_nvlink_domain(
            group.gpus_per_nvlink_domain() > 0 ? d / group.gpus_per_nvlink_domain() : 0);
        gpu->set_uuid("GPU-sim-" + node.name() + "-" + std::to_string(d));
        gpu->set_healthy(true);
        gpu->set_sharing(group.sharing());
        gpu->set_replicas(group.replicas());
        *gpu->mutable_mig_instances() = group.mig_instances();
        gpu->set_mig_managed(group.mig_managed());
        gpu->set_vgpu_type(group.vgpu_type());
      }
      Status status = ValidateNodeSpec(node);
      if (!status.ok()) return status.WithContext(field.substr(0, field.size() - 1));
      nodes.push_back(std::move(node));
    }
  }
  return nodes;
}

SimulatedExecutor::SimulatedExecutor(std::vector<v1::NodeSpec> nodes, TimerQueue& timers,
                                     const Clock& clock, ExecutorEvents& events)
    : nodes_(std::move(nodes)), timers_(timers), clock_(clock), events_(events) {}

void SimulatedExecutor::ApplyMigLayout(const std::string& node, int gpu,
                                       const std::vector<v1::MigInstance>& layout) {
  for (v1::NodeSpec& spec : nodes_) {
    if (spec.name() != node || gpu >= spec.gpus_size()) continue;
    v1::GpuDevice* device = spec.mutable_gpus(gpu);
    device->clear_mig_instances();
    for (const v1::MigInstance& m : layout) *device->add_mig_instances() = m;
  }
}

void SimulatedExecutor::Launch(const LaunchRequest& request) {
  auto [it, inserted] = running_.try_emplace(request.ref);
  if (!inserted) return;  // idempotent.
  const TimestampUs now = clock_.NowUs();
  // Every launch waiting for its start report shares one timer: a churning cluster launches
  // tens of thousands of tasks a second, and a timer each cost a heap entry and an allocation.
  if (starting_.empty()) timers_.Schedule(now, [this] { ReportStarts(); });
  starting_.push_back(request.ref);
  if (request.sim_duration_ms > 0) {
    it->second.exit_code = request.sim_exit_code;
    ScheduleExit(*it, now + request.sim_duration_ms * 1000);
  }
}

void SimulatedExecutor::ReportStarts() {
  // Swapped out first: a report may launch more tasks, which wait for the next timer.
  reporting_.swap(starting_);
  for (const TaskRef& ref : reporting_) {
    if (running_.count(ref)) events_.OnTaskStarted(ref);
  }
  reporting_.clear();
}

void SimulatedExecutor::ScheduleExit(RunningEntry& entry, TimestampUs at) {
  Running& run = entry.second;
  if (run.has_exit_timer) timers_.Cancel(run.exit_timer);
  // The timer holds the entry's address, which stays valid until Exit erases it (an unordered
  // map never moves its elements), and only the latest exit timer of a task is left to run.
  // Two pointers fit inside std::function without an allocation.
  RunningEntry* e = &entry;
  run.exit_timer = timers_.Schedule(at, [this, e] { Exit(*e); });
  run.exit_at = at;
  run.has_exit_timer = true;
}

void SimulatedExecutor::Stop(const TaskRef& task, int64_t grace_ms) {
  auto it = running_.find(task);
  if (it == running_.end()) return;
  // A simulated task uses its whole grace period (to checkpoint, say) and then exits, unless
  // it was about to end anyway; with no grace it is killed at once. The exit is reported from a
  // timer, never from inside the caller's stack.
  const TimestampUs stop_at = clock_.NowUs() + std::max<int64_t>(grace_ms, 0) * 1000;
  if (it->second.has_exit_timer && it->second.exit_at <= stop_at) return;
  it->second.exit_code = grace_ms > 0 ? kStoppedExitCode : kKilledExitCode;
  ScheduleExit(*it, stop_at);
}

std::vector<TaskRef> SimulatedExecutor::LiveTasks() {
  std::vector<TaskRef> live;
  live.reserve(running_.size());
  for (const auto& [ref, run] : running_) live.push_back(ref);
  std::sort(live.begin(), live.end());
  return live;
}

void SimulatedExecutor::Exit(RunningEntry& entry) {
  const TaskRef task = entry.first;
  const int exit_code = entry.second.exit_code;
  running_.erase(task);
  events_.OnTaskExited(task, exit_code);
}

}  // namespace tessera
