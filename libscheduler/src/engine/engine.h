// Engine: the scheduling loop. Events come in (jobs, queue changes, nodes, executor reports,
// time), decisions go out (placements to persist, tasks to launch or stop).
//
// The engine is single-threaded and performs no I/O: its host runs every call on one decision
// strand and supplies durability (Persist), wake-ups and the executor. Given the same inputs and
// clock it makes the same decisions, so the daemon (real time) and a trace replay (virtual time)
// run the same code.
//
// Durability contract: a placement is launched only after the host reports it durable, so a
// crash never leaves a task running that the store does not know about.
//
// Cost: a decision walks the queue tree (O(depth)), the leaf's pending set (O(1)) and the node
// index (O(log nodes)); nothing rescans all nodes or all jobs.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/earliest_time.h"
#include "engine/engine_statistics.h"
#include "engine/executor.h"
#include "engine/gpu_health_book.h"
#include "engine/idle_gpu_watch.h"
#include "engine/job_record.h"
#include "engine/job_update.h"
#include "engine/make_room_step.h"
#include "engine/persist_retry_queue.h"
#include "engine/reservations.h"
#include "engine/timer_queue.h"
#include "fairshare/queue_tree.h"
#include "model/cluster.h"
#include "model/inventory_diff.h"
#include "placement/feasibility.h"
#include "placement/node_index.h"
#include "placement/placer.h"
#include "placement/shadow_time.h"
#include "preemption/preemption_guard.h"
#include "preemption/preemption_planner.h"
#include "preemption/victim_eligibility.h"
#include "tessera/clock.h"
#include "tessera/options.h"
#include "tessera/v1/dry_run.pb.h"
#include "tessera/v1/event.pb.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/stats.pb.h"

namespace tessera {

class FailedShapes;

class EngineHost {
 public:
  virtual ~EngineHost() = default;
  // Makes `update` durable. Then, on the decision strand and in the order the updates came:
  // runs `durable` (when set) if the update is durable, or, if the store refused it, hands both
  // back through Engine::PersistFailed. The update is handed over rather than shared, so that a
  // host can keep it inline in the buffers it gathers writes in.
  virtual void Persist(JobUpdate update, std::function<void(const Status&)> durable) = 0;
  // The engine has decisions to make; run RunDecisions soon (coalescing repeated requests).
  // After every call into the engine the host also arms a wake-up for timers().NextDeadline()
  // and calls OnTimeAdvanced when it comes.
  virtual void RequestDecisions() = 0;
  // Makes an event that concerns no job (a node's health) durable.
  virtual void PersistEvent(v1::Event event) = 0;
  // The inventory changed; here is a snapshot for checking submits off the strand.
  virtual void InventoryChanged(std::shared_ptr<const FeasibilityChecker> feasibility) = 0;
  // Why a pending job waits changed without a store write (empty: the next write carries the
  // reason, forget the published one). A host that shows no live reasons ignores it.
  virtual void WaitingReasonChanged(uint64_t /*job*/, std::string_view /*reason*/) {}
};

class Engine final : public ExecutorEvents {
 public:
  Engine(const Options& options, const Clock& clock, EngineHost& host);
  ~Engine() override;

  // --- Set-up, before the first decision.
  void SetExecutor(Executor* executor) { executor_ = executor; }
  TimerQueue& timers() { return timers_; }

  // --- Inventory. Errors: INVALID_ARGUMENT, ALREADY_EXISTS, NOT_FOUND.
  Status AddNode(const v1::NodeSpec& spec);
  // Adds many nodes and refreshes capacity and feasibility once (start-up, scale-out).
  Status AddNodes(const std::vector<v1::NodeSpec>& specs);
  // A backend's nodes changed (InventoryDiff): departures first (their jobs requeued as lost,
  // not counted against max_attempts), then changes, then arrivals, with one capacity and
  // feasibility refresh. A changed node takes new labels at once; a new shape (capacity, GPUs,
  // layout) at once when idle, else once its tasks have ended (NodeState::reshape_pending).
  // Every node that can be taken is; the first refusal is returned (INVALID_ARGUMENT naming
  // the node and field).
  Status ApplyInventoryChange(const InventoryDiff& diff, std::string_view backend);
  // Removes present nodes; their jobs are requeued as lost (`why` says why).
  void RemoveNodes(const std::vector<std::string>& names, const std::string& why);
  Status SetNodeFlags(const std::string& name, bool cordoned, bool draining);
  std::vector<v1::Node> Nodes() const;
  // GPU telemetry. Errors: NOT_FOUND (node), INVALID_ARGUMENT (gpu index).
  Status OnTelemetry(const v1::GpuTelemetry& reading);
  bool HasNode(const std::string& name) const;

