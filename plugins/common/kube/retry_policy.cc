#include "kube/retry_policy.h"

#include <algorithm>

namespace tessera::kube {

std::chrono::milliseconds RetryPolicy::Ceiling(int failed_attempts) const {
  const int doublings = std::clamp(failed_attempts - 1, 0, 30);
  const long double ceiling = static_cast<long double>(initial_backoff.count()) *
                              static_cast<long double>(1LL << doublings);
  return std::chrono::milliseconds(
      static_cast<long long>(std::min(ceiling, static_cast<long double>(max_backoff.count()))));
}

std::chrono::milliseconds RetryPolicy::Delay(int failed_attempts, const KubeError& error,
                                             std::mt19937_64& random) const {
  const auto ceiling = Ceiling(failed_attempts);
  std::uniform_int_distribution<long long> jitter(0, std::max<long long>(ceiling.count(), 0));
  std::chrono::milliseconds delay(jitter(random));
  if (error.retry_after) {
    const auto asked = std::min<std::chrono::milliseconds>(
        std::chrono::duration_cast<std::chrono::milliseconds>(*error.retry_after), max_retry_after);
    delay = std::max(delay, asked);
  }
  return delay;
}

bool ShouldRetry(std::string_view method, const KubeError& error, bool create_is_recoverable) {
  if (!error.Retryable()) return false;
  if (method == "POST") {
    // A 429 was refused before it ran, an unsent request never reached the server; anything
    // else may have created the object.
    return error.kind == KubeErrorKind::kTooManyRequests || error.unsent || create_is_recoverable;
  }
  return method == "GET" || method == "PUT" || method == "PATCH" || method == "DELETE" ||
         method == "HEAD";
}

}  // namespace tessera::kube
