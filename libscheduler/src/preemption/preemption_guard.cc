#include "preemption/preemption_guard.h"

#include <algorithm>
#include <chrono>

namespace tessera {
namespace {

int64_t Us(std::chrono::seconds s) {
  return std::chrono::duration_cast<std::chrono::microseconds>(s).count();
}

constexpr int64_t kMinuteUs = 60'000'000;

}  // namespace

bool PreemptionGuard::MayPreempt(TimestampUs now_us, TimestampUs started_us,
                                 TimestampUs preempted_us) const {
  if (started_us == 0 || now_us - started_us < Us(options_.min_runtime)) return false;
  return preempted_us == 0 || now_us - preempted_us >= Us(options_.cooldown);
}

TimestampUs PreemptionGuard::AllowedAt(TimestampUs started_us, TimestampUs preempted_us) const {
  TimestampUs at = started_us + Us(options_.min_runtime);
  if (preempted_us != 0) at = std::max(at, preempted_us + Us(options_.cooldown));
  return at;
}

TimestampUs PreemptionGuard::RateAllowsAt(TimestampUs now_us, int count) {
  Forget(now_us);
  const int over = static_cast<int>(recent_.size()) + count - options_.max_per_minute;
  if (over <= 0) return now_us;
  if (over > static_cast<int>(recent_.size())) return now_us + kMinuteUs;
  return recent_[over - 1] + kMinuteUs;
}

void PreemptionGuard::Forget(TimestampUs now_us) {
  while (!recent_.empty() && now_us - recent_.front() >= kMinuteUs) recent_.pop_front();
}

bool PreemptionGuard::WithinRate(TimestampUs now_us, int count) {
  Forget(now_us);
  return static_cast<int>(recent_.size()) + count <= options_.max_per_minute;
}

void PreemptionGuard::Record(TimestampUs now_us, int count) {
  for (int i = 0; i < count; ++i) recent_.push_back(now_us);
}

}  // namespace tessera
