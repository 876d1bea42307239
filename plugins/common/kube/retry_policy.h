// RetryPolicy: when a failed API call is sent again, and after how long. Retried are 429 (the
// server's Retry-After, header or Status.details.retryAfterSeconds, is the least wait), 5xx and
// transport failures (connection refused or reset, a deadline on one attempt), for verbs that
// may run twice without harm: GET, PUT (it carries a resourceVersion or replaces with the same
// body), PATCH with the same body, and DELETE (a second delete gets 404, which the caller can
// treat as done). A POST (create) is retried only on 429, on a failure before
// anything was sent (KubeError::unsent), or when the caller can recognise its
// own object after a lost reply (kube_client.h, CreateOptions::is_ours). 4xx other than 429
// are answers, never retried; 401 is handled apart (the token is re-read once).
//
// The wait before attempt n+1 is "full jitter" (AWS architecture blog, "Exponential Backoff
// and Jitter"): uniform in [0, min(max_backoff, initial_backoff * 2^n)], so that many clients
// throttled at once do not come back at once. A plain value; Delay() takes the random source.
#pragma once

#include <chrono>
#include <random>
#include <string_view>

#include "kube/kube_error.h"

namespace tessera::kube {

struct RetryPolicy {
  // Attempts in all, the first included; 1 means never retry.
  int max_attempts = 5;
  std::chrono::milliseconds initial_backoff = std::chrono::milliseconds(100);
  std::chrono::milliseconds max_backoff = std::chrono::seconds(10);
  // A Retry-After longer than this is cut to it (a server asking for minutes should not stall
  // a scheduler's decision loop; the call fails instead after its attempts).
  std::chrono::milliseconds max_retry_after = std::chrono::seconds(30);

  // The wait before the attempt after `failed_attempts` failures (1 for the first retry):
  // full jitter, and never less than the error's Retry-After.
  std::chrono::milliseconds Delay(int failed_attempts, const KubeError& error,
                                  std::mt19937_64& random) const;
  // The upper end of the jitter range for that attempt (tests).
  std::chrono::milliseconds Ceiling(int failed_attempts) const;
};

// Whether `error` from a `method` request may be sent again as it is. `create_is_recoverable`:
// the caller of a POST can tell its own object apart (an AlreadyExists after a lost reply is
// then success), so any retryable failure of it is retried.
bool ShouldRetry(std::string_view method, const KubeError& error, bool create_is_recoverable);

}  // namespace tessera::kube