  // --- Queues (call after the change is durable). Errors as QueueTree.
  Status CreateQueue(const v1::QueueSpec& spec);
  Status UpdateQueue(const v1::QueueSpec& spec);
  Status DeleteQueue(const std::string& name);
  // Errors: NOT_FOUND. Also checked before persisting a queue change.
  Status CheckQueueChange(const v1::QueueSpec& spec, bool create) const;
  Status CheckQueueDelete(const std::string& name) const;
  StatusOr<v1::Queue> Queue(const std::string& name) const;
  std::vector<v1::Queue> Queues() const;

  // --- Jobs.
  // A newly submitted (durable) job, or one reloaded at start-up in any unfinished state.
  // `live` lists the executor's live tasks (for reloaded jobs that were running).
  void AddJob(const v1::Job& job, const std::set<TaskRef>* live = nullptr);
  // Cancels `id`; `done` runs once the cancellation (or the cancel request) is durable.
  // `done` receives NOT_FOUND if the engine does not hold the job (finished or unknown).
  void CancelJob(uint64_t id, std::function<void(StatusOr<v1::JobStatus>)> done);
  bool HasJob(uint64_t id) const { return jobs_.count(id) != 0; }

  // --- Executor reports (ExecutorEvents).
  void OnTaskStarted(const TaskRef& task) override;
  void OnTaskExited(const TaskRef& task, int exit_code) override;
  void OnTaskLost(const TaskRef& task, const std::string& why) override;
  void OnLaunchRejected(const TaskRef& task, bool retryable, const std::string& why) override;
  // A backend can no longer be trusted (its plugin turned unhealthy): its nodes, `names`, are
  // cordoned, so nothing new is placed there, and every job with a task on one of them is
  // requeued as lost (not counted against its attempts). Other nodes are not touched.
  void LoseNodes(const std::vector<std::string>& names, const std::string& why);
  // The node's cloud takes it back soon (a spot interruption notice): nothing new is placed
  // there, in memory only (the node leaves anyway), and the notice goes to the event log. The
  // jobs running there get their checkpoint notice and grace (checkpoint_grace_s) as preempted
  // jobs do and are requeued with their original submit time, not counted as a preemption or
  // an attempt.
  void InterruptNode(const std::string& name, const std::string& why);
  // The backend's restarted plugin took over `names`: those LoseNodes cordoned are uncordoned
  // (unless an operator set their flags since); `forgotten`, the tasks the lost plugin was
  // asked to run, no longer hold decisions back; and `live`, the tasks the new one reports, are
  // stopped unless the engine holds them (StopSupersededTasks).
  void RegainNodes(const std::vector<std::string>& names, const std::set<TaskRef>& forgotten,
                   const std::vector<TaskRef>& live);
  // `live` are the tasks the executor reports alive after a restart (of the scheduler or of the
  // executor), once the engine has reloaded the jobs it keeps. Each one the engine does not hold
  // as a running task of its job's current attempt (a superseded attempt, a finished or unknown
  // job) is stopped at once, and no decision is made until every one of them has exited: the
  // engine does not know which GPUs such a task holds, so nothing may be placed before they are
  // free. So nothing runs twice.
  void StopSupersededTasks(const std::vector<TaskRef>& live);
  // Tasks of superseded attempts still being stopped; decisions wait while there are any.
  size_t superseded_tasks_stopping() const { return superseded_stopping_.size(); }

  // --- Durability.
  // The store refused `update` (see EngineHost::Persist): decisions pause, and it is retried
  // with the job's status as it is then, in order with everything refused after it.
  void PersistFailed(const Status& status, JobUpdate update,
                     std::function<void(const Status&)> durable);

