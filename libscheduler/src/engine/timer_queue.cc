#include "engine/timer_queue.h"

#include <algorithm>

namespace tessera {

TimerQueue::TimerId TimerQueue::Schedule(TimestampUs when, std::function<void()> callback,
                                         std::function<bool()> matters) {
  TimerId id{when, next_seq_++};
  heap_.push_back({id, std::move(callback), std::move(matters)});
  std::push_heap(heap_.begin(), heap_.end(), Later);
  return id;
}

void TimerQueue::Cancel(const TimerId& id) {
  // A timer earlier than every pending one has run (or was dropped) already.
  if (heap_.empty() || id < heap_.front().id) return;
  if (id == heap_.front().id) {
    PopTop();
    DropCancelledTop();
    return;
  }
  if (id.second >= next_seq_) return;  // never scheduled.
  // Possibly pending further down: marked, and dropped when it reaches the top. (A timer that
  // ran before an earlier one was scheduled may be marked too; it never matches again, and the
  // marks go when the heap empties.)
  cancelled_.insert(id.second);
}

TimerQueue::Entry TimerQueue::PopTop() {
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  Entry top = std::move(heap_.back());
  heap_.pop_back();
  return top;
}

void TimerQueue::DropCancelledTop() {
  while (!heap_.empty() && !cancelled_.empty() && cancelled_.erase(heap_.front().id.second) > 0) {
    PopTop();
  }
  if (heap_.empty()) cancelled_.clear();
}

int TimerQueue::RunDue(TimestampUs now) {
  int ran = 0;
  while (!heap_.empty() && heap_.front().id.first <= now) {
    Entry due = PopTop();
    DropCancelledTop();
    // Moved out first: the callback may schedule or cancel timers.
    due.callback();
    ++ran;
  }
  return ran;
}

std::optional<TimestampUs> TimerQueue::NextDeadline() const {
  if (heap_.empty()) return std::nullopt;
  return heap_.front().id.first;
}

std::optional<TimestampUs> TimerQueue::NextWakeup() const {
  if (heap_.empty()) return std::nullopt;
  const Entry& top = heap_.front();
  if (!top.matters || top.matters()) return top.id.first;
  std::optional<TimestampUs> next;
  for (const Entry& e : heap_) {
    if (next && e.id.first >= *next) continue;
    if (cancelled_.count(e.id.second)) continue;
    if (!e.matters || e.matters()) next = e.id.first;
  }
  return next;
}

}  // namespace tessera
