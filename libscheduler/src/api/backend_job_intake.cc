// Jobs that backends submit (BackendEvent SUBMIT_JOB / WITHDRAW_JOB): a job source such as the
// Kubernetes backend takes in pods that name Tessera as their scheduler and hands each to the
// scheduler as a job, keyed by an external id in the backend's own idempotency scope
// (model/job_source.h). The same id submitted again (after a restart of either side) is the same
// job; a withdrawn id cancels it.
#include "api/idempotency_key.h"
#include "api/scheduler_impl.h"
#include "common/log.h"
#include "model/job_source.h"

namespace tessera {
namespace {

// "<namespace>/<name>/<uid>" of a Kubernetes pod fits; longer is a plugin's mistake.
constexpr size_t kMaxExternalIdBytes = 512;

std::string ExternalIdError(const std::string& external_id) {
  if (external_id.empty()) return "external_id: required";
  if (external_id.size() > kMaxExternalIdBytes) {
    return "external_id: longer than " + std::to_string(kMaxExternalIdBytes) + " bytes";
  }
  return "";
}

}  // namespace

void SchedulerImpl::SubmitFromBackend(const std::string& backend, const v1::JobSpec& job,
                                      const std::string& external_id) {
  if (const std::string error = ExternalIdError(external_id); !error.empty()) {
    LogWarning(options_.log, "backend '{}' submitted a job the scheduler refused: {}", backend,
               error);
    return;
  }
  SubmitOptions options;
  options.idempotency_key = external_id;
  options.idempotency_scope = BackendSubmitScope(backend);
  SubmitAsync(job, options, [log = options_.log, backend, external_id](StatusOr<v1::Job> done) {
    if (!done.ok()) {
      LogWarning(log, "backend '{}' submitted '{}', which the scheduler refused: {}", backend,
                 external_id, done.status().ToString());
    } else {
      LogDebug(log, "backend '{}' submitted '{}' as job {}", backend, external_id, done->id());
    }
  });
}

void SchedulerImpl::WithdrawFromBackend(const std::string& backend,
                                        const std::string& external_id) {
  if (!ExternalIdError(external_id).empty()) return;
  SubmitOptions keys;
  keys.idempotency_key = external_id;
  keys.idempotency_scope = BackendSubmitScope(backend);
  StatusOr<std::string> stored = StoredIdempotencyKey(keys);
  if (!stored.ok()) return;
  // Looked up in a write, which the store runs in order: after the submit of the same id, if it
  // came first, so a pod made and deleted at once still cancels its job. The job reached the
  // engine in that submit's completion, which was posted to the strand before this one.
  auto id = std::make_shared<std::optional<uint64_t>>();
  store_->Write(
      [key = *stored, id](store::WriteTransaction& t) -> Status {
        TESSERA_ASSIGN_OR_RETURN(*id, t.FindJobByIdempotencyKey(key));
        return Status::Ok();
      },
      [this, backend, external_id, id](const Status& status) {
        if (!status.ok() || !id->has_value()) {
          LogDebug(options_.log, "backend '{}' withdrew '{}', which has no job", backend,
                   external_id);
          return;
        }
        const uint64_t job = **id;
        Post([this, job, backend, external_id] {
          engine_->CancelJob(job, [log = options_.log, job, backend,
                                   external_id](StatusOr<v1::JobStatus> cancelled) {
            if (!cancelled.ok() && cancelled.status().code() != StatusCode::kNotFound) {
              LogDebug(log, "backend '{}' withdrew '{}' (job {}): {}", backend, external_id, job,
                       cancelled.status().ToString());
            }
          });
        });
      });
}

}  // namespace tessera
