// Elastic growth: capacity that no pending job can use goes to running elastic jobs below
// their maximum, one task at a time, the job whose queue has the smallest share first. When
// someone needs the room back, preemption shrinks these jobs first (it loses no work), so
// growing never keeps a newcomer out for long.
#include <algorithm>

#include "engine/engine.h"
#include "engine/quota_charge.h"

namespace tessera {

void Engine::GrowElastic() {
  if (elastic_jobs_.empty()) return;
  std::vector<JobRecord*> growing;
  for (uint64_t id : elastic_jobs_) {
    JobRecord* job = FindJob(id);
    if (job && job->state == v1::RUNNING && !job->preempting && !job->cancel_requested &&
        !job->failing && !job->TaskEndedByItself() && job->LiveTasks() < job->wanted_tasks) {
      growing.push_back(job);
    }
  }
  std::sort(growing.begin(), growing.end(), [this](const JobRecord* a, const JobRecord* b) {
    return queues_.Precedes(a->queue, a->key, b->queue, b->key);
  });
  // Round-robin, one task per job per round, so the first job does not take everything.
  bool grew = true;
  while (grew) {
    grew = false;
    for (JobRecord* job : growing) {
      if (job->LiveTasks() >= job->wanted_tasks) continue;
      if (queues_.TasksWithinQuota(job->queue, job->shape.RequestVector(), 1) < 1) continue;
      reservation_filter_->SetPlacing(job->id, std::nullopt);
      PlacementResult result = placer_.Place(job->shape, 1, 1, job->same_node);
      if (!result.placed() || KeepWithinQuota(queues_, job->queue, placer_, result, 1)) continue;
      const int before = job->LiveTasks();
      PlaceResult(job->queue, *job, std::move(result));
      executor_->Resize(TaskRef{job->id, job->attempt, 0}, before + 1);
      grew = true;
    }
  }
}

}  // namespace tessera