  // --- Time and decisions.
  void OnTimeAdvanced();
  // Makes decisions until none is left or `deadline` (steady clock) passes. Returns true if
  // work remains.
  bool RunDecisions(std::chrono::steady_clock::time_point deadline);
  void Pause() { paused_ = true; }
  void Resume();
  bool paused() const { return paused_; }
  // True when a decision could be made now.
  bool HasDecisionWork() const;

  v1::SchedulerStats Stats() const;
  std::shared_ptr<const FeasibilityChecker> feasibility() const { return feasibility_; }

  // --- Dry runs (engine/dry_run_planner.cc).
  // What would happen now to `job` (a spec the API has validated and admitted, with its
  // resolved priority class and submit time in its status; no id) were it submitted: asked of
  // the same quota checks, placement, make-room steps and reservation planning that decide,
  // and leaving every one of them as it was. Errors: NOT_FOUND (the queue is gone),
  // FAILED_PRECONDITION (it is not a leaf), as a submit's would be.
  StatusOr<v1::DryRunResult> DryRun(const v1::Job& job);

  // --- Burst capacity (elastic/cloud_burst.h drives these; set-up calls before the first
  // decision).
  // Adds `step` to the make-room steps, before "reserve" (which takes nothing from anyone, so
  // it stays the last resort).
  void AddMakeRoomStep(std::unique_ptr<MakeRoomStep> step);
  const GpuModels& gpu_models() const { return cluster_.models(); }
  const std::string& QueueName(QueueId q) const { return queues_.Name(q); }
  // Whether `job` may run on spot capacity: JobSpec.allow_spot, else the nearest allow_spot on
  // its queue's path, else whether it checkpoints (checkpoint_grace_s > 0).
  bool SpotAllowed(const JobRecord& job) const;
  // Jobs of `queue` (its subtree included) are not placed on burst nodes while `why` is set
  // (a spent budget); empty lets them again. NOT_FOUND: no such queue.
  Status SetBurstRefusal(const std::string& queue, std::string why);
  // Why jobs of `queue` may not use burst capacity now; empty: they may.
  const std::string& BurstRefusal(QueueId queue) const { return queues_.BurstRefusal(queue); }
  // Queues blocked on capacity look again (burst capacity may now be asked for them).
  void RetryBlockedQueues();
  // The queue of each live task on `node` (one entry per task); nullopt for a node not present.
  std::optional<std::vector<std::string>> TaskQueuesOn(const std::string& node) const;

 private:
  // The planner behind DryRun, in its own file; it reads engine state and changes none.
  class DryRunPlanner;

