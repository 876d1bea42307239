// One authenticated request on its way to the scheduler: Route picks the handler by path and
// method, each handler checks what the caller's Principal may see and change, makes one
// tessera::Scheduler call and encodes its result (http_codec.h). The handlers live in one file
// per resource: job_routes.cc, queue_routes.cc, node_routes.cc, event_routes.cc,
// admin_routes.cc. POST /v1/jobs and GET /v1/events answer asynchronously
// (SubmitJobAsync, WatchEventsAsync).
//
// Thread safety: a Router serves one request on one thread; many may run at once.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "alerts.h"
#include "auth.h"
#include "http_codec.h"
#include "long_poll_slots.h"
#include "submit_rate_limiter.h"
#include "tessera/scheduler.h"
#include "tessera/v1/config.pb.h"

namespace tesserad {

class Router {
 public:
  Router(tessera::Scheduler& scheduler, const tessera::v1::DaemonConfig& config,
         const std::atomic<bool>& stopping, const AlertMonitor* alerts,
         SubmitRateLimiter& submit_limiter, const HttpRequest& request, Principal principal)
      : scheduler_(scheduler),
        config_(config),
        stopping_(stopping),
        alerts_(alerts),
        submit_limiter_(submit_limiter),
        request_(request),
        principal_(std::move(principal)) {}

  // `path` without the query string.
  ApiResponse Route(std::string_view path, const Query& query);

  // POST /v1/jobs without a thread waiting for the commit (Scheduler::SubmitAsync). `respond`
  // runs once, possibly on a library thread, with a function that encodes the response: call it
  // where encoding should cost. `request` is the router's request, kept alive for the reply.
  void SubmitJobAsync(std::shared_ptr<const HttpRequest> request, Responder respond);

  // GET /v1/events as a long poll that holds no thread (Scheduler::WatchEventsAsync), bounded
  // per token by `slots` (429 past it). `respond` runs once, possibly on a library thread. The
  // returned Canceller (null when answered at once) ends the wait early.
  Canceller WatchEventsAsync(std::shared_ptr<const HttpRequest> request, const Query& query,
                             LongPollSlots& slots, Responder respond);

 private:
  // job_routes.cc
  struct Submission {
    tessera::v1::JobSpec spec;
    tessera::SubmitOptions options;
  };
  // The submit the request asks for, or the response refusing it (bad body, foreign queue,
  // priority class not granted, submit rate exceeded).
  std::variant<HttpResponse, Submission> ReadSubmission();
  // The 403 for a spec the caller may not submit (a queue outside its token's, a priority class
  // not granted), or nullopt. Submits and dry runs both ask.
  std::optional<HttpResponse> RefuseSpec(const tessera::v1::JobSpec& spec) const;
  // The reply to GET or cancel of a job that does not exist or that the caller may not see:
  // the same bytes in both cases but for the id, so that ids are no oracle.
  HttpResponse JobNotFound(tessera::JobId id);
  // What a tenant sees of its own job: status.reason without the ids of other jobs.
  tessera::v1::Job ForCaller(tessera::v1::Job job) const;
  HttpResponse SubmitJob();
  // POST /v1/jobs:dryRun: what a submit of the body would do now (Scheduler::DryRun), with the
  // submit's authorisation and errors; other tenants' victims and job ids are hidden.
  HttpResponse DryRunJob();
  HttpResponse JobRoute(std::string_view rest);  // /v1/jobs/{id}[:cancel]
  // GET /v1/jobs, or with ?idempotency_key=K alone the job that key made (JobByIdempotencyKey).
  HttpResponse ListJobs(const Query& query);
  HttpResponse JobByIdempotencyKey(const std::string& key);

  // queue_routes.cc
  HttpResponse ListQueues();
  HttpResponse QueueRoute(const std::string& name);  // /v1/queues/{name}
  // POST /v1/queues (path_name empty) creates; PUT /v1/queues/{name} updates.
  HttpResponse WriteQueue(const std::string& path_name);

  // node_routes.cc
  HttpResponse ListNodes();
  HttpResponse ListBackends();
  HttpResponse NodeRoute(std::string_view rest);  // /v1/nodes/{name}:{action}

  // admin_routes.cc
  ApiResponse Backup();
  HttpResponse CheckStore(const Query& query);  // ?level=quick (default) or full

  tessera::Scheduler& scheduler_;
  const tessera::v1::DaemonConfig& config_;
  const std::atomic<bool>& stopping_;
  const AlertMonitor* alerts_;
  SubmitRateLimiter& submit_limiter_;
  const HttpRequest& request_;
  const Principal principal_;
};

}  // namespace tesserad
