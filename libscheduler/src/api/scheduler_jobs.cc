// SchedulerImpl: the job API (submit, cancel, get, list, watch).
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <thread>

#include "api/idempotency_key.h"
#include "api/job_admission.h"
#include "api/scheduler_impl.h"
#include "api/validation.h"
#include "tessera/job.h"

namespace tessera {
namespace {

constexpr int kMaxWatchEvents = 10000;

// A page token is "<last job id>.<filter fingerprint>": the fingerprint binds it to the filter
// (queue, states, labels) it was issued for, so a token reused with another filter is refused
// instead of silently skipping jobs. The page size may change between pages.
std::string FilterFingerprint(const v1::ListJobsRequest& request, const std::string& queue) {
  std::vector<int> states(request.states().begin(), request.states().end());
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
  const std::map<std::string, std::string> labels(request.labels().begin(), request.labels().end());
  std::string canonical = queue + '\0';
  for (int state : states) canonical += std::to_string(state) + ',';
  canonical += '\0';
  for (const auto& [key, value] : labels) {
    canonical +=
        std::to_string(key.size()) + ':' + key + std::to_string(value.size()) + ':' + value;
  }
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bit.
  for (unsigned char c : canonical) hash = (hash ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

// The store's token (the last job id) from a ListJobs token, when it was issued for this filter.
StatusOr<std::string> StoreToken(const std::string& token, const std::string& fingerprint) {
  const size_t dot = token.find('.');
  uint64_t id = 0;
  if (dot != std::string::npos) {
    auto [end, ec] = std::from_chars(token.data(), token.data() + dot, id);
    if (ec == std::errc() && end == token.data() + dot && dot > 0) {
      if (token.substr(dot + 1) == fingerprint) return token.substr(0, dot);
      return InvalidFieldError("page_token",
                               "was issued for a different filter (queue, states or labels); "
                               "start again without a token");
    }
  }
  return InvalidFieldError("page_token", "'" + token + "' is not a token returned by ListJobs");
}

}  // namespace

void SchedulerImpl::SubmitAsync(const v1::JobSpec& submitted, const SubmitOptions& options,
                                std::function<void(StatusOr<v1::Job>)> done) {
  if (Status open = CheckOpen(); !open.ok()) return done(open);
  // A job that names no queue goes to the default queue, when there is one.
  v1::JobSpec in_default_queue;
  const bool to_default = submitted.queue().empty() && !options_.default_queue.empty();
  if (to_default) {
    in_default_queue = submitted;
    in_default_queue.set_queue(options_.default_queue);
  }
  const v1::JobSpec& spec = to_default ? in_default_queue : submitted;
  StatusOr<PriorityClass> priority = CheckJobSpec(options_, spec);
  if (!priority.ok()) return done(priority.status());
  StatusOr<std::string> stored_key = StoredIdempotencyKey(options);
  if (!stored_key.ok()) return done(stored_key.status());

  const TimestampUs now = clock_->NowUs();
  auto job = std::make_shared<v1::Job>();
  *job->mutable_spec() = spec;
  job->set_idempotency_key(*stored_key);
  v1::JobStatus* status = job->mutable_status();
  status->set_state(v1::PENDING);
  status->set_submit_time_us(now);
  status->set_attempt(1);
  status->set_priority(priority->value);
  status->set_preemptible(priority->preemptible);
  {
    std::shared_ptr<const FeasibilityChecker> feasibility;
    {
      std::lock_guard<std::mutex> lock(feasibility_mu_);
      feasibility = feasibility_;
    }
    if (std::optional<std::string> why =
            feasibility->Check(FeasibilityQuery::FromSpec(spec, feasibility->label_dictionary()))) {
      status->set_infeasible(true);
      status->set_reason(*why);
    }
  }

  struct Outcome {
    v1::Job job;
    uint64_t id = 0;
    bool created = false;
    // Serialized here, on the caller's thread, so that the store writer (the busier thread)
    // only binds bytes.
    std::string spec_bytes;
    std::string status_bytes;
  };
  auto outcome = std::make_shared<Outcome>();
  outcome->spec_bytes = job->spec().SerializeAsString();
  outcome->status_bytes = job->status().SerializeAsString();
  const int32_t priority_value = priority->value;
  const int64_t default_max_pending = options_.max_pending_jobs_per_queue;
  store_->Write(
      [job, outcome, now, priority_value,
       default_max_pending](store::WriteTransaction& t) -> Status {
        const std::string& key = job->idempotency_key();
        if (!key.empty()) {
          TESSERA_ASSIGN_OR_RETURN(std::optional<uint64_t> existing,
                                   t.FindJobByIdempotencyKey(key));
          if (existing) {
            TESSERA_ASSIGN_OR_RETURN(outcome->job, t.ReadJob(*existing));
            if (!google::protobuf::util::MessageDifferencer::Equals(outcome->job.spec(),
                                                                    job->spec())) {
              return AlreadyExistsError("idempotency_key: '" + UnscopedIdempotencyKey(key) +
                                        "' was used by job " + std::to_string(*existing) +
                                        " with a different spec");
            }
            return Status::Ok();
          }
        }
        TESSERA_RETURN_IF_ERROR(CheckQueueAdmission(t, job->spec(), default_max_pending));
        const std::string& queue = job->spec().queue();
        TESSERA_ASSIGN_OR_RETURN(
            uint64_t id,
            t.InsertJob(*job, priority_value, now, outcome->spec_bytes, outcome->status_bytes));
        v1::Event event;
        event.set_time_us(now);
        event.set_kind(v1::JOB_STATE_CHANGED);
        event.set_job_id(id);
        event.set_to_state(v1::PENDING);
        event.set_queue(queue);
        event.set_attempt(1);
        event.set_reason(job->status().infeasible()
                             ? "submitted; infeasible: " + job->status().reason()
                             : "submitted");
        TESSERA_RETURN_IF_ERROR(t.AppendEvent(event).status());
        outcome->id = id;
        outcome->created = true;
        return Status::Ok();
      },
      [this, job, outcome, done = std::move(done)](const Status& status) {
        if (!status.ok()) return done(status);
        if (outcome->created) {
          // The write may run more than once, so the job is moved (not copied) only here.
          outcome->job = std::move(*job);
          outcome->job.set_id(outcome->id);
          // Hand the job to the engine before acknowledging it, so that a cancel sent right
          // after the acknowledgement finds it there.
          HandToEngine(std::shared_ptr<const v1::Job>(outcome, &outcome->job));
        }
        v1::Job reply = outcome->job;
        reply.set_idempotency_key(UnscopedIdempotencyKey(reply.idempotency_key()));
        done(std::move(reply));
      });
}

void SchedulerImpl::HandToEngine(std::shared_ptr<const v1::Job> job) {
  std::lock_guard<std::mutex> lock(arrivals_mu_);
  // Posted under the lock, so no submit acknowledged after this one is pushed can have a
  // request (a cancel) reach the strand before the task that hands its job over.
  if (arrivals_.empty()) {
    Post([this] {
      std::vector<std::shared_ptr<const v1::Job>> arrived;
      {
        std::lock_guard<std::mutex> inner(arrivals_mu_);
        arrived.swap(arrivals_);
      }
      for (const auto& job : arrived) engine_->AddJob(*job);
    });
  }
  arrivals_.push_back(std::move(job));
}

StatusOr<v1::Job> SchedulerImpl::Submit(const v1::JobSpec& spec, const SubmitOptions& options) {
  auto waiter = std::make_shared<Waiter<StatusOr<v1::Job>>>();
  SubmitAsync(spec, options,
              [waiter](StatusOr<v1::Job> result) { waiter->Set(std::move(result)); });
  return waiter->Wait();
}

StatusOr<v1::Job> SchedulerImpl::Cancel(JobId id) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  // The engine may not hold a job whose submit committed an instant ago; retry briefly.
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto waiter = std::make_shared<Waiter<StatusOr<v1::JobStatus>>>();
    Post([this, id, waiter] {
      engine_->CancelJob(id, [waiter](StatusOr<v1::JobStatus> r) { waiter->Set(std::move(r)); });
    });
    StatusOr<v1::JobStatus> result = waiter->Wait();
    if (result.ok()) return GetJob(id);
    if (result.status().code() != StatusCode::kNotFound) return result.status();
    TESSERA_ASSIGN_OR_RETURN(v1::Job stored, store_->GetJob(id));
    if (IsTerminal(stored.status().state())) {
      return FailedPreconditionError("job " + std::to_string(id) + " already " +
                                     std::string(JobStateName(stored.status().state())));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return UnavailableError("job " + std::to_string(id) +
                          " is not yet known to the engine; try again");
}

StatusOr<v1::Job> SchedulerImpl::GetJob(JobId id) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  StatusOr<v1::Job> job = store_->GetJob(id);
  if (job.ok()) {
    waiting_reasons_.Apply(*job);
    job->set_idempotency_key(UnscopedIdempotencyKey(job->idempotency_key()));
  }
  return job;
}

StatusOr<v1::Job> SchedulerImpl::GetJobByIdempotencyKey(const std::string& idempotency_key,
                                                        const std::string& idempotency_scope) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  if (idempotency_key.empty()) return InvalidFieldError("idempotency_key", "required");
  SubmitOptions keys;
  keys.idempotency_key = idempotency_key;
  keys.idempotency_scope = idempotency_scope;
  TESSERA_ASSIGN_OR_RETURN(std::string stored_key, StoredIdempotencyKey(keys));
  StatusOr<v1::Job> job = store_->GetJobByIdempotencyKey(stored_key);
  if (job.status().code() == StatusCode::kNotFound) {
    return NotFoundError("idempotency_key: no job has the key '" + idempotency_key + "'");
  }
  if (job.ok()) {
    waiting_reasons_.Apply(*job);
    job->set_idempotency_key(UnscopedIdempotencyKey(job->idempotency_key()));
  }
  return job;
}

StatusOr<v1::ListJobsResponse> SchedulerImpl::ListJobs(const v1::ListJobsRequest& request) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  // A queue filter names an existing queue ("org" or "org/") and means its subtree.
  std::string queue = request.queue();
  if (!queue.empty()) {
    if (queue.back() == '/') queue.pop_back();
    TESSERA_RETURN_IF_ERROR(ValidateQueueName(queue, "queue"));
    StatusOr<v1::Queue> named = GetQueue(queue);
    if (!named.ok() && named.status().code() == StatusCode::kNotFound) {
      return NotFoundError("queue: '" + queue + "' does not exist");
    }
    TESSERA_RETURN_IF_ERROR(named.status());
  }
  const std::string fingerprint = FilterFingerprint(request, queue);
  v1::ListJobsRequest store_request = request;
  if (!queue.empty()) store_request.set_queue(queue + "/");
  if (!request.page_token().empty()) {
    TESSERA_ASSIGN_OR_RETURN(std::string store_token,
                             StoreToken(request.page_token(), fingerprint));
    store_request.set_page_token(store_token);
  }
  StatusOr<v1::ListJobsResponse> page = store_->ListJobs(store_request);
  if (page.ok()) {
    for (v1::Job& job : *page->mutable_jobs()) {
      waiting_reasons_.Apply(job);
      job.set_idempotency_key(UnscopedIdempotencyKey(job.idempotency_key()));
    }
    if (!page->next_page_token().empty()) {
      page->set_next_page_token(page->next_page_token() + "." + fingerprint);
    }
  }
  return page;
}

