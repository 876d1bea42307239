#include "submit_rate_limiter.h"

#include <algorithm>

namespace tesserad {

bool SubmitRateLimiter::TryAcquire(const std::string& token, Clock::time_point now) {
  if (per_second_ <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, first] = buckets_.try_emplace(token, Bucket{static_cast<double>(burst_), now});
  Bucket& bucket = it->second;
  if (!first) {
    const double elapsed = std::chrono::duration<double>(now - bucket.refilled).count();
    bucket.tokens = std::min<double>(burst_, bucket.tokens + elapsed * per_second_);
    bucket.refilled = now;
  }
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

}  // namespace tesserad
