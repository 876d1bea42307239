// PreemptionGuard: the limits that keep preemption from thrashing. A job is not a victim
// before it has run for a minimum time, nor again within a cooldown after it was last
// preempted, and the cluster preempts at most so many jobs per minute.
#pragma once

#include <deque>

#include "tessera/clock.h"
#include "tessera/options.h"

namespace tessera {

class PreemptionGuard {
 public:
  explicit PreemptionGuard(const PreemptionOptions& options) : options_(options) {}

  // Whether a job that started at `started_us` and was last preempted at `preempted_us`
  // (0 = never) may be a victim at `now_us`.
  bool MayPreempt(TimestampUs now_us, TimestampUs started_us, TimestampUs preempted_us) const;

  // When MayPreempt will first allow it.
  TimestampUs AllowedAt(TimestampUs started_us, TimestampUs preempted_us) const;

  // Whether `count` more preemptions fit the per-minute budget at `now_us`, and when they
  // will if they do not.
  bool WithinRate(TimestampUs now_us, int count);
  TimestampUs RateAllowsAt(TimestampUs now_us, int count);
  void Record(TimestampUs now_us, int count);

 private:
  void Forget(TimestampUs now_us);

  PreemptionOptions options_;
  std::deque<TimestampUs> recent_;
};

}  // namespace tessera
