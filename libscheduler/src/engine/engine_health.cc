// GPU health: telemetry from backends marks a GPU failed (fatal ECC or XID errors: no more
// work, its tasks requeued) or too hot (no new work until it cools below a lower mark); an
// executor lost and regained, and the tasks of superseded attempts it still runs.
#include <algorithm>

#include "common/log.h"
#include "engine/engine.h"

namespace tessera {

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
  v1::GpuState& state = gpu_health_[{node->id(), gpu}];
  state.set_index(gpu);
  *state.mutable_last() = reading;
  if (reading.time_us() == 0) state.mutable_last()->set_time_us(clock_.NowUs());

  const GpuHealthOptions& limits = options_.gpu_health;
  std::string fatal;
  if (reading.ecc_uncorrectable_errors() > 0) {
    fatal = std::to_string(reading.ecc_uncorrectable_errors()) + " uncorrectable ECC error(s)";
  }
  for (int xid : reading.xid_errors()) {
    if (std::find(limits.fatal_xids.begin(), limits.fatal_xids.end(), xid) !=
        limits.fatal_xids.end()) {
      fatal = "XID " + std::to_string(xid);
    }
  }
  const bool was_usable = !state.failed() && !state.too_hot();
  if (!fatal.empty() && !state.failed()) {
    state.set_failed(true);
    state.set_reason(fatal);
  }
  if (!state.too_hot() && reading.temperature_c() >= limits.max_temperature_c) {
    state.set_too_hot(true);
    if (!state.failed())
      state.set_reason("too hot: " + std::to_string(reading.temperature_c()) + " C");
  } else if (state.too_hot() && reading.temperature_c() <= limits.resume_temperature_c) {
    state.set_too_hot(false);
    if (!state.failed()) state.clear_reason();
  }
  const bool usable = !state.failed() && !state.too_hot();
  if (usable == was_usable) return Status::Ok();

  node->SetGpuHealthy(gpu, usable);
  placer_.Refresh(node->id());
  const std::string what =
      "gpu " + std::to_string(gpu) + (usable ? " usable again" : ": " + state.reason());
  PersistNodeEvent(node->name(), what);
  if (usable) {
    capacity_freed_ = true;
    host_.RequestDecisions();
    return Status::Ok();
  }
  if (state.failed() && limits.requeue_on_failure) EvictFromGpu(*node, gpu, state.reason());
  return Status::Ok();
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
  bool cleared = false;
  for (int gpu = 0; gpu < static_cast<int>(node.gpus().size()); ++gpu) {
    auto it = gpu_health_.find({node.id(), gpu});
    if (it == gpu_health_.end() || !it->second.failed()) continue;
    it->second.set_failed(false);
    it->second.clear_reason();
    node.SetGpuHealthy(gpu, !it->second.too_hot());
    cleared = true;
  }
  if (cleared) placer_.Refresh(node.id());
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

void Engine::LoseExecutor(const std::string& why) {
  for (const NodeState& node : cluster_.nodes()) {
    if (!node.present()) continue;
    if (!node.cordoned()) cordoned_by_loss_.insert(node.id());
    cluster_.node(node.id()).set_cordoned(true);
    placer_.Refresh(node.id());
  }
  std::vector<uint64_t> placed;
  for (const auto& [id, job] : jobs_) {
    if (job.PlacedTasks() > 0) placed.push_back(id);
  }
  std::sort(placed.begin(), placed.end());
  for (uint64_t id : placed) {
    if (JobRecord* job = FindJob(id)) Requeue(*job, why);
  }
}

void Engine::RegainExecutor(const std::vector<TaskRef>& live) {
  // What the lost executor was stopping is reported again by this one if it still runs.
  superseded_stopping_.clear();
  StopSupersededTasks(live);
  for (NodeIndexId id : cordoned_by_loss_) {
    NodeState& node = cluster_.node(id);
    if (!node.present()) continue;
    node.set_cordoned(node.draining());
    placer_.Refresh(id);
  }
  cordoned_by_loss_.clear();
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