  // engine_jobs.cc
  // The exit code recorded for a task that never reported one (lost, or its launch refused).
  static constexpr int kLostExitCode = -1;
  void AddPending(JobRecord& job);
  void RemovePending(JobRecord& job);
  void ReleaseTask(JobRecord& job, PlacedTask& task);
  // Launches the tasks with indices first_task .. first_task + tasks - 1 (one placement's).
  void Launch(uint64_t job_id, int32_t attempt, int32_t first_task, int32_t tasks);
  // Ends `job` (or requeues it, when preempted) once no task of it is live. Returns true when
  // it did, having written the job's status; `job` may then be gone.
  bool MaybeFinish(JobRecord& job);
  // Why a job's tasks were lost: by a cause outside the job (its node left, its backend failed),
  // which does not count against engine.max_attempts, or by one the scheduler cannot tell.
  enum class LossCause { kUnknown, kInfrastructure };
  void Requeue(JobRecord& job, const std::string& reason, LossCause cause = LossCause::kUnknown);
  void StopTasks(JobRecord& job);
  v1::JobStatus BuildStatus(const JobRecord& job) const;
  // Fills `status` (cleared first) with the job's status.
  void FillStatus(const JobRecord& job, v1::JobStatus* status) const;
  // Sets where task `index` runs in `p` (node, GPUs, share) from its allocation.
  void DescribePlacement(int32_t index, const TaskAllocation& allocation,
                         v1::TaskPlacement* p) const;
  // A JOB_STATE_CHANGED event from `from` to the job's current state, serialized now (through a
  // reused message), so that it records the job as it is at this point.
  SerializedEvent MakeEvent(const JobRecord& job, v1::JobState from, std::string_view reason);
  // A JOB_UPDATED event: something changed without a change of state.
  SerializedEvent MakeUpdateEvent(const JobRecord& job, std::string_view reason);
  SerializedEvent MakeEvent(const JobRecord& job, v1::EventKind kind, v1::JobState from,
                            std::string_view reason);
  void Persist(JobRecord& job, std::vector<SerializedEvent> events,
               std::function<void(const Status&)> durable = nullptr);
  void Persist(JobRecord& job, const SerializedEvent& event,
               std::function<void(const Status&)> durable = nullptr);
  void SendPersist(JobUpdate update, std::function<void(const Status&)> durable);
  // A pending job's new reason for waiting, shown through the host without a store write
  // (EngineHost::WaitingReasonChanged); every Persist of the job withdraws it, since the
  // status written carries the reason of the moment.
  void PublishWaitingReason(JobRecord& job, std::string reason);
  void WithdrawWaitingReason(JobRecord& job);
  void RetryFailedPersists();
  PlacedTask* FindTask(JobRecord& job, const TaskRef& ref);
  // The live task `ref` of its job's current attempt, or null (with the job) when the engine
  // holds no such task: a report about it is stale.
  PlacedTask* FindLiveTask(const TaskRef& ref, JobRecord** job);
  // `task` of `job` has ended with `exit_code`; a non-empty `failure` fails the job with that
  // reason unless the task was being stopped (OnTaskExited, a final launch rejection).
  void EndTask(JobRecord& job, PlacedTask& task, int exit_code, std::string failure);
  JobRecord* FindJob(uint64_t id);
  std::optional<std::string> CheckFeasible(const JobRecord& job) const;
  // The same for a shape whose model ids are those of `models` (a copy of the cluster's with
  // names only the job knows added).
  std::optional<std::string> CheckFeasible(const JobRecord& job, const GpuModels& models) const;
  // Fills `job` from the stored job's spec and status (what AddJob and DryRun both read), all
  // but its shape, which names models and labels (MakeTaskShape, PlacementTerms::Compile).
  void FillRecord(const v1::Job& stored, QueueId queue, JobRecord& job) const;

  // engine_inventory.cc
  void InventoryUpdated();
  // Indexes a node just added to the cluster.
  void TakeNode(NodeIndexId id);
  // Changes a present node to `spec` (see ApplyInventoryChange); `from` names the backend.
  Status UpdateNode(const v1::NodeSpec& spec, const std::string& from);
  // Replaces an idle node by its new spec, keeping its slot and flags.
  Status Reshape(NodeIndexId id, const v1::NodeSpec& spec, const std::string& from);
  // Applies the new shapes whose nodes have become idle.
  void ApplyDueReshapes();
  // Drops the reservations that hold `id` (their jobs plan again); a job that waited there for
  // its victims goes back into line.
  void ReplanReservationsOn(NodeIndexId id);
  // The last of a removed node, whose tasks are gone: everything kept by its NodeIndexId.
  void ForgetNode(NodeIndexId id, const std::string& why);
  // The node's spec as the scheduler uses it (GPU health left out).
  v1::NodeSpec DescribeNodeSpec(NodeIndexId id) const;

  void ArmUsageRefresh(TimestampUs last_us);
  bool QueueHoldsJobs(QueueId q) const;
  // Moves `job` to `state`, keeping the pending and running counts.
  void SetState(JobRecord& job, v1::JobState state);

  // engine_decisions.cc
  // Pending jobs looked at per queue, and in all, by one backfill pass (as Slurm's
  // bf_max_job_test bounds its backfill): enough to fill gaps, bounded in cost.
  static constexpr size_t kBackfillDepthPerQueue = 64;
  static constexpr int kBackfillAttemptsPerPass = 1024;
  // A queue's scan stops after this many jobs in a row that did not fit.
  static constexpr int kBackfillMissesPerQueue = 8;

