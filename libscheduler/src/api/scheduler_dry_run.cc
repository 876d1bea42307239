// SchedulerImpl::DryRun: a submit's checks and the engine's decision for a spec, with nothing
// stored. The spec passes the checks a submit passes, in the same order and with the same
// errors (api/job_admission.h): its fields and class on the caller's thread, its queue in the
// store's writer, which orders it among the submits around it and only reads for it (no row,
// no event, no job id). Then the engine plans it on the decision strand
// (engine/dry_run_planner.cc). No idempotency key is looked up or kept.
#include "api/job_admission.h"
#include "api/scheduler_impl.h"

namespace tessera {

StatusOr<v1::DryRunResult> SchedulerImpl::DryRun(const v1::JobSpec& submitted) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  v1::Job job;
  *job.mutable_spec() = submitted;
  // A job that names no queue goes to the default queue, when there is one (as SubmitAsync).
  if (submitted.queue().empty() && !options_.default_queue.empty()) {
    job.mutable_spec()->set_queue(options_.default_queue);
  }
  const v1::JobSpec& spec = job.spec();
  TESSERA_ASSIGN_OR_RETURN(PriorityClass priority, CheckJobSpec(options_, spec));
  const int64_t default_max_pending = options_.max_pending_jobs_per_queue;
  TESSERA_RETURN_IF_ERROR(
      store_->WriteAndWait([&spec, default_max_pending](store::WriteTransaction& t) {
        return CheckQueueAdmission(t, spec, default_max_pending);
      }));
  v1::JobStatus* status = job.mutable_status();
  status->set_state(v1::PENDING);
  status->set_submit_time_us(clock_->NowUs());
  status->set_attempt(1);
  status->set_priority(priority.value);
  status->set_preemptible(priority.preemptible);
  return Call<StatusOr<v1::DryRunResult>>([&] { return engine_->DryRun(job); }, ShuttingDown());
}

}  // namespace tessera