namespace {

Status ValidateWatch(int max_events, std::chrono::milliseconds wait) {
  if (max_events <= 0 || max_events > kMaxWatchEvents) {
    return InvalidFieldError("max_events", "must be between 1 and " +
                                               std::to_string(kMaxWatchEvents) + ", got " +
                                               std::to_string(max_events));
  }
  if (wait.count() < 0) return InvalidFieldError("wait", "must be >= 0");
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<v1::Event>> SchedulerImpl::WatchEvents(uint64_t after_seq, int max_events,
                                                            std::chrono::milliseconds wait) {
  TESSERA_RETURN_IF_ERROR(CheckOpen());
  TESSERA_RETURN_IF_ERROR(ValidateWatch(max_events, wait));
  StatusOr<std::vector<v1::Event>> events = store_->ReadEvents(after_seq, max_events, wait);
  // Close ended the wait.
  if (!events.ok() && closing_) return CheckOpen();
  return events;
}

uint64_t SchedulerImpl::WatchEventsAsync(
    uint64_t after_seq, int max_events, std::chrono::milliseconds wait,
    std::function<void(StatusOr<std::vector<v1::Event>>)> done) {
  Status invalid = CheckOpen();
  if (invalid.ok()) invalid = ValidateWatch(max_events, wait);
  if (!invalid.ok()) {
    event_watches_->Reject(std::move(invalid), std::move(done));
    return 0;
  }
  return event_watches_->Start(after_seq, max_events, wait, std::move(done));
}

void SchedulerImpl::CancelEventWatch(uint64_t id) { event_watches_->Cancel(id); }

}  // namespace tessera
