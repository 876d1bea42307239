// TimerQueue: order, ties, cancellation and timers scheduled from callbacks.
#include "engine/timer_queue.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tessera {
namespace {

TEST_CASE("timer queue: runs due timers in time order, ties in the order scheduled") {
  TimerQueue timers;
  std::vector<std::string> ran;
  timers.Schedule(30, [&] { ran.push_back("c"); });
  timers.Schedule(10, [&] { ran.push_back("a1"); });
  timers.Schedule(20, [&] { ran.push_back("b"); });
  timers.Schedule(10, [&] { ran.push_back("a2"); });
  CHECK(timers.NextDeadline() == 10);
  CHECK(timers.RunDue(5) == 0);
  CHECK(timers.RunDue(20) == 3);
  CHECK(ran == std::vector<std::string>{"a1", "a2", "b"});
  CHECK(timers.NextDeadline() == 30);
  CHECK(timers.RunDue(100) == 1);
  CHECK_FALSE(timers.NextDeadline().has_value());
}

TEST_CASE("timer queue: a callback's timers run in the same pass when due") {
  TimerQueue timers;
  std::vector<int> ran;
  timers.Schedule(10, [&] {
    ran.push_back(1);
    timers.Schedule(10, [&] { ran.push_back(3); });  // due now: runs after the other tie.
    timers.Schedule(50, [&] { ran.push_back(4); });  // later.
  });
  timers.Schedule(10, [&] { ran.push_back(2); });
  CHECK(timers.RunDue(10) == 3);
  CHECK(ran == std::vector<int>{1, 2, 3});
  CHECK(timers.NextDeadline() == 50);
}

TEST_CASE("timer queue: cancelled timers never run, wherever they are in the heap") {
  TimerQueue timers;
  std::vector<int> ran;
  std::vector<TimerQueue::TimerId> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(timers.Schedule(100 - i, [&ran, i] { ran.push_back(i); }));
  }
  timers.Cancel(ids[19]);  // the earliest: the next deadline moves.
  CHECK(timers.NextDeadline() == 82);
  timers.Cancel(ids[5]);
  timers.Cancel(ids[5]);  // twice is harmless.
  timers.Cancel(ids[18]);
  CHECK(timers.NextDeadline() == 83);
  CHECK(timers.RunDue(1000) == 17);
  CHECK(ran.size() == 17);
  CHECK(std::find(ran.begin(), ran.end(), 5) == ran.end());
  CHECK(ran.front() == 17);
  CHECK(ran.back() == 0);
  // Cancelling timers that ran does nothing, and later timers still run.
  timers.Cancel(ids[0]);
  timers.Cancel(ids[10]);
  timers.Schedule(2000, [&] { ran.push_back(99); });
  CHECK(timers.RunDue(2000) == 1);
  CHECK(ran.back() == 99);
}

TEST_CASE("timer queue: a callback may cancel a timer due in the same pass") {
  TimerQueue timers;
  std::vector<int> ran;
  TimerQueue::TimerId second{};
  timers.Schedule(10, [&] {
    ran.push_back(1);
    timers.Cancel(second);
  });
  second = timers.Schedule(10, [&] { ran.push_back(2); });
  timers.Schedule(10, [&] { ran.push_back(3); });
  CHECK(timers.RunDue(10) == 2);
  CHECK(ran == std::vector<int>{1, 3});
}

TEST_CASE("timer queue: NextWakeup skips timers that no longer matter, which still run") {
  TimerQueue timers;
  bool limit_matters = true;
  int ran = 0;
  timers.Schedule(
      10, [&] { ++ran; }, [&] { return limit_matters; });
  timers.Schedule(20, [&] { ++ran; });
  const TimerQueue::TimerId cancelled = timers.Schedule(15, [&] { ++ran; });
  timers.Cancel(cancelled);
  CHECK(timers.NextWakeup() == 10);
  limit_matters = false;  // the job it would stop has ended.
  CHECK(timers.NextDeadline() == 10);
  CHECK(timers.NextWakeup() == 20);  // not the cancelled one at 15 either.
  CHECK(timers.RunDue(20) == 2);     // the skipped one runs when the clock passes it.
  CHECK(ran == 2);
  CHECK_FALSE(timers.NextWakeup().has_value());

  // Only timers that no longer matter: nothing to wake for.
  timers.Schedule(
      30, [&] { ++ran; }, [] { return false; });
  CHECK(timers.NextDeadline() == 30);
  CHECK_FALSE(timers.NextWakeup().has_value());
}

}  // namespace
}  // namespace tessera
