// GPU health: telemetry from backends (judged by GpuHealthBook) marks a GPU failed (fatal ECC or
// XID errors: no more work, its tasks requeued) or too hot (no new work until it cools below a
// lower mark); an executor lost and regained, and the tasks of superseded attempts it still runs.
#include <algorithm>
#include <cstdio>

#include "common/log.h"
#include "engine/engine.h"

namespace tessera {
namespace {

// "5%", "12.5%": a utilisation as events show it.
std::string FormatPercent(double pct) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g%%", pct);
  return text;
}

}  // namespace

Status Engine::OnTelemetry(const v1::GpuTelemetry& reading) {
  NodeState* node = cluster_.Find(reading.node());
  if (!node || !node->present())
    return NotFoundError("node '" + reading.node() + "' does not exist");
  const int gpu = reading.gpu();
  const int count = static_cast<int>(node->gpus().size());
  if (gpu < 0 || gpu >= count) {
    return InvalidArgumentError("gpu: index " + std::to_string(gpu) + " out of range for node '" +
                                reading.node() + "' (" + std::to_string(count) + " GPUs)");
  }
  WatchIdleGpus(*node, gpu, reading);
  const GpuHealthBook::Verdict verdict =
      gpu_health_.Record(node->id(), gpu, reading, clock_.NowUs());
  if (!verdict.changed) return Status::Ok();
  const bool usable = verdict.usable;

  node->SetGpuHealthy(gpu, usable);
  placer_.Refresh(node->id());
  const std::string what =
      "gpu " + std::to_string(gpu) + (usable ? " usable again" : ": " + verdict.reason);
  PersistNodeEvent(node->name(), what);
  if (usable) {
    capacity_freed_ = true;
    host_.RequestDecisions();
    return Status::Ok();
  }
  if (verdict.failed && options_.gpu_health.requeue_on_failure) {
    EvictFromGpu(*node, gpu, verdict.reason);
  }
  return Status::Ok();
}

void Engine::WatchIdleGpus(const NodeState& node, int gpu, const v1::GpuTelemetry& reading) {
  if (node.id() >= tasks_by_node_.size()) return;
  // The running jobs with a task on this GPU, each once, in id order (so the events are).
  std::vector<uint64_t> holders;
  for (const auto& [job_id, index] : tasks_by_node_[node.id()]) {
    JobRecord& job = jobs_.at(job_id);
    PlacedTask* task = FindTask(job, TaskRef{job_id, job.attempt, index});
    if (task && !task->exited && (task->allocation.gpu_mask >> gpu) & 1u) {
      holders.push_back(job_id);
    }
  }
  if (holders.empty()) return;
  std::sort(holders.begin(), holders.end());
  holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
  const TimestampUs read_at = reading.time_us() > 0 ? reading.time_us() : clock_.NowUs();
  for (uint64_t id : holders) {
    JobRecord& job = jobs_.at(id);
    if (job.state != v1::RUNNING || job.preempting || job.cancel_requested || job.failing) {
      continue;
    }
    const IdleGpuRule rule = ResolveIdleGpuRule(queues_, job.queue, job.idle_gpu_exempt);
    if (!rule.watched) {
      idle_gpus_.Forget(id);  // the admin turned the policy off (or allowed the exemption).
      continue;
    }
    const auto job_gpus = [&job] {
      std::vector<GpuRef> gpus;
      for (const PlacedTask& t : job.tasks) {
        if (t.exited) continue;
        for (int g = 0; g < 32; ++g) {
          if ((t.allocation.gpu_mask >> g) & 1u) gpus.push_back({t.allocation.node, g});
        }
      }
      std::sort(gpus.begin(), gpus.end());
      gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
      return gpus;
    };
    // A window never begins before the run it judges.
    const TimestampUs at = std::max(read_at, job.start_time_us);
    const IdleGpuWatch::Verdict verdict = idle_gpus_.Record(
        id, rule.policy, GpuRef{node.id(), gpu}, reading.utilization_pct(), at, job_gpus);
    if (verdict.busy_again) {
      job.reason = "GPUs busy again: GPU " + std::to_string(gpu) + " of node '" + node.name() +
                   "' reports " + FormatPercent(reading.utilization_pct()) + " utilisation";
      Persist(job, MakeEvent(job, v1::JOB_GPU_IDLE, job.state, job.reason));
      continue;
    }
    if (verdict.flagged) {
      statistics_.IdleGpuFlagged();
      job.reason = "GPUs idle: " + std::to_string(verdict.gpus) + " GPU(s) below " +
                   FormatPercent(rule.policy.below_pct) + " utilisation for " +
                   std::to_string((at - verdict.idle_since) / 1'000'000) + " s (queue '" +
                   queues_.Name(rule.from) + "' idle_gpus)";
      if (rule.exemption_refused) {
        job.reason += "; idle_gpu_exempt is not allowed there (idle_gpus.allow_exemption)";
      }
      Persist(job, MakeEvent(job, v1::JOB_GPU_IDLE, job.state, job.reason));
      // A job that is not preemptible is never stopped for it, so it gets no warning.
      if (rule.policy.reclaim && job.preemptible) {
        job.reason =
            "warning: GPUs idle; the job may be preempted for a job that waits for its "
            "room " +
            (rule.policy.warning_us > 0
                 ? "in " + std::to_string(rule.policy.warning_us / 1'000'000) + " s"
                 : std::string("from now on")) +
            ", unless its GPUs get busy";
        Persist(job, MakeEvent(job, v1::JOB_GPU_IDLE, job.state, job.reason));
      }
    }
    if (verdict.reclaimable && job.preemptible) {
      // Queue heads that wait may now take its room: look again.
      capacity_freed_ = true;
      host_.RequestDecisions();
    }
  }
}

