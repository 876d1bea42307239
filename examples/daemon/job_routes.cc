#include "router.h"

#include <charconv>
#include <cstdio>
#include <utility>
#include <variant>

#include "tenant_view.h"

namespace tesserad {

namespace http = boost::beast::http;
using tessera::Status;

namespace {

std::string FormatRate(double per_second) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", per_second);
  return text;
}

// A refused submit. A queue's pending-jobs limit is a quota, not a full store: 429 with
// Retry-After, like the submit rate (docs/daemon.md), where the rest of RESOURCE_EXHAUSTED is 507.
HttpResponse SubmitRefusal(const HttpRequest& request, const Status& status) {
  if (status.code() != tessera::StatusCode::kResourceExhausted ||
      status.message().find("(max_pending_jobs)") == std::string::npos) {
    return ErrorFor(request, status);
  }
  HttpResponse response = ErrorResponse(429, "RESOURCE_EXHAUSTED", status.message());
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  response.set(http::field::retry_after, "1");
  return response;
}

}  // namespace

HttpResponse Router::JobNotFound(tessera::JobId id) {
  return ErrorFor(request_,
                  tessera::NotFoundError("job " + std::to_string(id) + " does not exist"));
}

tessera::v1::Job Router::ForCaller(tessera::v1::Job job) const {
  if (!principal_.admin) {
    job.mutable_status()->set_reason(WithoutOtherJobIds(job.status().reason(), job.id()));
  }
  return job;
}

std::optional<HttpResponse> Router::RefuseSpec(const tessera::v1::JobSpec& spec) const {
  if (!principal_.Owns(spec.queue())) {
    return Forbidden(request_, "queue \"" + spec.queue() + "\" is outside the token's queues \"" +
                                   principal_.queue_prefix + "\"");
  }
  const std::string& wanted =
      spec.priority_class().empty() ? config_.default_priority_class() : spec.priority_class();
  if (!principal_.MayUse(wanted)) {
    std::string granted;
    for (const std::string& c : principal_.priority_classes) {
      granted += (granted.empty() ? "" : ", ") + c;
    }
    return Forbidden(request_, "priority_class: '" + wanted + "' is not granted to the token (" +
                                   "granted: " + granted + ")");
  }
  return std::nullopt;
}

std::variant<HttpResponse, Router::Submission> Router::ReadSubmission() {
  Submission submission;
  if (Status s = ParseBody(request_, &submission.spec); !s.ok()) return ErrorFor(request_, s);
  if (std::optional<HttpResponse> refused = RefuseSpec(submission.spec)) {
    return std::move(*refused);
  }
  if (!principal_.admin &&
      !submit_limiter_.TryAcquire(principal_.token_digest, SubmitRateLimiter::Clock::now())) {
    HttpResponse response = ErrorResponse(
        429, "RESOURCE_EXHAUSTED",
        "submit rate: the token may submit " + FormatRate(submit_limiter_.per_second()) +
            " jobs per second (limits.submits_per_second); retry later");
    response.version(request_.version());
    response.keep_alive(request_.keep_alive());
    response.set(http::field::retry_after, "1");
    return response;
  }
  submission.options.idempotency_key = std::string(Sv(request_["Idempotency-Key"]));
  // Keys are the tenant's own: another tenant's key names no job of this one.
  if (!principal_.admin) submission.options.idempotency_scope = principal_.queue_prefix;
  return submission;
}

HttpResponse Router::SubmitJob() {
  auto read = ReadSubmission();
  if (auto* refused = std::get_if<HttpResponse>(&read)) return std::move(*refused);
  const Submission& s = std::get<Submission>(read);
  auto job = scheduler_.Submit(s.spec, s.options);
  if (!job.ok()) return SubmitRefusal(request_, job.status());
  return Reply(request_, *job);
}

void Router::SubmitJobAsync(std::shared_ptr<const HttpRequest> request, Responder respond) {
  auto read = ReadSubmission();
  if (auto* refused = std::get_if<HttpResponse>(&read)) {
    return respond([response = std::move(*refused)] { return ApiResponse(response); });
  }
  const Submission& s = std::get<Submission>(read);
  scheduler_.SubmitAsync(s.spec, s.options,
                         [request = std::move(request),
                          respond = std::move(respond)](tessera::StatusOr<tessera::v1::Job> job) {
                           respond([request, job = std::move(job)]() -> ApiResponse {
                             if (!job.ok()) return SubmitRefusal(*request, job.status());
                             return Reply(*request, *job);
                           });
                         });
}

HttpResponse Router::DryRunJob() {
  tessera::v1::JobSpec spec;
  if (Status s = ParseBody(request_, &spec); !s.ok()) return ErrorFor(request_, s);
  if (std::optional<HttpResponse> refused = RefuseSpec(spec)) return std::move(*refused);
  auto result = scheduler_.DryRun(spec);
  if (!result.ok()) return SubmitRefusal(request_, result.status());
  if (!principal_.admin) {
    // A tenant learns that its job would stop work of others, and why, but not whose.
    result->set_reason(WithoutOtherJobIds(result->reason(), 0));
    for (tessera::v1::DryRunVictim& victim : *result->mutable_victims()) {
      if (principal_.Owns(victim.queue())) continue;
      victim.set_job_id(0);
      victim.clear_queue();
      victim.set_reason(WithoutOtherJobIds(victim.reason(), 0));
    }
  }
  return Reply(request_, *result);
}

