// Clock: where the scheduler reads the time, so the same engine runs in real time (a daemon) or
// in virtual time (tests, trace replay) without reading the wall clock anywhere else.
//
// Times are microseconds since the Unix epoch. A real clock moves by itself and the scheduler
// arms operating-system timers against it. A ManualClock moves only when told to; each advance
// notifies the scheduler, which then fires every timer that has come due.
//
// Thread safety: all members are safe to call from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "tessera/export.h"

namespace tessera {

using TimestampUs = int64_t;

class TESSERA_EXPORT Clock {
 public:
  virtual ~Clock();

  virtual TimestampUs NowUs() const = 0;

  // True when the clock advances by itself.
  virtual bool IsRealTime() const = 0;

  // Registers `listener`, called (on the advancing thread) after each advance of a manual clock.
  // Real-time clocks never call it. Returns a handle for RemoveAdvanceListener.
  virtual int AddAdvanceListener(std::function<void()> listener);
  virtual void RemoveAdvanceListener(int handle);
};

// The system clock (std::chrono::system_clock).
TESSERA_EXPORT std::shared_ptr<Clock> RealClock();

// A clock that stands still until advanced. For tests and simulations.
class TESSERA_EXPORT ManualClock final : public Clock {
 public:
  explicit ManualClock(TimestampUs start_us = 1'000'000'000'000'000);

  TimestampUs NowUs() const override;
  bool IsRealTime() const override { return false; }
  int AddAdvanceListener(std::function<void()> listener) override;
  void RemoveAdvanceListener(int handle) override;

  // Moves time forward by `delta_us` (>= 0) and notifies listeners.
  void AdvanceUs(int64_t delta_us);
  // Sets the time to `now_us` if it is later than the current time, and notifies listeners.
  void AdvanceToUs(TimestampUs now_us);

 private:
  void Notify();

  mutable std::mutex mu_;
  TimestampUs now_us_;
  int next_handle_ = 1;
  std::map<int, std::function<void()>> listeners_;
};

}  // namespace tessera
