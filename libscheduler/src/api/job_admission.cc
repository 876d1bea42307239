#include "api/job_admission.h"

#include <string>

#include "api/validation.h"

namespace tessera {

StatusOr<PriorityClass> CheckJobSpec(const Options& options, const v1::JobSpec& spec) {
  TESSERA_RETURN_IF_ERROR(ValidateJobSpec(spec, options.job_size_limits));
  return ResolvePriorityClass(options, spec.priority_class());
}

Status CheckQueueAdmission(store::WriteTransaction& t, const v1::JobSpec& spec,
                           int64_t default_max_pending) {
  const std::string& queue = spec.queue();
  TESSERA_ASSIGN_OR_RETURN(store::WriteTransaction::QueueShape shape, t.GetQueueShape(queue));
  if (!shape.exists) return NotFoundError("queue: '" + queue + "' does not exist");
  if (shape.has_children) {
    return FailedPreconditionError("queue: '" + queue +
                                   "' has child queues; submit to a leaf queue");
  }
  // Counted in the writer, which orders every submit: concurrent submits cannot pass it.
  const int64_t max_pending =
      shape.max_pending_jobs > 0 ? shape.max_pending_jobs : default_max_pending;
  if (max_pending > 0) {
    TESSERA_ASSIGN_OR_RETURN(int64_t pending, t.CountPendingJobs(queue, max_pending));
    if (pending >= max_pending) {
      return ResourceExhaustedError(
          "queue '" + queue + "' holds " + std::to_string(max_pending) +
          " pending jobs, its limit (max_pending_jobs); retry when some have started");
    }
  }
  // A job may exempt itself from idle-GPU reclaim only where the policy that holds for it
  // (the nearest queue on its path that sets one) allows it: a tenant cannot grant itself
  // what the admin did not.
  if (spec.idle_gpu_exempt()) {
    for (std::string q = queue; !q.empty();) {
      // Remembered in the transaction: the leaf's costs no second read.
      TESSERA_ASSIGN_OR_RETURN(store::WriteTransaction::QueueShape on_path, t.GetQueueShape(q));
      if (on_path.has_idle_gpus) {
        if (on_path.idle_gpus_on && !on_path.idle_gpu_exemption_allowed) {
          return PermissionDeniedError(
              "idle_gpu_exempt: queue '" + q +
              "' does not allow jobs to exempt themselves from its idle-GPU policy "
              "(idle_gpus.allow_exemption)");
        }
        break;
      }
      const size_t slash = q.rfind('/');
      q = slash == std::string::npos ? std::string() : q.substr(0, slash);
    }
  }
  // A parent's max_pending_jobs bounds its whole subtree (a tenant's, say).
  for (size_t slash = queue.rfind('/'); slash != std::string::npos && slash > 0;
       slash = queue.rfind('/', slash - 1)) {
    const std::string parent = queue.substr(0, slash);
    TESSERA_ASSIGN_OR_RETURN(store::WriteTransaction::QueueShape above, t.GetQueueShape(parent));
    if (above.max_pending_jobs <= 0) continue;
    TESSERA_ASSIGN_OR_RETURN(int64_t pending,
                             t.CountPendingJobsUnder(parent, above.max_pending_jobs));
    if (pending >= above.max_pending_jobs) {
      return ResourceExhaustedError(
          "queue '" + parent + "' holds " + std::to_string(above.max_pending_jobs) +
          " pending jobs in its subtree, its limit (max_pending_jobs); retry when some "
          "have started");
    }
  }
  return Status::Ok();
}

}  // namespace tessera
