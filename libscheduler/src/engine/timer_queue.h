// TimerQueue: callbacks due at points of the scheduler's clock, run by whoever owns the decision
// strand. The engine never sleeps: its host asks for a wake-up at NextDeadline() (real time) or
// runs RunDue after each advance of a manual clock (virtual time).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "tessera/clock.h"

namespace tessera {

class TimerQueue {
 public:
  using TimerId = std::pair<TimestampUs, uint64_t>;

  TimerId Schedule(TimestampUs when, std::function<void()> callback);
  void Cancel(const TimerId& id);
  // Runs, in time order, every callback due at or before `now`, including ones scheduled by
  // callbacks. Returns how many ran.
  int RunDue(TimestampUs now);
  std::optional<TimestampUs> NextDeadline() const;
  size_t size() const { return timers_.size(); }

 private:
  uint64_t next_seq_ = 0;
  std::map<TimerId, std::function<void()>> timers_;
};

}  // namespace tessera
