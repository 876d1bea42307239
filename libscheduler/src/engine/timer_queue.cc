#include "engine/timer_queue.h"

namespace tessera {

TimerQueue::TimerId TimerQueue::Schedule(TimestampUs when, std::function<void()> callback) {
  TimerId id{when, next_seq_++};
  timers_.emplace(id, std::move(callback));
  return id;
}

void TimerQueue::Cancel(const TimerId& id) { timers_.erase(id); }

int TimerQueue::RunDue(TimestampUs now) {
  int ran = 0;
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto node = timers_.extract(timers_.begin());
    node.mapped()();
    ++ran;
  }
  return ran;
}

std::optional<TimestampUs> TimerQueue::NextDeadline() const {
  if (timers_.empty()) return std::nullopt;
  return timers_.begin()->first.first;
}

}  // namespace tessera