  void Decide(QueueId leaf, JobRecord& job);
  enum class PlaceAttempt { kPlaced, kOverQuota, kDoesNotFit };
  // Places `job` if quotas and capacity allow, asking the make-room steps that serve `attempt`.
  // On failure, the decision for a queue's head blocks the queue and may reserve; other
  // attempts just leave the job pending.
  PlaceAttempt TryPlace(QueueId leaf, JobRecord& job, MakeRoomAttempt attempt);
  void PlaceReservationHolders();
  void Backfill();
  // Whether backfill may try `job` (pending, not first in its queue): not in a strict queue
  // without a time limit, and not holding a reservation.
  bool BackfillMayTry(QueueId leaf, const JobRecord& job) const;
  // Tries `job` as a backfill candidate, unless `failed` shows it cannot fit; a failure for
  // want of room is added to `failed`. True when placed. `reclaim_left` is per queue: while
  // set, the first candidate behind a blocked head of a queue owed its guarantee may also
  // reclaim it (MakeRoomAttempt::kBehindHeadReclaim), which clears it.
  bool TryBackfill(QueueId leaf, JobRecord& job, FailedShapes& failed, bool& reclaim_left);
  // Tasks that must start together for `job` to make progress: its gang minimum at first.
  static int MinTasksToPlace(const JobRecord& job) {
    return job.PlacedTasks() == 0 ? job.gang_min : 1;
  }
  // Tries the jobs in arrived_behind_blocked_ (when no full backfill pass ran).
  void BackfillArrivals();
  void PlaceResult(QueueId leaf, JobRecord& job, PlacementResult result);
  // Why a job of `leaf` waits when quota `v` (nullopt: the leaf's cap) refuses it.
  std::string QuotaWaitingReason(QueueId leaf, const std::optional<QuotaViolation>& v) const;
  // What the quotas along `leaf`'s path let `job` place now, before the placer runs (TryPlace
  // and dry runs both ask): at most `allowed` tasks (up to `max_tasks`), on `job.shape` or, when
  // per-model quotas admit its minimum on some of its models only, on `narrowed`; or `refused`,
  // with the violation that refuses it.
  struct QuotaRoom {
    bool refused = false;
    std::optional<QuotaViolation> violation;
    int allowed = 0;
    std::optional<TaskShape> narrowed;
  };
  QuotaRoom RoomWithinQuota(QueueId leaf, const JobRecord& job, int min_tasks, int max_tasks) const;
  // Releases the placed tasks of an elastic job beyond the largest count its size rule allows.
  void KeepAllowedSize(const JobRecord& job, PlacementResult& result);

  // engine_make_room.cc
  // The make-room steps (make_room_step.h), each the door to one way of making room.
  class RepartitionMigStep;
  class PreemptStep;
  class DrainMigStep;
  class ReserveStep;
  // The steps in the order they are asked: repartition-mig, preempt, drain-mig, reserve.
  std::vector<std::unique_ptr<MakeRoomStep>> DefaultMakeRoomSteps();
  struct PlacementAfterSteps {
    PlacementResult result;    // the last placement tried.
    bool room_coming = false;  // a step took charge: the job waits aside for room being made.
  };
  // Places `job` (between `min_tasks` and `allowed` tasks of `shape`: the job's, or the job's
  // narrowed to the GPU models its quotas admit); where it does not fit, asks the make-room
  // steps in order until it is placed or a step takes charge. Steps that serve only some
  // attempts run only for those (MakeRoomReach).
  PlacementAfterSteps PlaceMakingRoom(JobRecord& job, const TaskShape& shape, int min_tasks,
                                      int allowed, MakeRoomAttempt attempt);

