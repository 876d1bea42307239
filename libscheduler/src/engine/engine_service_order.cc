// Queues ordered by attained service: a job's band follows the service it has had, it is set
// when the job comes back in line after a run, and a job that waits too long returns to the
// first band. Running jobs' bands grow as they run; in a queue whose lower bands may preempt,
// the queue decides again when a running job crosses into a higher band.
#include "engine/engine.h"
#include "fairshare/service_bands.h"

namespace tessera {

const v1::AttainedServiceOrder* Engine::ServiceOrderOf(QueueId leaf) const {
  const v1::QueueSpec& spec = queues_.Spec(leaf);
  return spec.has_attained_service() ? &spec.attained_service() : nullptr;
}

int64_t Engine::TaskServiceGpuUs(const PlacedTask& task, TimestampUs now) {
  if (task.placed_us <= 0 || now <= task.placed_us) return 0;
  const int64_t gpu_milli = int64_t{task.allocation.gpu_count()} * task.allocation.gpu_milli;
  return gpu_milli * (now - task.placed_us) / 1000;
}

int64_t Engine::ServiceGpuUs(const JobRecord& job, TimestampUs now) const {
  int64_t service = job.attained_gpu_us;
  for (const PlacedTask& t : job.tasks) {
    if (!t.exited) service += TaskServiceGpuUs(t, now);
  }
  return service;
}

void Engine::RankByServiceOnRequeue(JobRecord& job, int64_t run_us) {
  const v1::AttainedServiceOrder* order = ServiceOrderOf(job.queue);
  if (order == nullptr || job.in_pending) return;
  job.key.band = ServiceBand(*order, job.attained_gpu_us);
  job.band_promotion_us = 0;
  if (job.key.band == 0) return;
  job.band_promotion_us = BandPromotionAt(*order, clock_.NowUs(), run_us).value_or(0);
  ArmBandPromotion(job);
}

void Engine::ArmBandPromotion(const JobRecord& job) {
  if (job.band_promotion_us <= 0 || job.key.band == 0) return;
  const uint64_t id = job.id;
  const int32_t attempt = job.attempt;
  timers_.Schedule(
      job.band_promotion_us, [this, id, attempt] { PromoteStarved(id, attempt); },
      [this, id, attempt] {
        const JobRecord* j = FindJob(id);
        return j != nullptr && j->attempt == attempt && j->key.band > 0 && !j->infeasible &&
               j->state == v1::PENDING;
      });
}

void Engine::PromoteStarved(uint64_t job_id, int32_t attempt) {
  JobRecord* job = FindJob(job_id);
  if (job == nullptr || job->attempt != attempt || job->state != v1::PENDING ||
      job->key.band == 0) {
    return;
  }
  const bool was_pending = job->in_pending;
  RemovePending(*job);
  job->key.band = 0;
  job->band_promotion_us = 0;
  if (was_pending) {
    AddPending(*job);
    // A new head of a queue that waits for capacity may preempt where the old one could not.
    queues_.UnblockCapacity(job->queue);
  }
  Persist(*job, MakeUpdateEvent(*job, "waited long after its last run: back in service band 0"));
}

void Engine::ArmServiceBandCrossing(const JobRecord& job) {
  const v1::AttainedServiceOrder* order = ServiceOrderOf(job.queue);
  if (order == nullptr || !order->preempt() || !job.preemptible) return;
  const TimestampUs now = clock_.NowUs();
  const int64_t service = ServiceGpuUs(job, now);
  const std::optional<int64_t> limit = NextBandLimitGpuUs(*order, service);
  int64_t gpu_milli = 0;
  for (const PlacedTask& t : job.tasks) {
    if (!t.exited) gpu_milli += int64_t{t.allocation.gpu_count()} * t.allocation.gpu_milli;
  }
  if (!limit || gpu_milli <= 0) return;
  // Service grows by gpu_milli / 1000 GPU-microseconds per microsecond.
  const TimestampUs at = now + ((*limit - service) * 1000 + gpu_milli - 1) / gpu_milli;
  const uint64_t id = job.id;
  const int32_t attempt = job.attempt;
  auto still_running = [this, id, attempt] {
    const JobRecord* j = FindJob(id);
    return j != nullptr && j->attempt == attempt && j->LiveTasks() > 0 && !j->preempting;
  };
  timers_.Schedule(
      at,
      [this, id, still_running] {
        if (!still_running()) return;
        const JobRecord& j = jobs_.at(id);
        queues_.UnblockCapacity(j.queue);
        host_.RequestDecisions();
        ArmServiceBandCrossing(j);  // the next limit, if any.
      },
      still_running);
}

}  // namespace tessera
