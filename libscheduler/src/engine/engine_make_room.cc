// The engine's make-room steps (make_room_step.h) and their order. Each step here is the
// engine's door to one way of making room; the order is the engine's policy:
//
//   1. repartition-mig: re-shape idle instances of managed MIG GPUs (every attempt);
//   2. preempt: shrink elastic jobs, stop lower-priority work or reclaim a guarantee (for the
//      job behind a head that no step could serve, in a queue owed its guarantee, reclaim only);
//   3. drain-mig: stop the work on instances a new MIG layout would replace;
//   4. reserve: name the job the pass's reservation candidate (planned at the end of the pass).
//
// Re-shaping idle instances stops nobody, so it comes first; preemption stops whole-GPU and
// shared work before a MIG GPU is drained, which always stops whole jobs; a reservation takes
// nothing from anyone now, so it is the last resort.
#include <algorithm>
#include <memory>

#include "engine/engine.h"

namespace tessera {

class Engine::RepartitionMigStep final : public MakeRoomStep {
 public:
  explicit RepartitionMigStep(Engine& engine) : engine_(engine) {}
  std::string_view name() const override { return "repartition-mig"; }
  MakeRoomReach reach() const override { return MakeRoomReach::kEveryAttempt; }
  MakeRoomOutcome MakeRoom(JobRecord& job, int min_tasks, MakeRoomAttempt) override {
    if (engine_.managed_mig_gpus_ == 0 || !job.shape.fractional_gpu()) {
      return MakeRoomOutcome::kNoRoom;
    }
    return engine_.RepartitionMigFor(job, min_tasks) ? MakeRoomOutcome::kPlaceAgain
                                                     : MakeRoomOutcome::kNoRoom;
  }

 private:
  Engine& engine_;
};

class Engine::PreemptStep final : public MakeRoomStep {
 public:
  explicit PreemptStep(Engine& engine) : engine_(engine) {}
  std::string_view name() const override { return "preempt"; }
  MakeRoomReach reach() const override { return MakeRoomReach::kQueueHeadOrReclaim; }
  MakeRoomOutcome MakeRoom(JobRecord& job, int /*min_tasks*/, MakeRoomAttempt attempt) override {
    const bool reclaim_only = attempt == MakeRoomAttempt::kBehindHeadReclaim;
    return engine_.TryPreempt(job, reclaim_only) ? MakeRoomOutcome::kRoomComing
                                                 : MakeRoomOutcome::kNoRoom;
  }

 private:
  Engine& engine_;
};

class Engine::DrainMigStep final : public MakeRoomStep {
 public:
  explicit DrainMigStep(Engine& engine) : engine_(engine) {}
  std::string_view name() const override { return "drain-mig"; }
  MakeRoomReach reach() const override { return MakeRoomReach::kQueueHead; }
  MakeRoomOutcome MakeRoom(JobRecord& job, int min_tasks, MakeRoomAttempt) override {
    if (engine_.managed_mig_gpus_ == 0 || !job.shape.fractional_gpu()) {
      return MakeRoomOutcome::kNoRoom;
    }
    return engine_.DrainMigFor(job, min_tasks) ? MakeRoomOutcome::kRoomComing
                                               : MakeRoomOutcome::kNoRoom;
  }

 private:
  Engine& engine_;
};

// The first job of a pass that does not fit is the one most deserving a reservation; planning
// it waits for the end of the pass (PlanReservation), so a decision stays cheap. The job stays
// in line either way.
class Engine::ReserveStep final : public MakeRoomStep {
 public:
  explicit ReserveStep(Engine& engine) : engine_(engine) {}
  std::string_view name() const override { return "reserve"; }
  MakeRoomReach reach() const override { return MakeRoomReach::kQueueHead; }
  MakeRoomOutcome MakeRoom(JobRecord& job, int /*min_tasks*/, MakeRoomAttempt) override {
    if (engine_.options_.engine.max_reservations > 0 && engine_.reservation_candidate_ == 0) {
      engine_.reservation_candidate_ = job.id;
    }
    return MakeRoomOutcome::kNoRoom;
  }

 private:
  Engine& engine_;
};

std::vector<std::unique_ptr<MakeRoomStep>> Engine::DefaultMakeRoomSteps() {
  std::vector<std::unique_ptr<MakeRoomStep>> steps;
  steps.push_back(std::make_unique<RepartitionMigStep>(*this));
  steps.push_back(std::make_unique<PreemptStep>(*this));
  steps.push_back(std::make_unique<DrainMigStep>(*this));
  steps.push_back(std::make_unique<ReserveStep>(*this));
  return steps;
}

void Engine::AddMakeRoomStep(std::unique_ptr<MakeRoomStep> step) {
  auto reserve = std::find_if(make_room_steps_.begin(), make_room_steps_.end(),
                              [](const auto& s) { return s->name() == "reserve"; });
  make_room_steps_.insert(reserve, std::move(step));
}

bool Engine::SpotAllowed(const JobRecord& job) const {
  if (job.allow_spot) return *job.allow_spot;
  if (std::optional<bool> queue = queues_.AllowSpot(job.queue)) return *queue;
  return job.grace_ms > 0;
}

Status Engine::SetBurstRefusal(const std::string& queue, std::string why) {
  const std::optional<QueueId> q = queues_.Find(queue);
  if (!q) return NotFoundError("queue '" + queue + "' does not exist");
  const bool lifted = !queues_.BurstRefusal(*q).empty() && why.empty();
  queues_.SetBurstRefusal(*q, std::move(why));
  if (lifted) RetryBlockedQueues();
  return Status::Ok();
}

void Engine::RetryBlockedQueues() {
  capacity_freed_ = true;
  host_.RequestDecisions();
}

Engine::PlacementAfterSteps Engine::PlaceMakingRoom(JobRecord& job, const TaskShape& shape,
                                                    int min_tasks, int allowed,
                                                    MakeRoomAttempt attempt) {
  PlacementAfterSteps out;
  out.result = placer_.Place(shape, min_tasks, allowed, job.same_node);
  for (const std::unique_ptr<MakeRoomStep>& step : make_room_steps_) {
    if (out.result.placed()) break;
    if (!Serves(step->reach(), attempt)) continue;
    const MakeRoomOutcome outcome = step->MakeRoom(job, min_tasks, attempt);
    if (outcome == MakeRoomOutcome::kPlaceAgain) {
      out.result = placer_.Place(shape, min_tasks, allowed, job.same_node);
    } else if (outcome == MakeRoomOutcome::kRoomComing) {
      out.room_coming = true;
      break;
    }
  }
  if (!out.result.placed() && !out.room_coming) {
    // Every step may know something of the wait, also one this attempt did not ask.
    for (const std::unique_ptr<MakeRoomStep>& step : make_room_steps_) {
      step->Explain(job, out.result.reason);
    }
  }
  return out;
}

}  // namespace tessera
