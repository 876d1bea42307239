// The REST API of tesserad (docs/daemon.md): routes each HTTP request to one tessera::Scheduler
// call after authenticating and authorising it, and encodes the result as JSON (the proto3 JSON
// mapping of the tessera.v1 messages) or, when the client asks, binary protobuf. No scheduling
// logic lives here.
//
// Thread safety: Handle may be called concurrently from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <variant>

#include "alerts.h"
#include "auth.h"
#include "http_codec.h"
#include "long_poll_slots.h"
#include "submit_rate_limiter.h"
#include "tessera/scheduler.h"
#include "tessera/v1/config.pb.h"

namespace tesserad {

class Api {
 public:
  // `scheduler` must outlive the Api. `stopping` turns true on SIGTERM: readiness fails and long
  // polls return early.
  // `alerts` (may be null) is shown on /metrics and must outlive the Api too.
  Api(tessera::Scheduler* scheduler, tessera::v1::DaemonConfig config,
      const std::atomic<bool>* stopping, const AlertMonitor* alerts = nullptr);

  // Answers `request`, blocking until it is answered (for a request AnswersAsync names, up to
  // its commit or its long poll's wait).
  ApiResponse Handle(const HttpRequest& request);

  // Whether `request` waits on the library, so that the server should answer it with
  // HandleAsync instead: job submits (their commit) and event long polls (new events).
  static bool AnswersAsync(const HttpRequest& request);
  // Answers a request for which AnswersAsync is true, without blocking: `respond` runs once,
  // possibly on a library thread (see Responder). The Canceller (may be null) ends a long
  // poll early, when its client has gone.
  Canceller HandleAsync(std::shared_ptr<const HttpRequest> request, Responder respond);

  // The JSON error body every failed request gets: {"code":"NOT_FOUND","message":"..."}.
  static HttpResponse Error(int http_status, std::string_view code, std::string_view message) {
    return ErrorResponse(http_status, code, message);
  }

 private:
  // The caller's principal, or the 401 refusing the request.
  std::variant<HttpResponse, Principal> Authenticate(const HttpRequest& request) const;

  tessera::Scheduler* scheduler_;
  const tessera::v1::DaemonConfig config_;
  TokenAuthenticator auth_;
  SubmitRateLimiter submit_limiter_;
  const std::atomic<bool>* stopping_;
  const AlertMonitor* alerts_;
  LongPollSlots long_polls_;
};

}  // namespace tesserad