  // engine_reservations.cc
  // Reserves nodes for the pass's reservation candidate, which did not fit, if a slot is free
  // (or it comes strictly before a holder in fair order) and the running jobs' time limits
  // tell when it could start.
  void PlanReservation();
  // A job without a time limit that has run past default_runtime_estimate is assumed to end
  // this long from now when a reservation is planned (and the plan is revisited then).
  static constexpr int64_t kOverdueReplanUs = 5 * 60 * 1'000'000LL;
  void TryReserve(JobRecord& job);
  // When and on which nodes `job` could start if running tasks end as expected (their time
  // limit, else default_runtime_estimate after their start), on nodes not held whole for
  // another job; nullopt when no set of ends makes room. `from_estimates` (may be null) is set
  // when a task that must end first has no time limit, so the start is a guess.
  std::optional<ShadowPlan> ShadowStart(const JobRecord& job, bool* from_estimates) const;
  void DropReservation(JobRecord& job);
  // Drops the reservations of pending jobs their quota no longer admits (a job of their queue
  // started, a cap was lowered), giving them a quota reason.
  void DropReservationsOverQuota();
  // Appends the live tasks on `node` expected to have ended by `by` (ReservationFilter asks).
  void TasksEndingBy(NodeIndexId node, TimestampUs by, std::vector<TaskAllocation>& out) const;
  void OnReservationDue(uint64_t job_id, TimestampUs start_us);
  // Whether the reservation-due timer for (job_id, start_us) would still act.
  bool ReservationStillDue(uint64_t job_id, TimestampUs start_us) const;
  void ArmTimeLimit(JobRecord& job);

  // engine_preemption.cc
  // Stops cheaper work so that `job`, which does not fit, can run: elastic jobs shrink first,
  // then lower-priority jobs (or, for a queue below its guarantee, jobs of queues that
  // borrowed) are preempted. With `reclaim_only`, only a reclaim of the guarantee of the job's
  // queue (or one above it) may make room. Returns true when a plan is under way.
  bool TryPreempt(JobRecord& job, bool reclaim_only = false);
  // What a search for victims found for a job, before anyone is told to stop.
  struct VictimSearch {
    std::optional<PreemptionPlan> plan;                         // its victims point into `victims`.
    std::unordered_map<uint64_t, std::vector<Victim>> victims;  // by job, as built.
    std::optional<QueueId> claimant;  // the queue whose guarantee is reclaimed, if any.
    bool reclaim_only = false;
    bool searched = false;         // nodes were searched (the cheap checks did not rule it out).
    TimestampUs retry_at = 0;      // when a guard that refused a victim (or the rate) allows it.
    bool victim_starting = false;  // a victim was refused only because it has not started yet.
    int whole_jobs = 0;            // victims of the plan stopped whole (not shrunk).
  };
  // The victims the rule allows and the plan that frees room for `job` at least loss, within
  // the preemption rate; changes nothing but `planner`'s rotation (a copy leaves the engine's
  // as it was) and `out`.
  void SearchVictims(const JobRecord& job, bool reclaim_only, PreemptionPlanner& planner,
                     VictimSearch& out);
  // Why `victim` (its part `v`) gives way to `job`: "to make room for <for_whom> (higher
  // priority)", as the victim's status says.
  std::string WhyVictim(const JobRecord& victim, const Victim& v, const JobRecord& job,
                        const VictimSearch& search, std::string_view for_whom) const;
  // Sets `job` aside until its victims have stopped: it leaves its queue's pending order, and
  // on each of `nodes` the capacity in `held` (same order; what its victims free there) is
  // reserved for it. Once the victims are gone it is placed before any queue is served; if
  // they outlast their grace period by 5 s it goes back into line.
  void AwaitVictims(JobRecord& job, std::vector<NodeIndexId> nodes,
                    std::vector<ResourceVector> held, int64_t grace_us, std::string reason);
  // Whether a reservation that holds nodes whole for `holder` gives way to `job`, which
  // preempts (reclaiming for `claimant`, if set): it does when `job` could preempt the holder.
  bool ReservationYields(const JobRecord& holder, const JobRecord& job,
                         std::optional<QueueId> claimant) const;
  // A shrink goes down one allowed count at a time (JobRecord::sizes), each step a victim: a
  // plan that takes step k of a job with a size rule is given its steps 1..k-1 too, so the job
  // lands on an allowed count. The steps only free more room, so the plan still holds. (Without
  // a rule every step is one task and any of them may go alone.)
  void WithEarlierShrinkSteps(
      PreemptionPlan& plan, const std::unordered_map<uint64_t, std::vector<Victim>>& victims) const;
  void Preempt(JobRecord& victim, const std::string& reason, bool count_as_preemption = true);
  void Shrink(JobRecord& victim, const std::vector<const Victim*>& tasks,
              const std::string& reason);
  // The job no longer waits for victims (placed, or gave up): its claim on freed room ends.
  void FinishWaitingForVictims(JobRecord& job);
  void ArmPreemptionRetry(TimestampUs at);
  void RequeuePreempted(JobRecord& job);
  TimestampUs LastCheckpoint(const JobRecord& job, TimestampUs now) const;
  // What the victim rule (preemption/victim_eligibility.h) reads of `job`.
  VictimFacts VictimFactsOf(const JobRecord& job) const;
  // Its band when its queue is ordered by attained service and lower bands may preempt; else -1.
  int32_t PreemptingBand(const JobRecord& job) const;
  // The GPU work (milli-GPU x microseconds) `job` would lose if stopped at `now`: its live
  // tasks' GPUs times the time since its last checkpoint. Victims are chosen to lose least.
  int64_t LostGpuUs(const JobRecord& job, TimestampUs now) const;
  // Adds a live task of a started job to the per-node and by-end indexes (the job's start time
  // must be set).
  void IndexTask(const JobRecord& job, PlacedTask& task);
  // engine_elastic.cc
  void GrowElastic();

