// MakeRoomStep: one way of making room for a job that does not fit.
//
// When the placer finds no room for a job, the engine asks its make-room steps, in the order it
// holds them, until the job is placed or a step takes charge of it. A step may change the
// cluster at once (re-shape idle MIG instances: the engine then places the job again), start
// making room that takes time (give victims notice: the job then waits aside for it, and no
// later step runs), or find nothing, leaving the job to the next step. When no step takes
// charge, the job stays first in line and its queue waits for capacity. Like kube-scheduler's
// PostFilter plugins, but in-process, on the decision strand, and deterministic: a step reads
// engine state and the engine's clock, nothing else, so the same inputs make the same room.
//
// A new way of making room (re-typing a vGPU GPU, asking a capacity provider for nodes) is a
// new step in the list, not a new branch in the decision.
//
// Thread safety: steps run on the decision strand only, one at a time.
#pragma once

#include <string>
#include <string_view>

namespace tessera {

struct JobRecord;

// What a step did for the job.
enum class MakeRoomOutcome {
  // No room now; the next step may try. (A step may still have planned room for later, as a
  // reservation does, without taking the job out of line.)
  kNoRoom,
  // Room was made at once (a GPU's layout changed): the engine places the job again, and if it
  // still does not fit, the next step tries.
  kPlaceAgain,
  // Room is being made (victims are stopping) and the job waits aside for it, out of its
  // queue's line; no later step runs and the queue is not blocked.
  kRoomComing,
};

// Which placement attempt asks for room.
enum class MakeRoomAttempt {
  // The decision for a queue's head, the job most deserving room.
  kQueueHead,
  // The first job behind a head that no step could serve (it needs a GPU that has failed, a
  // node that is drained), in a queue owed its guarantee: the guarantee is the queue's, not the
  // head's, so reclaim may make room for this job, and only reclaim.
  kBehindHeadReclaim,
  // Any other attempt: backfill candidates, reservation holders.
  kOther,
};

// Which placement attempts a step serves.
enum class MakeRoomReach {
  // Every attempt. Such a step must be cheap and may only answer kNoRoom or kPlaceAgain.
  kEveryAttempt,
  // Only the decision for a queue's head.
  kQueueHead,
  // The decision for a queue's head, and the reclaim-only attempt behind a head (kBehindHead-
  // Reclaim).
  kQueueHeadOrReclaim,
};

// Whether a step of `reach` is asked on `attempt`.
inline bool Serves(MakeRoomReach reach, MakeRoomAttempt attempt) {
  switch (reach) {
    case MakeRoomReach::kEveryAttempt:
      return true;
    case MakeRoomReach::kQueueHead:
      return attempt == MakeRoomAttempt::kQueueHead;
    case MakeRoomReach::kQueueHeadOrReclaim:
      return attempt != MakeRoomAttempt::kOther;
  }
  return false;
}

class MakeRoomStep {
 public:
  virtual ~MakeRoomStep() = default;

  // A short name for logs and docs ("preempt", "drain-mig").
  virtual std::string_view name() const = 0;
  virtual MakeRoomReach reach() const = 0;

  // Makes room for `job`, which does not fit, so that at least `min_tasks` of its tasks can
  // be placed (its gang minimum, or one more task of a started job). `attempt` is one the
  // step's reach serves.
  virtual MakeRoomOutcome MakeRoom(JobRecord& job, int min_tasks, MakeRoomAttempt attempt) = 0;

  // The job still waits after the steps were asked (or a dry run asks what would happen):
  // appends what this step knows of its wait to `reason` ("; burst capacity asked for it: ..."),
  // changing nothing. Most steps have nothing to add.
  virtual void Explain(const JobRecord& /*job*/, std::string& /*reason*/) const {}
};

}  // namespace tessera