HttpResponse Router::JobRoute(std::string_view rest) {
  bool cancel = false;
  constexpr std::string_view kCancel = ":cancel";
  if (rest.size() > kCancel.size() && rest.substr(rest.size() - kCancel.size()) == kCancel) {
    cancel = true;
    rest.remove_suffix(kCancel.size());
  }
  tessera::JobId id = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), id);
  if (ec != std::errc() || p != rest.data() + rest.size()) {
    return ErrorFor(request_, tessera::NotFoundError("no job \"" + std::string(rest) + "\""));
  }
  if (cancel && request_.method() != http::verb::post) return MethodNotAllowed(request_, "POST");
  if (!cancel && request_.method() != http::verb::get) return MethodNotAllowed(request_, "GET");
  auto job = scheduler_.GetJob(id);
  if (!job.ok() && job.status().code() == tessera::StatusCode::kNotFound) return JobNotFound(id);
  if (!job.ok()) return ErrorFor(request_, job.status());
  // Another tenant's job does not exist as far as this caller can tell.
  if (!principal_.Owns(job->spec().queue())) return JobNotFound(id);
  if (!cancel) return Reply(request_, ForCaller(*std::move(job)));
  auto cancelled = scheduler_.Cancel(id);
  if (!cancelled.ok()) return ErrorFor(request_, cancelled.status());
  return Reply(request_, ForCaller(*std::move(cancelled)));
}

// The job a submit with this Idempotency-Key made, in the caller's scope (a tenant's queue
// prefix, as at submit), as a list of one job, or of none.
HttpResponse Router::JobByIdempotencyKey(const std::string& key) {
  auto job =
      scheduler_.GetJobByIdempotencyKey(key, principal_.admin ? "" : principal_.queue_prefix);
  tessera::v1::ListJobsResponse found;
  if (job.ok()) {
    *found.add_jobs() = ForCaller(*std::move(job));
  } else if (job.status().code() != tessera::StatusCode::kNotFound) {
    return ErrorFor(request_, job.status());
  }
  return Reply(request_, found);
}

HttpResponse Router::ListJobs(const Query& query) {
  if (std::optional<std::string> key = First(query, "idempotency_key")) {
    if (query.size() > 1) {
      return ErrorFor(request_, tessera::InvalidFieldError(
                                    "idempotency_key", "cannot be combined with other parameters"));
    }
    return JobByIdempotencyKey(*key);
  }
  tessera::v1::ListJobsRequest list;
  list.set_queue(First(query, "queue").value_or(""));
  for (auto [it, end] = query.equal_range("state"); it != end; ++it) {
    std::string_view states = it->second;
    while (!states.empty()) {
      size_t comma = states.find(',');
      std::string name(states.substr(0, comma));
      states = comma == std::string_view::npos ? std::string_view() : states.substr(comma + 1);
      tessera::v1::JobState state;
      if (!tessera::v1::JobState_Parse(name, &state)) {
        return ErrorFor(request_,
                        tessera::InvalidArgumentError("state: unknown job state \"" + name + "\""));
      }
      list.add_states(state);
    }
  }
  for (auto [it, end] = query.equal_range("label"); it != end; ++it) {
    size_t eq = it->second.find('=');
    if (eq == std::string::npos) {
      return ErrorFor(request_, tessera::InvalidArgumentError("label: expected key=value, got \"" +
                                                              it->second + "\""));
    }
    (*list.mutable_labels())[it->second.substr(0, eq)] = it->second.substr(eq + 1);
  }
  auto page_size = QueryInt<int32_t>(query, "page_size", 0);
  if (!page_size.ok()) return ErrorFor(request_, page_size.status());
  list.set_page_size(*page_size);
  list.set_page_token(First(query, "page_token").value_or(""));
  if (!principal_.admin) {
    const std::string& prefix = principal_.queue_prefix;
    if (list.queue().empty()) {
      // The tenant's whole subtree: its prefix is either a leaf (exact match) or has children
      // (a subtree filter); a queue holding jobs cannot have children.
      auto queues = scheduler_.ListQueues();
      if (!queues.ok()) return ErrorFor(request_, queues.status());
      bool has_children = false;
      for (const auto& q : *queues) {
        if (q.spec().name().size() > prefix.size() && principal_.Owns(q.spec().name())) {
          has_children = true;
        }
      }
      list.set_queue(has_children ? prefix + "/" : prefix);
    } else {
      std::string_view queue = list.queue();
      if (queue.back() == '/') queue.remove_suffix(1);
      if (!principal_.Owns(queue)) {
        return Forbidden(request_, "queue \"" + list.queue() +
                                       "\" is outside the token's queues \"" + prefix + "\"");
      }
    }
  }
  auto jobs = scheduler_.ListJobs(list);
  if (!jobs.ok()) return ErrorFor(request_, jobs.status());
  for (tessera::v1::Job& job : *jobs->mutable_jobs()) job = ForCaller(std::move(job));
  return Reply(request_, *jobs);
}

}  // namespace tesserad
