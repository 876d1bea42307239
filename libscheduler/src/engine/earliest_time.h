// EarliestTime: a bag of timestamps that answers only "which is the earliest?". Two binary heaps
// in vectors, one of the times added and one of the times removed: a removal is recorded and
// matched against the added heap when both reach the top. Cheaper than a multiset when
// additions and removals are frequent (every start and end of a job) and the earliest is rarely
// asked for: no node per time, and pushes of times that mostly grow stay near the heap's end.
//
// Not thread-safe.
#pragma once

#include <algorithm>
#include <functional>
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
  }
  bool empty() const { return added_.size() == removed_.size(); }
  // Precondition: !empty().
  TimestampUs Earliest() const { return added_.front(); }

 private:
  std::vector<TimestampUs> added_;    // min-heap.
  std::vector<TimestampUs> removed_;  // min-heap; each also in added_.
};

}  // namespace tessera