  // engine_service_order.cc: queues ordered by attained service (QueueSpec.attained_service,
  // fairshare/service_bands.h).
  // The queue's order, or null when it orders by priority and submit time.
  const v1::AttainedServiceOrder* ServiceOrderOf(QueueId leaf) const;
  // The GPU-microseconds of service `task` has had since it was placed, until `now`.
  static int64_t TaskServiceGpuUs(const PlacedTask& task, TimestampUs now);
  // The job's service until `now`: its ended tasks' and its live ones'.
  int64_t ServiceGpuUs(const JobRecord& job, TimestampUs now) const;
  // The band of a job back in line after a run of `run_us` (before AddPending), and the timer
  // that returns it to band 0 if it waits too long.
  void RankByServiceOnRequeue(JobRecord& job, int64_t run_us);
  // The timer for the job's band_promotion_us, if it has one.
  void ArmBandPromotion(const JobRecord& job);
  // The job waited starvation_factor times its last run: back to band 0.
  void PromoteStarved(uint64_t job_id, int32_t attempt);
  // A running job of a queue whose lower bands may preempt: when its service takes it past its
  // band's limit, its queue decides again (its head may now preempt it).
  void ArmServiceBandCrossing(const JobRecord& job);

  // engine_mig.cc (the planning is partition/mig_relayout's)
  // Re-partitions idle instances of managed MIG GPUs so that `job`'s gang minimum finds
  // instances it accepts. Returns true when some layout changed (placement is worth a retry).
  bool RepartitionMigFor(const JobRecord& job, int min_tasks);
  // When no free instances can be re-shaped: preempts the cheapest jobs the victim rule allows
  // whose instances a new layout would replace (at most kMaxMigDrainLostGpuUs of lost work,
  // with the usual preemption guards). The job waits aside with what they free held for it
  // (AwaitVictims); once they have stopped, re-partitioning finds the room free.
  // Returns true when victims were told to stop.
  bool DrainMigFor(JobRecord& job, int min_tasks);

  // engine_health.cc
  // Feeds a reading of GPU `gpu` of `node` to the idle-GPU watch for each running job that
  // holds it, and acts on what changes: a JOB_GPU_IDLE event (flagged, warned, busy again), and
  // for a job that turned reclaimable, another look at the jobs that wait.
  void WatchIdleGpus(const NodeState& node, int gpu, const v1::GpuTelemetry& reading);
  void EvictFromGpu(const NodeState& node, int gpu, const std::string& why);
  void ClearFailedGpus(NodeState& node);
  void PersistNodeEvent(const std::string& node, const std::string& reason,
                        v1::EventKind kind = v1::NODE_UPDATED);
  void UnindexTask(uint64_t job, PlacedTask& task);

  const Options options_;
  const Clock& clock_;
  EngineHost& host_;
  Executor* executor_ = nullptr;

