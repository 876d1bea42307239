// EarliestTime against a multiset on random additions and removals, duplicates included.
#include "engine/earliest_time.h"

#include <doctest/doctest.h>

#include <iterator>
#include <random>
#include <set>

namespace tessera {
namespace {

TEST_CASE("earliest time: removing the earliest reveals the next, duplicates count") {
  EarliestTime times;
  CHECK(times.empty());
  times.Add(20);
  times.Add(10);
  times.Add(10);
  CHECK(times.Earliest() == 10);
  times.Remove(10);
  CHECK(times.Earliest() == 10);
  times.Remove(20);  // not the earliest: remembered until it is.
  CHECK(times.Earliest() == 10);
  CHECK_FALSE(times.empty());
  times.Remove(10);
  CHECK(times.empty());
}

TEST_CASE("earliest time: removals behind a time that stays do not pile up") {
  EarliestTime times;
  times.Add(0);  // a job that runs for months.
  for (TimestampUs t = 1; t <= 100'000; ++t) {
    times.Add(t);
    times.Add(t);
    times.Remove(t);
    if (t % 2 == 0) times.Remove(t);  // every other time stays once.
  }
  CHECK(times.Earliest() == 0);
  // 50,001 live times; without matching up, 350,001 would be held.
  CHECK(times.held() <= 3 * 50'001);
  times.Remove(0);
  CHECK(times.Earliest() == 1);
}

TEST_CASE("earliest time: agrees with a multiset on random work") {
  std::mt19937_64 random(7);
  EarliestTime times;
  std::multiset<TimestampUs> reference;
  TimestampUs now = 0;
  for (int step = 0; step < 20'000; ++step) {
    if (reference.empty() || random() % 2 == 0) {
      now += static_cast<TimestampUs>(random() % 5);
      // Mostly growing, as start times are, with some out of order.
      const TimestampUs t = random() % 8 == 0 ? now - static_cast<TimestampUs>(random() % 50) : now;
      times.Add(t);
      reference.insert(t);
    } else {
      auto it =
          std::next(reference.begin(), static_cast<std::ptrdiff_t>(random() % reference.size()));
      times.Remove(*it);
      reference.erase(it);
    }
    REQUIRE(times.empty() == reference.empty());
    if (!reference.empty()) REQUIRE(times.Earliest() == *reference.begin());
  }
}

}  // namespace
}  // namespace tessera
