// TimerQueue: callbacks due at points of the scheduler's clock, run by whoever owns the decision
// strand. The engine never sleeps: its host asks for a wake-up at NextDeadline() (real time) or
// runs RunDue after each advance of a manual clock (virtual time).
//
// A timer may say, through `matters`, whether running it would still do anything (a time limit
// of a job that has ended would not). NextWakeup skips those that say no, so a virtual-time
// driver does not stop for them; they still run, as no-ops, when the clock passes them.
//
// A binary heap in one vector: a churning cluster schedules a timer or two per task (start and
// exit reports of the simulated executor, time limits), so scheduling must not allocate a node
// per timer. Cancelled timers stay in the heap, marked, until they reach its top.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tessera/clock.h"

namespace tessera {

class TimerQueue {
 public:
  using TimerId = std::pair<TimestampUs, uint64_t>;

  TimerId Schedule(TimestampUs when, std::function<void()> callback,
                   std::function<bool()> matters = nullptr);
  // Cancelling a timer that already ran (or was cancelled) does nothing.
  void Cancel(const TimerId& id);
  // Runs, in time order (ties in the order scheduled), every callback due at or before `now`,
  // including ones scheduled by callbacks. Returns how many ran.
  int RunDue(TimestampUs now);
  std::optional<TimestampUs> NextDeadline() const;
  // The earliest timer that still matters (has no `matters`, or it says yes): the next moment
  // something can happen. O(1) when that is the earliest timer, else O(timers).
  std::optional<TimestampUs> NextWakeup() const;

 private:
  struct Entry {
    TimerId id;
    std::function<void()> callback;
    std::function<bool()> matters;  // null: always.
  };
  // Orders the heap so that its front is the earliest timer.
  static bool Later(const Entry& a, const Entry& b) { return a.id > b.id; }
  Entry PopTop();
  // Drops cancelled timers from the top, so the front is always a live timer.
  void DropCancelledTop();

  uint64_t next_seq_ = 0;
  std::vector<Entry> heap_;
  std::unordered_set<uint64_t> cancelled_;  // seqs of cancelled timers still in heap_.
};

}  // namespace tessera