  Cluster cluster_;
  NodeIndex index_;
  ReservationBook reservations_;
  PreemptionPlanner preemption_planner_;
  PreemptionGuard preemption_guard_;
  GpuHealthBook gpu_health_;  // GPUs with readings, and whether each may take work.
  IdleGpuWatch idle_gpus_;    // running jobs whose GPUs stay idle (QueueSpec.idle_gpus).
  // Live tasks on each node (job id, task index): the victims preemption can see there.
  std::vector<std::vector<std::pair<uint64_t, int32_t>>> tasks_by_node_;
  // Live tasks by expected end (the time limit, or default_runtime_estimate after the start):
  // reservation planning releases them in this order, and on a full cluster it plans after
  // almost every placement, so it must not scan every job to find the first few to end.
  TasksByEnd tasks_by_end_;
  const int64_t default_runtime_us_;
  ReservationFilter* reservation_filter_ = nullptr;  // owned by placer_.
  Placer placer_;
  std::vector<std::unique_ptr<MakeRoomStep>> make_room_steps_;
  QueueTree queues_;
  // Who may be stopped for whom: one rule for preemption, shrinks and MIG drains.
  VictimEligibility victim_eligibility_{queues_, preemption_guard_};
  TimerQueue timers_;
  std::shared_ptr<const FeasibilityChecker> feasibility_;

  std::unordered_map<uint64_t, JobRecord> jobs_;
  // Reused to serialize statuses and events: after the first few, building one allocates
  // nothing but its bytes.
  v1::JobStatus status_scratch_;
  v1::Event event_scratch_;
  std::set<uint64_t> infeasible_jobs_;
  int managed_mig_gpus_ = 0;  // present GPUs whose MIG layout the scheduler may change.
  bool capacity_freed_ = false;
  bool backfill_due_ = false;
  // Jobs that became pending behind a queue head that does not fit, since the last backfill
  // pass: each is tried as a backfill candidate at the end of the next pass, so a small job
  // need not wait for a release to use capacity that is idle now.
  std::vector<uint64_t> arrived_behind_blocked_;
  bool growth_due_ = false;                 // capacity freed or an elastic job started.
  std::set<uint64_t> elastic_jobs_;         // running elastic jobs.
  std::set<NodeIndexId> cordoned_by_loss_;  // nodes LoseNodes cordoned; RegainNodes frees.
  // New shapes reported for busy nodes, applied once each node is idle (ApplyDueReshapes).
  std::map<NodeIndexId, v1::NodeSpec> reshapes_due_;
  std::set<TaskRef> superseded_stopping_;  // StopSupersededTasks: stopped, not yet exited.
  // Exits reported for tasks the engine did not hold (at most kMaxUnclaimedExits, those of the
  // lowest job ids forgotten first): a restarted executor may report one before the engine has
  // its list of live tasks, in which that task then must not be waited for.
  static constexpr size_t kMaxUnclaimedExits = 4096;
  std::set<TaskRef> unclaimed_exits_;
  // Start times of running preemptible jobs, by priority: tells at a glance whether any job
  // could be a victim (lower priority, past the minimum runtime) before searching nodes.
  std::map<int32_t, EarliestTime> preemptible_running_;
  uint64_t reservation_candidate_ = 0;  // first job of this pass that did not fit.
  TimestampUs preemption_retry_at_ = 0;
  // A preemption or drain found no plan while a victim it could take was still starting: the
  // next preemptible job to reach RUNNING asks for another look.
  bool preemption_retry_on_start_ = false;
  // Per queue: what jobs waiting for their victims will take once they are gone.
  std::unordered_map<QueueId, ResourceCharge> incoming_;
  bool paused_ = false;
  // Updates the store refused (disk full, I/O error): retried in order, with decisions paused
  // until they are durable, so nothing the engine did is lost.
  PersistRetryQueue persist_retries_;
  // Cancels waiting for their write, by job (see CancelJob).
  std::unordered_map<uint64_t, std::function<void(StatusOr<v1::JobStatus>)>> cancel_replies_;
  void AnswerCancel(uint64_t id, StatusOr<v1::JobStatus> answer);

  // Counts and latencies for Stats(); they decide nothing.
  EngineStatistics statistics_;
  // The state machine's counts (they decide: timers act only while a job waits).
  int64_t running_jobs_ = 0;
  int64_t pending_jobs_ = 0;
};

}  // namespace tessera
