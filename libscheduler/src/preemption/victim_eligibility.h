// VictimEligibility: who may be stopped to make room for a job, and how much of it. This is the
// one rule for every path that stops running work for another job: priority preemption,
// guarantee reclaim, elastic shrink and the drain of a MIG GPU all ask it, so they cannot
// disagree about a job.
//
// A running job may give way to a preemptor only if it is preemptible, running, not already
// being stopped, and not the preemptor itself. Then:
//   - an elastic job above its minimum, of a priority no higher than the preemptor's, gives
//     up only its tasks above the minimum (a shrink, which loses no work);
//   - otherwise the whole job gives way when its priority is lower and it is in the
//     preemptor's queue, or its queue keeps its guarantee without it (what a queue holds
//     within its guarantee would be reclaimed at once, and the two queues would take turns
//     preempting each other for ever); or when the preemptor's queue (or one above it)
//     reclaims its guarantee and the victim's queue holds what it has beyond its own.
//     A reclaim stops only jobs whose GPUs are all of models the claimant's guarantee covers.
//   - in a queue ordered by attained service whose lower bands may preempt
//     (QueueSpec.attained_service.preempt), the whole job gives way to a preemptor of its own
//     queue, of no lower priority, in a lower band than the job's service has taken it to;
//   - a job whose GPUs stayed idle under a reclaiming policy (QueueSpec.idle_gpus) gives way
//     whole to any preemptor, of any priority and queue: its room is wasted where it is. Not
//     to a preemptor that may only reclaim a guarantee, unless the reclaim allows it anyway.
// A job that may give way also has to pass the guards against thrash (PreemptionGuard: a
// minimum runtime, a cooldown after its last preemption); until it does, the verdict says when
// it will.
//
// The rule reads queue state and the guard and changes neither. Thread safety: as the queue
// tree it reads (the decision strand).
#pragma once

#include <cstdint>
#include <optional>

#include "fairshare/queue_tree.h"
#include "model/resource_vector.h"
#include "preemption/preemption_guard.h"
#include "tessera/clock.h"

namespace tessera {

// What the rule reads of a job that could be stopped.
struct VictimFacts {
  uint64_t job = 0;
  QueueId queue = 0;
  int32_t priority = 0;
  bool running = false;   // in the RUNNING state.
  bool starting = false;  // placed, not yet RUNNING (ADMITTED or STARTING).
  bool stopping = false;  // already being preempted.
  bool preemptible = false;
  bool elastic = false;
  // Its GPUs stayed idle and its queue's idle_gpus policy reclaims them (engine/idle_gpu_watch.h).
  bool idle_reclaimable = false;
  int live_tasks = 0;
  int gang_min = 0;
  TimestampUs started_us = 0;
  TimestampUs preempted_us = 0;               // 0: never preempted.
  const ResourceVector* allocated = nullptr;  // what it holds (required).
  // Its GPUs by the model of their node; null: holds none by model (as if of no model).
  const GpuModelAmounts* gpus_by_model = nullptr;
  // Its service band now, in a queue ordered by attained service whose lower bands may preempt;
  // -1 elsewhere.
  int32_t service_band = -1;
};

// The job that needs room.
struct Preemptor {
  uint64_t job = 0;
  QueueId queue = 0;
  int32_t priority = 0;
  // The queue whose guarantee is being reclaimed (QueueTree::ReclaimingQueue), if any.
  std::optional<QueueId> claimant;
  // Only the reclaim may make room: no victim gives way for priority alone (the preemptor is
  // not its queue's head; see MakeRoomAttempt::kBehindHeadReclaim).
  bool reclaim_only = false;
  // The GPU models the claimant's guarantee covers (ReclaimClaim::models): a job holding GPUs
  // of another model is not stopped for the reclaim (a queue owed H100s takes back no T4).
  ModelMask claimed_models = kEveryModel;
  // Its band in a queue ordered by attained service whose lower bands may preempt; -1
  // elsewhere.
  int32_t service_band = -1;
};

struct VictimVerdict {
  enum class Extent {
    kNone,    // it may not give way to this preemptor.
    kShrink,  // only its elastic tasks above the minimum.
    kWhole,   // the whole job.
  };
  Extent extent = Extent::kNone;
  // For kShrink and kWhole: whether the guards allow it now, and if not, when they will.
  bool allowed_now = false;
  TimestampUs allowed_at = 0;
  // For kShrink and kWhole: not allowed now because it is still starting; once RUNNING, the
  // guards decide (allowed_at is then 0: no clock time says when that is).
  bool once_running = false;
  // For kWhole: it gives way for its lower priority (else for the claimant's guarantee, or for
  // its idle GPUs).
  bool by_priority = false;
  // For kWhole: it gives way because its GPUs stayed idle (and for nothing else).
  bool by_idle_gpus = false;
  // For kWhole: it gives way because its service put it in a higher band of the preemptor's
  // queue (and not for its priority).
  bool by_service = false;

  bool MayStopNow(Extent e) const { return extent == e && allowed_now; }
};

class VictimEligibility {
 public:
  VictimEligibility(const QueueTree& queues, const PreemptionGuard& guard)
      : queues_(queues), guard_(guard) {}

  VictimVerdict Judge(const Preemptor& preemptor, const VictimFacts& victim,
                      TimestampUs now_us) const;

 private:
  const QueueTree& queues_;
  const PreemptionGuard& guard_;
};

}  // namespace tessera
