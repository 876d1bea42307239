// Per-token limit on job submits (limits.submits_per_second and limits.submit_burst in the
// daemon configuration): a token bucket for each token that holds `burst` submits, refilled at
// `per_second`. A submit that finds its token's bucket empty is refused with 429, so that one
// tenant cannot flood the store or starve the others' submits.
//
// Thread safety: TryAcquire may be called from any thread.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

namespace tesserad {

class SubmitRateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // `per_second` <= 0 turns the limit off.
  SubmitRateLimiter(double per_second, int burst) : per_second_(per_second), burst_(burst) {}

  // Takes one submit from `token`'s bucket at time `now`; false when it is empty.
  bool TryAcquire(const std::string& token, Clock::time_point now);

  double per_second() const { return per_second_; }

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point refilled;
  };

  const double per_second_;
  const int burst_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;  // guarded by mu_.
};

}  // namespace tesserad