void Engine::EvictFromGpu(const NodeState& node, int gpu, const std::string& why) {
  if (node.id() >= tasks_by_node_.size()) return;
  std::vector<uint64_t> jobs;
  for (const auto& [job_id, index] : tasks_by_node_[node.id()]) {
    JobRecord& job = jobs_.at(job_id);
    PlacedTask* task = FindTask(job, TaskRef{job_id, job.attempt, index});
    if (task && (task->allocation.gpu_mask >> gpu) & 1u) jobs.push_back(job_id);
  }
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  for (uint64_t id : jobs) {
    JobRecord& job = jobs_.at(id);
    if (job.preempting) continue;
    Preempt(job,
            "GPU " + std::to_string(gpu) + " of node '" + node.name() + "' failed (" + why +
                "); requeued",
            /*count_as_preemption=*/false);
  }
}

void Engine::ClearFailedGpus(NodeState& node) {
  const std::vector<std::pair<int, bool>> cleared =
      gpu_health_.ClearFailed(node.id(), static_cast<int>(node.gpus().size()));
  for (const auto& [gpu, usable] : cleared) node.SetGpuHealthy(gpu, usable);
  if (!cleared.empty()) placer_.Refresh(node.id());
}

void Engine::PersistNodeEvent(const std::string& node, const std::string& reason,
                              v1::EventKind kind) {
  v1::Event event;
  event.set_time_us(clock_.NowUs());
  event.set_kind(kind);
  event.set_node(node);
  event.set_reason(reason);
  host_.PersistEvent(std::move(event));
}

}  // namespace tessera

