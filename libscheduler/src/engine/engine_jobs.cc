// The life of a job inside the engine: arrival, launch once durable, executor reports,
// cancellation, requeue after loss, and the end.
#include "common/check.h"
#include "common/log.h"
#include "engine/engine.h"
#include "engine/quota_charge.h"
#include "fairshare/service_bands.h"
#include "model/gpu_partition.h"
#include "model/job_source.h"
#include "model/placement_terms.h"

namespace tessera {
namespace {

bool IsRunningState(v1::JobState s) {
  return s == v1::ADMITTED || s == v1::STARTING || s == v1::RUNNING || s == v1::PREEMPTING;
}

}  // namespace

JobRecord* Engine::FindJob(uint64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

PlacedTask* Engine::FindTask(JobRecord& job, const TaskRef& ref) {
  if (ref.attempt != job.attempt) return nullptr;
  for (PlacedTask& t : job.tasks) {
    if (t.index == ref.task) return &t;
  }
  return nullptr;
}

void Engine::SetState(JobRecord& job, v1::JobState state) {
  const v1::JobState old = job.state;
  if (old == state) return;
  if (old == v1::PENDING) {
    --pending_jobs_;
    queues_.AdjustPendingJobs(job.queue, -1);
  }
  if (state == v1::PENDING) {
    ++pending_jobs_;
    queues_.AdjustPendingJobs(job.queue, 1);
  }
  // Only a running job's GPUs are watched; a new run starts a new window.
  if (old == v1::RUNNING) idle_gpus_.Forget(job.id);
  const bool was_running = IsRunningState(old);
  const bool is_running = IsRunningState(state);
  if (was_running != is_running) {
    running_jobs_ += is_running ? 1 : -1;
    queues_.AdjustRunning(job.queue, is_running ? 1 : -1);
    if (job.preemptible && is_running) {
      preemptible_running_[job.key.priority].Add(job.start_time_us);
      job.preemptible_start = job.start_time_us;
    } else if (job.preemptible_start) {
      EarliestTime& starts = preemptible_running_[job.key.priority];
      starts.Remove(*job.preemptible_start);
      job.preemptible_start.reset();
      if (starts.empty()) preemptible_running_.erase(job.key.priority);
    }
  }
  job.state = state;
}

std::optional<std::string> Engine::CheckFeasible(const JobRecord& job) const {
  return CheckFeasible(job, cluster_.models());
}

std::optional<std::string> Engine::CheckFeasible(const JobRecord& job,
                                                 const GpuModels& models) const {
  if (job.shape.model_overflow) {
    return "the job names more distinct GPU models than the scheduler tracks (" +
           std::to_string(GpuModels::kMaxModels) + ")";
  }
  const int min_tasks = MinTasksToPlace(job);
  return feasibility_->Check(
      FeasibilityQuery::FromShape(job.shape, models, min_tasks, job.same_node));
}

void Engine::AddPending(JobRecord& job) {
  if (job.in_pending) return;
  queues_.AddPending(job.queue, job.key);
  job.in_pending = true;
  // Still blocked: the job is not the head (a new head unblocks its queue), so only backfill
  // looks at it before capacity is freed.
  if (queues_.IsBlocked(job.queue)) arrived_behind_blocked_.push_back(job.id);
  host_.RequestDecisions();
}

void Engine::RemovePending(JobRecord& job) {
  if (!job.in_pending) return;
  const bool was_blocked = queues_.IsBlocked(job.queue);
  queues_.RemovePending(job.queue, job.key);
  job.in_pending = false;
  // The head of a blocked queue left (a cancel, say): the queue is unblocked, and its new head
  // gets a decision now rather than at the next release.
  if (was_blocked && !queues_.IsBlocked(job.queue)) host_.RequestDecisions();
}

void Engine::FillRecord(const v1::Job& stored, QueueId queue, JobRecord& job) const {
  const v1::JobSpec& spec = stored.spec();
  const v1::JobStatus& status = stored.status();
  job.id = stored.id();
  job.queue = queue;
  job.attained_gpu_us = status.attained_gpu_s() * 1'000'000;
  const v1::QueueSpec& queue_spec = queues_.Spec(queue);
  const int32_t band = queue_spec.has_attained_service()
                           ? ServiceBand(queue_spec.attained_service(), job.attained_gpu_us)
                           : 0;
  job.key = PendingKey{status.priority(), status.submit_time_us(), stored.id(), band};
  job.band_promotion_us = band > 0 ? status.band_promotion_us() : 0;
  job.preemptible = status.preemptible();
  const int tasks = spec.tasks() > 0 ? spec.tasks() : 1;
  job.elastic = spec.has_elastic() && spec.elastic().max_tasks() > 0;
  if (job.elastic) {
    // It runs only at the counts its rule allows: from the smallest to the largest of them.
    job.sizes = ElasticSizes::FromBounds(spec.elastic());
    job.wanted_tasks = job.sizes.Largest();
    job.gang_min = job.sizes.Smallest();
  } else {
    job.wanted_tasks = tasks;
    job.gang_min = spec.gang_min() > 0 ? spec.gang_min() : tasks;
  }
  job.same_node = spec.topology().tasks_same_node();
  job.idle_gpu_exempt = spec.idle_gpu_exempt();
  if (spec.has_allow_spot()) job.allow_spot = spec.allow_spot();
  job.grace_ms = spec.checkpoint_grace_s() * 1000;
  job.time_limit_us = spec.time_limit_s() * 1'000'000;
  job.checkpoint_every_us = spec.simulation().checkpoint_every_ms() * 1000;
  job.preemptions = status.preemptions();
  job.losses = status.losses();
  job.last_checkpoint_us = status.last_checkpoint_us();
  job.sim_duration_ms = spec.simulation().duration_ms();
  job.sim_exit_code = spec.simulation().exit_code();
  if (spec.simulation().has_gpu_utilization_pct()) {
    job.sim_gpu_utilization_pct = spec.simulation().gpu_utilization_pct();
  }
  std::string source_backend, external_id;
  const bool from_backend =
      ParseBackendSubmitKey(stored.idempotency_key(), &source_backend, &external_id);
  if (spec.command_size() > 0 || spec.env_size() > 0 || spec.labels_size() > 0 ||
      !spec.backend_spec().empty() || from_backend) {
    auto details = std::make_shared<JobDetails>();
    details->submitted_by_backend = std::move(source_backend);
    details->external_id = std::move(external_id);
    details->job_name = spec.name();
    details->command.assign(spec.command().begin(), spec.command().end());
    details->env.insert(spec.env().begin(), spec.env().end());
    details->labels.insert(spec.labels().begin(), spec.labels().end());
    details->backend_spec = spec.backend_spec();
    job.details = std::move(details);
  }
  job.attempt = std::max(1, status.attempt());
  job.start_time_us = status.start_time_us();
  job.cancel_requested = status.cancel_requested();
}

void Engine::AddJob(const v1::Job& stored, const std::set<TaskRef>* live) {
  const v1::JobSpec& spec = stored.spec();
  const v1::JobStatus& status = stored.status();
  const std::optional<QueueId> queue = queues_.Find(spec.queue());
  if (!queue || !queues_.IsLeaf(*queue)) {
    // Submits check the queue inside the same transaction, so this is a broken invariant; the
    // job is failed visibly rather than dropped.
    TESSERA_BUG("job " + std::to_string(stored.id()) + " names queue '" + spec.queue() +
                "', which is not a leaf queue; failing it");
    v1::JobStatus failed = status;
    failed.set_state(v1::FAILED);
    failed.set_reason("queue '" + spec.queue() + "' is not a leaf queue");
    failed.set_end_time_us(clock_.NowUs());
    JobUpdate update;
    update.job_id = stored.id();
    update.SetStatus(failed);
    SendPersist(std::move(update), nullptr);
    return;
  }

  JobRecord& job = jobs_[stored.id()];
  FillRecord(stored, *queue, job);
  // Model and label names the cluster does not know yet are added, so that a node that
  // reports them later can run the job.
  job.shape = MakeTaskShape(spec, cluster_.models());
  job.shape.terms = PlacementTerms::Compile(spec, cluster_.label_dictionary());
  job.state = v1::JOB_STATE_UNSPECIFIED;
  SetState(job, status.state());

  if (IsRunningState(job.state) || job.state == v1::LOST) {
    // Reloaded after a restart: keep it only if every task it placed is still alive.
    bool all_alive = job.state != v1::LOST;
    std::vector<PlacedTask> tasks_found;
    for (const v1::TaskPlacement& p : status.placements()) {
      PlacedTask t;
      t.index = p.index();
      t.exited = p.exited();
      t.exit_code = p.exit_code();
      t.started = p.started();
      t.launched = true;
      job.next_task_index = std::max(job.next_task_index, p.index() + 1);
      NodeState* node = cluster_.Find(p.node());
      const bool alive = live && live->count(TaskRef{job.id, job.attempt, p.index()}) != 0;
      if (!t.exited && (!node || !node->present() || !alive)) all_alive = false;
      if (node) {
        t.allocation.node = node->id();
        t.allocation.cpu_milli = job.shape.cpu_milli;
        t.allocation.memory_mib = job.shape.memory_mib;
        for (int gpu : p.gpus()) t.allocation.gpu_mask |= 1u << gpu;
        t.allocation.gpu_milli = p.gpu_milli();
        t.allocation.gpu_memory_mib = p.gpu_memory_mib();
        if (p.has_partition() && !RestoreShare(*node, p, t.allocation)) all_alive = false;
      }
      tasks_found.push_back(t);
    }
    for (PlacedTask& t : tasks_found) {
      if (t.exited) continue;
      if (all_alive) {
        placer_.Apply(t.allocation);
        IndexTask(job, t);
        const ResourceCharge charge = ChargeOf(cluster_, t.allocation);
        queues_.AddAllocation(job.queue, charge.resources, clock_.NowUs(), charge.gpus_by_model);
        job.allocated += charge.resources;
        job.allocated_by_model += charge.gpus_by_model;
      }
      // Tasks found alive of a job that is requeued are stopped by StopSupersededTasks.
    }
    if (!all_alive && job.state == v1::PREEMPTING && !job.cancel_requested) {
      // It was being preempted when the scheduler stopped: finish that, not a loss.
      job.preempting = true;
      RequeuePreempted(job);
      return;
    }
    if (!all_alive) {
      Requeue(job, "tasks not found after a restart");
      return;
    }
    job.tasks = std::move(tasks_found);
    placer_.Observe(job.shape, job.wanted_tasks);  // part of the workload placement learns.
    if (job.state == v1::PREEMPTING) {
      job.preempting = true;
      for (PlacedTask& t : job.tasks) t.stopping = !t.exited;
      StopTasks(job);
    }
    if (!job.elastic && !job.preempting && job.PlacedTasks() < job.wanted_tasks) AddPending(job);
    if (job.elastic && !job.preempting) elastic_jobs_.insert(job.id);
    if (job.cancel_requested) StopTasks(job);
    MaybeFinish(job);
    return;
  }

  // PENDING.
  const bool stored_infeasible = status.infeasible();
  if (std::optional<std::string> why = CheckFeasible(job)) {
    job.infeasible = true;
    job.reason = *why;
    infeasible_jobs_.insert(job.id);
    if (!stored_infeasible || status.reason() != *why) {
      Persist(job, MakeUpdateEvent(job, "infeasible: " + *why));
    }
    return;
  }
  // The shapes of the jobs taken on are the workload a learning scorer keeps room for.
  placer_.Observe(job.shape, job.wanted_tasks);
  ArmBandPromotion(job);  // a promotion it was waiting for before the restart.
  AddPending(job);
  if (stored_infeasible) Persist(job, MakeUpdateEvent(job, "feasible now"));
}

void Engine::Requeue(JobRecord& job, const std::string& reason, LossCause cause) {
  const v1::JobState from = job.state;
  elastic_jobs_.erase(job.id);
  for (PlacedTask& t : job.tasks) {
    if (!t.exited) ReleaseTask(job, t);
  }
  FinishWaitingForVictims(job);
  if (job.preempting && !job.cancel_requested) {
    // It was being stopped to make room anyway: that is done, and no loss.
    RemovePending(job);
    DropReservation(job);
    RequeuePreempted(job);
    return;
  }
  RemovePending(job);
  std::vector<SerializedEvent> events;
  SetState(job, v1::LOST);
  events.push_back(MakeEvent(job, from, "lost: " + reason));
  const int64_t run_us = job.start_time_us > 0 ? clock_.NowUs() - job.start_time_us : 0;
  job.tasks.clear();
  job.next_task_index = 0;
  job.failing = false;
  job.start_time_us = 0;
  DropReservation(job);
  if (cause == LossCause::kUnknown) ++job.losses;
  if (job.cancel_requested) {
    // Its cancel was acknowledged: a job whose tasks were being stopped and are now gone has
    // stopped. Requeued, it would run again after the caller was told it would not.
    SetState(job, v1::CANCELLED);
    job.end_time_us = clock_.NowUs();
    job.reason = "cancelled; its tasks were lost while stopping (" + reason + ")";
    events.push_back(MakeEvent(job, v1::LOST, job.reason));
    Persist(job, std::move(events));
    statistics_.Finished();
    jobs_.erase(job.id);
    return;
  }
  if (job.losses >= options_.engine.max_attempts) {
    SetState(job, v1::FAILED);
    job.end_time_us = clock_.NowUs();
    job.reason = "lost " + std::to_string(job.losses) + " times; giving up";
    events.push_back(MakeEvent(job, v1::LOST, job.reason));
    Persist(job, std::move(events));
    statistics_.Finished();
    jobs_.erase(job.id);
    return;
  }
  ++job.attempt;
  SetState(job, v1::PENDING);
  job.reason = "requeued after loss (attempt " + std::to_string(job.attempt) + ")";
  events.push_back(MakeEvent(job, v1::LOST, job.reason));
  RankByServiceOnRequeue(job, run_us);
  if (std::optional<std::string> why = CheckFeasible(job)) {
    job.infeasible = true;
    job.reason = *why;
    infeasible_jobs_.insert(job.id);
  } else {
    AddPending(job);
  }
  Persist(job, std::move(events));
}

void Engine::ReleaseTask(JobRecord& job, PlacedTask& task) {
  task.exited = true;
  UnindexTask(job.id, task);
  job.attained_gpu_us += TaskServiceGpuUs(task, clock_.NowUs());
  placer_.Release(task.allocation);
  const ResourceCharge held = ChargeOf(cluster_, task.allocation);
  queues_.SubtractAllocation(job.queue, held.resources, clock_.NowUs(), held.gpus_by_model);
  job.allocated -= held.resources;
  job.allocated_by_model -= held.gpus_by_model;
  capacity_freed_ = true;
  host_.RequestDecisions();
}

void Engine::StopTasks(JobRecord& job) {
  for (PlacedTask& t : job.tasks) {
    if (t.exited) continue;
    if (t.launched) {
      executor_->Stop(TaskRef{job.id, job.attempt, t.index}, job.grace_ms);
    } else {
      // Placed but not yet durable: it is never launched, so release it now.
      ReleaseTask(job, t);
    }
  }
}

void Engine::Launch(uint64_t job_id, int32_t attempt, int32_t first_task, int32_t tasks) {
  JobRecord* job = FindJob(job_id);
  if (!job || job->attempt != attempt) return;
  for (int32_t index = first_task; index < first_task + tasks; ++index) {
    PlacedTask* task = FindTask(*job, TaskRef{job_id, attempt, index});
    if (!task || task->exited || task->launched) continue;
    const NodeState& node = cluster_.node(task->allocation.node);
    LaunchRequest request;
    request.ref = TaskRef{job_id, attempt, index};
    request.node = node.name();
    for (uint32_t m = task->allocation.gpu_mask; m != 0; m &= m - 1) {
      request.gpus.push_back(__builtin_ctz(m));
    }
    request.gpu_milli = task->allocation.gpu_milli;
    request.gpu_memory_mib = task->allocation.gpu_memory_mib;
    if (task->allocation.share) request.partition = DescribeShare(node, task->allocation);
    request.cpu_milli = task->allocation.cpu_milli;
    request.memory_mib = task->allocation.memory_mib;
    request.queue = queues_.Name(job->queue);
    request.priority = job->key.priority;
    request.time_limit_s = job->time_limit_us / 1'000'000;
    request.sim_duration_ms = job->sim_duration_ms;
    request.sim_exit_code = job->sim_exit_code;
    if (job->sim_gpu_utilization_pct >= 0) {
      request.sim_gpu_utilization_pct = job->sim_gpu_utilization_pct;
    }
    request.details = job->details;
    task->launched = true;
    executor_->Launch(request);
  }
  if (job->state == v1::ADMITTED) {
    ArmTimeLimit(*job);
    SetState(*job, v1::STARTING);
    Persist(*job, MakeEvent(*job, v1::ADMITTED, "launch sent"));
  }
}

void Engine::OnTaskStarted(const TaskRef& ref) {
  JobRecord* job = FindJob(ref.job);
  if (!job) return;
  PlacedTask* task = FindTask(*job, ref);
  if (!task || task->exited) return;
  task->started = true;
  if (job->state != v1::STARTING) return;
  for (const PlacedTask& t : job->tasks) {
    if (!t.exited && !t.started) return;
  }
  SetState(*job, v1::RUNNING);
  Persist(*job, MakeEvent(*job, v1::STARTING, "all tasks started"));
  // A preemption (or drain) that found its victim still starting looks again now it runs.
  if (job->preemptible && preemption_retry_on_start_) {
    preemption_retry_on_start_ = false;
    capacity_freed_ = true;
    host_.RequestDecisions();
  }
}

void Engine::OnTaskExited(const TaskRef& ref, int exit_code) {
  if (superseded_stopping_.erase(ref) != 0) {
    if (superseded_stopping_.empty()) {
      LogInfo(options_.log, "the tasks of superseded attempts have exited; decisions resume");
      capacity_freed_ = true;
      host_.RequestDecisions();
    }
    return;
  }
  JobRecord* job = FindJob(ref.job);
  PlacedTask* task = job ? FindTask(*job, ref) : nullptr;
  if (!task || task->exited) {
    unclaimed_exits_.insert(ref);
    if (unclaimed_exits_.size() > kMaxUnclaimedExits)
      unclaimed_exits_.erase(unclaimed_exits_.begin());
    return;
  }
  EndTask(*job, *task, exit_code,
          exit_code == 0 ? std::string()
                         : "task " + std::to_string(ref.task) + " exited with code " +
                               std::to_string(exit_code));
}

void Engine::EndTask(JobRecord& job, PlacedTask& task, int exit_code, std::string failure) {
  task.exit_code = exit_code;
  ReleaseTask(job, task);
  const bool shrunk =
      task.stopping && !job.preempting && !job.cancel_requested && job.LiveTasks() > 0;
  if (shrunk) {
    // A task stopped to shrink the job: the job runs on with fewer, and the store says so.
    Persist(job, MakeUpdateEvent(job, "task " + std::to_string(task.index) + " stopped"));
  }
  if (!failure.empty() && !task.stopping && !job.cancel_requested && !job.failing) {
    job.failing = true;
    job.reason = std::move(failure);
    StopTasks(job);
  }
  if (!MaybeFinish(job) && !shrunk) {
    // The job goes on (other tasks run, or are stopping): the stored status shows this task
    // exited, so that what the API shows holding GPUs is what the queue is charged for.
    Persist(job, std::vector<SerializedEvent>{});
  }
}

PlacedTask* Engine::FindLiveTask(const TaskRef& ref, JobRecord** job) {
  *job = FindJob(ref.job);
  PlacedTask* task = *job ? FindTask(**job, ref) : nullptr;
  return task && !task->exited ? task : nullptr;
}

void Engine::OnTaskLost(const TaskRef& ref, const std::string& why) {
  JobRecord* job = nullptr;
  PlacedTask* task = FindLiveTask(ref, &job);
  if (!task) return;  // a task of an attempt replaced since, or one already ended.
  const std::string what = "task " + std::to_string(ref.task) + " lost: " + why;
  if (task->stopping || job->cancel_requested) {
    EndTask(*job, *task, kLostExitCode, "");  // it was being stopped anyway.
    return;
  }
  Requeue(*job, what, LossCause::kInfrastructure);
}

void Engine::OnLaunchRejected(const TaskRef& ref, bool retryable, const std::string& why) {
  JobRecord* job = nullptr;
  PlacedTask* task = FindLiveTask(ref, &job);
  if (!task) return;
  const std::string what = "the backend rejected the launch of task " + std::to_string(ref.task) +
                           (retryable ? "" : " for good") + ": " + why;
  if (retryable && !task->stopping && !job->cancel_requested) {
    Requeue(*job, what, LossCause::kUnknown);  // counts: a backend that always refuses ends it.
    return;
  }
  EndTask(*job, *task, kLostExitCode, what);
}

bool Engine::MaybeFinish(JobRecord& job) {
  if (job.LiveTasks() > 0) return false;
  if (job.preempting && !job.cancel_requested) {
    RequeuePreempted(job);
    return true;
  }
  v1::JobState end;
  if (job.cancel_requested) {
    end = v1::CANCELLED;
    job.reason = "cancelled";
  } else if (job.failing) {
    end = v1::FAILED;
  } else if (job.PlacedTasks() == 0 || job.in_pending) {
    return false;  // not started, or required tasks still to place.
  } else {
    end = v1::SUCCEEDED;
    job.reason.clear();
  }
  RemovePending(job);
  DropReservation(job);
  infeasible_jobs_.erase(job.id);
  elastic_jobs_.erase(job.id);
  const v1::JobState from = job.state;
  SetState(job, end);
  job.end_time_us = clock_.NowUs();
  Persist(job, MakeEvent(job, from, job.reason));
  statistics_.Finished();
  jobs_.erase(job.id);
  return true;
}

void Engine::CancelJob(uint64_t id, std::function<void(StatusOr<v1::JobStatus>)> done) {
  JobRecord* job = FindJob(id);
  if (!job) {
    // Finished in the engine, but maybe not yet in the store, which the caller checks next.
    if (persist_retries_.Holds(id)) return done(persist_retries_.UnrecordedError(id, "ended"));
    done(NotFoundError("job " + std::to_string(id) + " is not held by the engine"));
    return;
  }
  if (job->cancel_requested) {
    if (persist_retries_.Holds(id)) {
      return done(persist_retries_.UnrecordedError(id, "cancel requested"));
    }
    done(BuildStatus(*job));
    return;
  }
  job->cancel_requested = true;
  infeasible_jobs_.erase(id);
  job->infeasible = false;
  RemovePending(*job);
  DropReservation(*job);
  FinishWaitingForVictims(*job);
  // Answered once: when the write is durable, or at once with the store's error when the store
  // refuses it (PersistFailed); the write itself is retried either way.
  cancel_replies_[id] = std::move(done);
  auto reply = [this, id](v1::JobStatus status) {
    return [this, id, status = std::move(status)](const Status& s) {
      if (s.ok()) AnswerCancel(id, status);
    };
  };
  if (job->PlacedTasks() == 0) {
    const v1::JobState from = job->state;
    SetState(*job, v1::CANCELLED);
    job->end_time_us = clock_.NowUs();
    job->reason = "cancelled";
    v1::JobStatus final_status = BuildStatus(*job);
    Persist(*job, MakeEvent(*job, from, "cancelled"), reply(final_status));
    statistics_.Finished();
    jobs_.erase(id);
  } else {
    job->reason = "cancel requested; stopping tasks";
    Persist(*job, MakeUpdateEvent(*job, job->reason), reply(BuildStatus(*job)));
    StopTasks(*job);
    MaybeFinish(*job);
  }
  // Queued behind writes the store refused: it waits for the next retry, the caller does not.
  if (persist_retries_.degraded()) {
    AnswerCancel(id, persist_retries_.UnrecordedError(id, "cancelled"));
  }
}

void Engine::AnswerCancel(uint64_t id, StatusOr<v1::JobStatus> answer) {
  auto it = cancel_replies_.find(id);
  if (it == cancel_replies_.end()) return;  // answered already.
  std::function<void(StatusOr<v1::JobStatus>)> done = std::move(it->second);
  cancel_replies_.erase(it);
  done(std::move(answer));
}

v1::JobStatus Engine::BuildStatus(const JobRecord& job) const {
  v1::JobStatus status;
  FillStatus(job, &status);
  return status;
}

void Engine::DescribePlacement(int32_t index, const TaskAllocation& allocation,
                               v1::TaskPlacement* p) const {
  p->set_index(index);
  p->set_node(cluster_.node(allocation.node).name());
  for (uint32_t m = allocation.gpu_mask; m != 0; m &= m - 1) p->add_gpus(__builtin_ctz(m));
  p->set_gpu_milli(allocation.gpu_milli);
  p->set_gpu_memory_mib(allocation.gpu_memory_mib);
  if (allocation.share) {
    *p->mutable_partition() = DescribeShare(cluster_.node(allocation.node), allocation);
  }
}

void Engine::FillStatus(const JobRecord& job, v1::JobStatus* status) const {
  // Cleared, not rebuilt: a reused message keeps its strings and placements for the next job.
  status->Clear();
  v1::JobStatus& s = *status;
  s.set_state(job.state);
  s.set_submit_time_us(job.key.submit_time_us);
  s.set_start_time_us(job.start_time_us);
  s.set_end_time_us(job.end_time_us);
  s.set_attempt(job.attempt);
  s.set_reason(job.reason);
  s.set_infeasible(job.infeasible);
  s.set_cancel_requested(job.cancel_requested);
  s.set_priority(job.key.priority);
  s.set_preemptible(job.preemptible);
  s.set_preemptions(job.preemptions);
  s.set_losses(job.losses);
  s.set_last_checkpoint_us(job.last_checkpoint_us);
  s.set_reserved_start_us(job.reserved_start_us);
  s.set_attained_gpu_s(job.attained_gpu_us / 1'000'000);
  s.set_service_band(job.key.band);
  s.set_band_promotion_us(job.band_promotion_us);
  for (const PlacedTask& t : job.tasks) {
    v1::TaskPlacement* p = s.add_placements();
    DescribePlacement(t.index, t.allocation, p);
    p->set_started(t.started);
    p->set_exited(t.exited);
    p->set_exit_code(t.exit_code);
  }
}

SerializedEvent Engine::MakeEvent(const JobRecord& job, v1::JobState from,
                                  std::string_view reason) {
  return MakeEvent(job, v1::JOB_STATE_CHANGED, from, reason);
}

SerializedEvent Engine::MakeUpdateEvent(const JobRecord& job, std::string_view reason) {
  return MakeEvent(job, v1::JOB_UPDATED, job.state, reason);
}

SerializedEvent Engine::MakeEvent(const JobRecord& job, v1::EventKind kind, v1::JobState from,
                                  std::string_view reason) {
  v1::Event& e = event_scratch_;
  e.Clear();
  const TimestampUs now = clock_.NowUs();
  e.set_time_us(now);
  e.set_kind(kind);
  e.set_job_id(job.id);
  e.set_from_state(from);
  e.set_to_state(job.state);
  e.set_queue(queues_.Name(job.queue));
  e.mutable_reason()->assign(reason.data(), reason.size());
  e.set_attempt(job.attempt);
  if (!job.tasks.empty()) e.set_node(cluster_.node(job.tasks.front().allocation.node).name());
  SerializedEvent event;
  event.time_us = now;
  SerializeInto(e, &event.bytes);
  return event;
}

void Engine::Persist(JobRecord& job, std::vector<SerializedEvent> events,
                     std::function<void(const Status&)> durable) {
  JobUpdate update;
  update.job_id = job.id;
  FillStatus(job, &status_scratch_);
  update.SetStatus(status_scratch_);
  WithdrawWaitingReason(job);
  for (const SerializedEvent& event : events) update.AddEvent(event);
  SendPersist(std::move(update), std::move(durable));
}

void Engine::Persist(JobRecord& job, const SerializedEvent& event,
                     std::function<void(const Status&)> durable) {
  JobUpdate update;
  update.job_id = job.id;
  FillStatus(job, &status_scratch_);
  update.SetStatus(status_scratch_);
  WithdrawWaitingReason(job);
  update.AddEvent(event);
  SendPersist(std::move(update), std::move(durable));
}

void Engine::PublishWaitingReason(JobRecord& job, std::string reason) {
  // A reservation's reason (how many nodes, the expected start) says more; it stays.
  if (job.reason == reason || reservations_.Find(job.id)) return;
  job.reason = std::move(reason);
  job.reason_published = true;
  host_.WaitingReasonChanged(job.id, job.reason);
}

void Engine::WithdrawWaitingReason(JobRecord& job) {
  if (!job.reason_published) return;
  job.reason_published = false;
  host_.WaitingReasonChanged(job.id, {});
}

void Engine::SendPersist(JobUpdate update, std::function<void(const Status&)> durable) {
  if (persist_retries_.degraded()) {
    // Keep the order: nothing overtakes an update that is waiting for a retry.
    persist_retries_.Enqueue(std::move(update), std::move(durable));
    return;
  }
  host_.Persist(std::move(update), std::move(durable));
}

void Engine::PersistFailed(const Status& status, JobUpdate update,
                           std::function<void(const Status&)> durable) {
  if (!persist_retries_.degraded()) {
    LogError(options_.log, "store write failed, pausing decisions and retrying: {}",
             status.ToString());
  }
  const uint64_t job_id = update.job_id;
  const bool arm_retry = persist_retries_.Refused(status, std::move(update), std::move(durable));
  AnswerCancel(job_id, persist_retries_.UnrecordedError(job_id, "cancelled"));
  if (arm_retry) {
    const int64_t delay_us =
        std::chrono::duration_cast<std::chrono::microseconds>(options_.engine.store_retry).count();
    timers_.Schedule(clock_.NowUs() + delay_us, [this] { RetryFailedPersists(); });
  }
}

void Engine::RetryFailedPersists() {
  std::vector<PersistRetryQueue::Entry> retry = persist_retries_.TakeAll();
  for (PersistRetryQueue::Entry& f : retry) {
    // Write the job's latest status (an older one would overwrite newer progress) with the
    // events that never reached the store.
    if (JobRecord* job = FindJob(f.update.job_id)) {
      JobUpdate fresh;
      fresh.job_id = job->id;
      FillStatus(*job, &status_scratch_);
      fresh.SetStatus(status_scratch_);
      for (size_t i = 0; i < f.update.event_count(); ++i) {
        fresh.AddEvent(f.update.event_time_us(i), f.update.event(i));
      }
      f.update = std::move(fresh);
    }
    SendPersist(std::move(f.update), std::move(f.durable));
  }
  host_.RequestDecisions();
}

}  // namespace tessera
