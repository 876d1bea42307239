// ElasticSizes: the task counts an elastic job may run at. Distributed training often works
// only at some world sizes: powers of two, multiples of the GPUs of one node, or a few counts
// its data pipeline was sharded for (JobSpec.elastic.sizes). The engine starts, grows and
// shrinks an elastic job only between these counts, so a job never runs at a size it cannot
// use: a grow places the tasks up to the next allowed count at once or not at all, and a shrink
// stops the tasks down to the next allowed count below.
//
// The counts lie within min_tasks..max_tasks; Smallest() and Largest() are the allowed counts
// nearest those bounds, and serve as the job's real minimum and maximum. Without a rule every
// count of the range is allowed, which is what an elastic job always did.
//
// A value type, cheap to copy for the rules without a list; every query is O(log list) or
// O(1). Thread safety: const after construction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/status.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

class ElasticSizes {
 public:
  // Every count of min..max (max >= min >= 1).
  ElasticSizes(int min, int max);
  // The counts `bounds` allows; `bounds` must have passed Check.
  static ElasticSizes FromBounds(const v1::ElasticBounds& bounds);
  // Whether `bounds.sizes` is a usable rule for `bounds` (whose min and max are checked
  // already): at most one rule, a multiple of at least 1, listed counts within the bounds and
  // not repeated, and at least one allowed count. INVALID_ARGUMENT naming the field
  // ("elastic.sizes.multiple_of: ...") otherwise.
  static Status Check(const v1::ElasticBounds& bounds);

  // Whether a rule narrows the range (without one, any count of it is allowed, so the tasks
  // above the minimum may go one by one, in any order).
  bool HasRule() const { return rule_ != Rule::kAny; }
  bool Allows(int count) const;
  // The smallest allowed count >= `count`, or nullopt when there is none up to the maximum.
  std::optional<int> AtLeast(int count) const;
  // The largest allowed count <= `count`, or nullopt when there is none down to the minimum.
  std::optional<int> AtMost(int count) const;
  // The next allowed count above `count` (a grow), and below it (a shrink).
  std::optional<int> Above(int count) const { return AtLeast(count + 1); }
  std::optional<int> Below(int count) const { return AtMost(count - 1); }
  // The least and the most tasks the job may run at (both allowed; Smallest() <= Largest()).
  int Smallest() const { return smallest_; }
  int Largest() const { return largest_; }

  // How the rule reads in messages: "powers of two", "multiples of 8", "2, 6, 8", "any".
  std::string Describe() const;

 private:
  enum class Rule : uint8_t { kAny, kPowersOfTwo, kMultipleOf, kList };
  ElasticSizes(Rule rule, int min, int max, int step, std::vector<int> list);
  // Whether the rule alone (bounds aside) allows `count`.
  bool RuleAllows(int count) const;

  Rule rule_ = Rule::kAny;
  int min_ = 1;
  int max_ = 1;
  int step_ = 1;           // kMultipleOf.
  std::vector<int> list_;  // kList: sorted, within min_..max_.
  int smallest_ = 1;
  int largest_ = 1;
};

}  // namespace tessera