namespace tessera {

void Engine::LoseNodes(const std::vector<std::string>& names, const std::string& why) {
  std::set<NodeIndexId> lost;
  for (const std::string& name : names) {
    const NodeState* found = cluster_.Find(name);
    if (found == nullptr || !found->present()) continue;
    NodeState& node = cluster_.node(found->id());
    if (!node.cordoned()) cordoned_by_loss_.insert(node.id());
    node.set_cordoned(true);
    placer_.Refresh(node.id());
    lost.insert(node.id());
  }
  // A job with any task there loses them all: a gang cannot run with members missing.
  std::vector<uint64_t> hit;
  for (const auto& [id, job] : jobs_) {
    for (const PlacedTask& t : job.tasks) {
      if (!t.exited && lost.count(t.allocation.node) != 0) {
        hit.push_back(id);
        break;
      }
    }
  }
  std::sort(hit.begin(), hit.end());
  for (uint64_t id : hit) {
    if (JobRecord* job = FindJob(id)) Requeue(*job, why, LossCause::kInfrastructure);
  }
}

void Engine::InterruptNode(const std::string& name, const std::string& why) {
  const NodeState* found = cluster_.Find(name);
  if (found == nullptr || !found->present()) return;
  NodeState& node = cluster_.node(found->id());
  node.set_cordoned(true);
  placer_.Refresh(node.id());
  PersistNodeEvent(name, why);
  // Its jobs get their checkpoint notice and grace now, as preempted jobs do, and are requeued
  // with their original submit time; the interruption is not theirs, so it counts neither as a
  // preemption nor against their attempts.
  if (node.id() >= tasks_by_node_.size()) return;
  std::vector<uint64_t> jobs;
  for (const auto& [job_id, index] : tasks_by_node_[node.id()]) jobs.push_back(job_id);
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  for (uint64_t id : jobs) {
    JobRecord& job = jobs_.at(id);
    if (job.preempting) continue;
    Preempt(job, "node '" + name + "' is being taken back (" + why + "); requeued",
            /*count_as_preemption=*/false);
  }
}

std::optional<std::vector<std::string>> Engine::TaskQueuesOn(const std::string& name) const {
  const NodeState* node = cluster_.Find(name);
  if (node == nullptr || !node->present()) return std::nullopt;
  std::vector<std::string> queues;
  if (node->id() < tasks_by_node_.size()) {
    for (const auto& [job_id, index] : tasks_by_node_[node->id()]) {
      queues.push_back(queues_.Name(jobs_.at(job_id).queue));
    }
  }
  // Tasks placed but not started yet hold the node too; whose they are is not indexed by node,
  // so they are left out (the node is not idle while they are there).
  for (int i = static_cast<int>(queues.size()); i < node->running_tasks(); ++i)
    queues.push_back("");
  return queues;
}

void Engine::RegainNodes(const std::vector<std::string>& names, const std::set<TaskRef>& forgotten,
                         const std::vector<TaskRef>& live) {
  // What the lost backend was stopping is reported again by its successor if it still runs.
  for (const TaskRef& ref : forgotten) superseded_stopping_.erase(ref);
  StopSupersededTasks(live);
  for (const std::string& name : names) {
    const NodeState* found = cluster_.Find(name);
    if (found == nullptr || cordoned_by_loss_.erase(found->id()) == 0) continue;
    NodeState& node = cluster_.node(found->id());
    if (!node.present()) continue;
    node.set_cordoned(node.draining());
    placer_.Refresh(node.id());
  }
  capacity_freed_ = true;
  host_.RequestDecisions();
}

void Engine::StopSupersededTasks(const std::vector<TaskRef>& live) {
  for (const TaskRef& ref : live) {
    JobRecord* job = FindJob(ref.job);
    PlacedTask* task = job ? FindTask(*job, ref) : nullptr;
    if (task != nullptr && !task->exited && task->launched) continue;  // the engine holds it.
    executor_->Stop(ref, 0);
    if (unclaimed_exits_.erase(ref) == 0) superseded_stopping_.insert(ref);  // still running.
  }
  if (!superseded_stopping_.empty()) {
    const TaskRef& first = *superseded_stopping_.begin();
    LogWarning(
        options_.log,
        "{} task(s) of superseded attempts still run (the first: job {} attempt {} task {}); "
        "stopping them, and placing nothing until they have exited",
        superseded_stopping_.size(), first.job, first.attempt, first.task);
  }
}

}  // namespace tessera
