// Elastic growth: capacity that no pending job can use goes to running elastic jobs below
// their maximum, one step at a time, the job whose queue has the smallest share first. A step
// takes a job to the next task count its size rule allows (JobSpec.elastic.sizes; one task
// when it has none), all its tasks at once or none: a job never runs at a count it cannot use.
// When someone needs the room back, preemption shrinks these jobs first (it loses no work), so
// growing never keeps a newcomer out for long.
#include <algorithm>
#include <optional>

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
  // Round-robin, one step per job per round, so the first job does not take everything.
  bool grew = true;
  while (grew) {
    grew = false;
    for (JobRecord* job : growing) {
      const int before = job->LiveTasks();
      const std::optional<int> next = job->sizes.Above(before);
      if (!next) continue;
      const int step = *next - before;
      if (queues_.TasksWithinQuota(job->queue, job->shape.RequestVector(), step) < step) continue;
      const ModelsInQuota in_quota =
          ModelsWithinQuota(queues_, cluster_.models(), job->queue, job->shape, step);
      if (in_quota.narrowed && in_quota.models == 0) continue;
      std::optional<TaskShape> narrowed;
      if (in_quota.narrowed) {
        narrowed = job->shape;
        narrowed->models = in_quota.models;
      }
      reservation_filter_->SetPlacing(job->id, std::nullopt);
      placer_.SetBurstAccess(queues_.BurstRefusal(job->queue).empty(), SpotAllowed(*job));
      PlacementResult result =
          placer_.Place(narrowed ? *narrowed : job->shape, step, step, job->same_node);
      if (!result.placed() ||
          KeepWithinQuota(queues_, cluster_, job->queue, placer_, result, step)) {
        continue;
      }
      PlaceResult(job->queue, *job, std::move(result));
      executor_->Resize(TaskRef{job->id, job->attempt, 0}, *next);
      grew = true;
    }
  }
}

}  // namespace tessera
