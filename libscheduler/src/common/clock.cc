#include "tessera/clock.h"

#include <chrono>
#include <vector>

namespace tessera {

Clock::~Clock() = default;

int Clock::AddAdvanceListener(std::function<void()>) { return 0; }
void Clock::RemoveAdvanceListener(int) {}

namespace {

class SystemClock final : public Clock {
 public:
  TimestampUs NowUs() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  bool IsRealTime() const override { return true; }
};

}  // namespace

std::shared_ptr<Clock> RealClock() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SystemClock>();
  return clock;
}

ManualClock::ManualClock(TimestampUs start_us) : now_us_(start_us) {}

TimestampUs ManualClock::NowUs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_us_;
}

int ManualClock::AddAdvanceListener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  const int handle = next_handle_++;
  listeners_.emplace(handle, std::move(listener));
  return handle;
}

void ManualClock::RemoveAdvanceListener(int handle) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_.erase(handle);
}

void ManualClock::AdvanceUs(int64_t delta_us) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (delta_us > 0) now_us_ += delta_us;
  }
  Notify();
}

void ManualClock::AdvanceToUs(TimestampUs now_us) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (now_us > now_us_) now_us_ = now_us;
  }
  Notify();
}

void ManualClock::Notify() {
  std::vector<std::function<void()>> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [handle, listener] : listeners_) listeners.push_back(listener);
  }
  for (const auto& listener : listeners) listener();
}

}  // namespace tessera
