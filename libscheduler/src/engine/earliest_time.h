// EarliestTime: a bag of timestamps that answers only "which is the earliest?". Two binary heaps
// in vectors, one of the times added and one of the times removed: a removal is recorded and
// matched against the added heap when both reach the top. Cheaper than a multiset when
// additions and removals are frequent (every start and end of a job) and the earliest is rarely
// asked for: no node per time, and pushes of times that mostly grow stay near the heap's end.
// While one early time stays (a job that runs for months), removals of later ones wait behind
// it; once they are as many as the live times, both heaps are matched up in one sorting pass, so
// memory stays within about three times the live times and each call costs O(log n) amortized.
//
// Not thread-safe.
#pragma once

#include <algorithm>
#include <functional>
#include <iterator>
#include <vector>

#include "tessera/clock.h"

namespace tessera {

class EarliestTime {
 public:
  void Add(TimestampUs t) {
    added_.push_back(t);
    std::push_heap(added_.begin(), added_.end(), std::greater<>());
  }
  // Precondition: `t` was added and not removed since (as many times as it is removed).
  void Remove(TimestampUs t) {
    removed_.push_back(t);
    std::push_heap(removed_.begin(), removed_.end(), std::greater<>());
    // Settled at once, so that the removed heap holds only times later than the earliest.
    while (!removed_.empty() && added_.front() == removed_.front()) {
      std::pop_heap(added_.begin(), added_.end(), std::greater<>());
      added_.pop_back();
      std::pop_heap(removed_.begin(), removed_.end(), std::greater<>());
      removed_.pop_back();
    }
    if (removed_.size() > kCompactAbove && removed_.size() * 2 > added_.size()) Compact();
  }
  bool empty() const { return added_.size() == removed_.size(); }
  // Precondition: !empty().
  TimestampUs Earliest() const { return added_.front(); }
  // Times held: the live ones and removed ones not yet matched (for tests of the bound).
  size_t held() const { return added_.size() + removed_.size(); }

 private:
  static constexpr size_t kCompactAbove = 64;

  // Drops every removed time with one added copy of it. Sorted ascending is a valid min-heap.
  void Compact() {
    std::sort(added_.begin(), added_.end());
    std::sort(removed_.begin(), removed_.end());
    std::vector<TimestampUs> live;
    live.reserve(added_.size() - removed_.size());
    std::set_difference(added_.begin(), added_.end(), removed_.begin(), removed_.end(),
                        std::back_inserter(live));
    added_ = std::move(live);
    removed_.clear();
  }

  std::vector<TimestampUs> added_;    // min-heap.
  std::vector<TimestampUs> removed_;  // min-heap; each also in added_.
};

}  // namespace tessera
