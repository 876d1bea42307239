#include "model/elastic_sizes.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>

namespace tessera {
namespace {

// The largest power of two <= n (n >= 1).
int FloorPowerOfTwo(int n) {
  int p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

}  // namespace

ElasticSizes::ElasticSizes(int min, int max) : ElasticSizes(Rule::kAny, min, max, 1, {}) {}

ElasticSizes::ElasticSizes(Rule rule, int min, int max, int step, std::vector<int> list)
    : rule_(rule), min_(min), max_(max), step_(step), list_(std::move(list)) {
  std::sort(list_.begin(), list_.end());
  smallest_ = AtLeast(min_).value_or(min_);
  largest_ = AtMost(max_).value_or(max_);
}

ElasticSizes ElasticSizes::FromBounds(const v1::ElasticBounds& bounds) {
  const int min = std::max(1, bounds.min_tasks());
  const int max = std::max(min, bounds.max_tasks());
  const v1::ElasticSizes& s = bounds.sizes();
  if (s.powers_of_two()) return ElasticSizes(Rule::kPowersOfTwo, min, max, 1, {});
  if (s.multiple_of() > 0) return ElasticSizes(Rule::kMultipleOf, min, max, s.multiple_of(), {});
  if (s.counts_size() > 0) {
    return ElasticSizes(Rule::kList, min, max, 1, {s.counts().begin(), s.counts().end()});
  }
  return ElasticSizes(min, max);
}

Status ElasticSizes::Check(const v1::ElasticBounds& bounds) {
  const v1::ElasticSizes& s = bounds.sizes();
  const int rules =
      (s.powers_of_two() ? 1 : 0) + (s.multiple_of() != 0 ? 1 : 0) + (s.counts_size() > 0 ? 1 : 0);
  if (rules > 1) {
    return InvalidFieldError("elastic.sizes",
                             "set at most one of powers_of_two, multiple_of and counts");
  }
  if (s.multiple_of() < 0) {
    return InvalidFieldError("elastic.sizes.multiple_of",
                             "must be >= 1, got " + std::to_string(s.multiple_of()));
  }
  std::set<int> seen;
  for (int i = 0; i < s.counts_size(); ++i) {
    const int count = s.counts(i);
    const std::string field = "elastic.sizes.counts[" + std::to_string(i) + "]";
    if (count < bounds.min_tasks() || count > bounds.max_tasks()) {
      return InvalidFieldError(
          field, "must be between elastic.min_tasks (" + std::to_string(bounds.min_tasks()) +
                     ") and elastic.max_tasks (" + std::to_string(bounds.max_tasks()) + "), got " +
                     std::to_string(count));
    }
    if (!seen.insert(count).second) {
      return InvalidFieldError(field, std::to_string(count) + " is listed twice");
    }
  }
  if (rules == 0) return Status::Ok();
  const ElasticSizes sizes = FromBounds(bounds);
  if (!sizes.AtLeast(sizes.min_)) {
    const std::string field =
        s.powers_of_two() ? "elastic.sizes.powers_of_two" : "elastic.sizes.multiple_of";
    return InvalidFieldError(field, sizes.Describe() + " allow no task count between " +
                                        "elastic.min_tasks (" + std::to_string(sizes.min_) +
                                        ") and elastic.max_tasks (" + std::to_string(sizes.max_) +
                                        ")");
  }
  return Status::Ok();
}

bool ElasticSizes::RuleAllows(int count) const {
  switch (rule_) {
    case Rule::kAny:
      return true;
    case Rule::kPowersOfTwo:
      return count > 0 && (count & (count - 1)) == 0;
    case Rule::kMultipleOf:
      return count % step_ == 0;
    case Rule::kList:
      return std::binary_search(list_.begin(), list_.end(), count);
  }
  return false;
}

bool ElasticSizes::Allows(int count) const {
  return count >= min_ && count <= max_ && RuleAllows(count);
}

std::optional<int> ElasticSizes::AtLeast(int count) const {
  const int from = std::max(count, min_);
  if (from > max_) return std::nullopt;
  int found = from;
  switch (rule_) {
    case Rule::kAny:
      break;
    case Rule::kPowersOfTwo: {
      const int floor = FloorPowerOfTwo(from);
      if (floor == from) break;
      if (floor > max_ / 2) return std::nullopt;  // the next power would pass the maximum.
      found = floor * 2;
      break;
    }
    case Rule::kMultipleOf: {
      const int64_t up = (int64_t{from} + step_ - 1) / step_ * step_;
      if (up > max_) return std::nullopt;
      found = static_cast<int>(up);
      break;
    }
    case Rule::kList: {
      auto it = std::lower_bound(list_.begin(), list_.end(), from);
      if (it == list_.end()) return std::nullopt;
      found = *it;
      break;
    }
  }
  if (found > max_) return std::nullopt;
  return found;
}

std::optional<int> ElasticSizes::AtMost(int count) const {
  const int from = std::min(count, max_);
  if (from < min_) return std::nullopt;
  int found = from;
  switch (rule_) {
    case Rule::kAny:
      break;
    case Rule::kPowersOfTwo:
      found = FloorPowerOfTwo(from);
      break;
    case Rule::kMultipleOf:
      found = from / step_ * step_;
      break;
    case Rule::kList: {
      auto it = std::upper_bound(list_.begin(), list_.end(), from);
      if (it == list_.begin()) return std::nullopt;
      found = *std::prev(it);
      break;
    }
  }
  if (found < min_ || found < 1) return std::nullopt;
  return found;
}

std::string ElasticSizes::Describe() const {
  switch (rule_) {
    case Rule::kAny:
      return "any";
    case Rule::kPowersOfTwo:
      return "powers of two";
    case Rule::kMultipleOf:
      return "multiples of " + std::to_string(step_);
    case Rule::kList: {
      std::string out;
      for (int c : list_) out += (out.empty() ? "" : ", ") + std::to_string(c);
      return out;
    }
  }
  return "any";
}

}  // namespace tessera
