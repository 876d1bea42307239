#include "kube/token_bucket.h"

#include <algorithm>
#include <condition_variable>

namespace tessera::kube {

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps), burst_(std::max(burst, 1)), tokens_(std::max(burst, 1)) {}

TokenBucket::Clock::duration TokenBucket::Reserve(Clock::time_point now) {
  if (qps_ <= 0) return Clock::duration::zero();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) {
    started_ = true;
    last_ = now;
  }
  if (now > last_) {
    const double accrued = std::chrono::duration<double>(now - last_).count() * qps_;
    tokens_ = std::min(static_cast<double>(burst_), tokens_ + accrued);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return Clock::duration::zero();
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(-tokens_ / qps_));
}

void TokenBucket::GiveBack() {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + 1);
}

bool TokenBucket::Acquire(Clock::time_point deadline, const std::stop_token& stop, bool* waited) {
  const auto now = Clock::now();
  const auto wait = Reserve(now);
  if (waited != nullptr) *waited = wait != Clock::duration::zero();
  if (wait == Clock::duration::zero()) return true;
  if (deadline != Clock::time_point::max() && now + wait > deadline) {
    GiveBack();
    return false;
  }
  std::mutex sleeper;
  std::condition_variable_any woken;
  std::unique_lock<std::mutex> lock(sleeper);
  if (woken.wait_for(lock, stop, wait, [] { return false; }) || stop.stop_requested()) {
    GiveBack();
    return false;
  }
  return true;
}

}  // namespace tessera::kube
