// ElasticSizes: the task counts an elastic job may run at, the steps a grow and a shrink take
// between them, and the checks a spec's rule must pass. Each rule is compared with a brute-force
// walk of the range.
#include "model/elastic_sizes.h"

#include <doctest/doctest.h>

#include <optional>
#include <string>

namespace tessera {
namespace {

v1::ElasticBounds Bounds(int min, int max) {
  v1::ElasticBounds b;
  b.set_min_tasks(min);
  b.set_max_tasks(max);
  return b;
}

v1::ElasticBounds PowersOfTwo(int min, int max) {
  v1::ElasticBounds b = Bounds(min, max);
  b.mutable_sizes()->set_powers_of_two(true);
  return b;
}

v1::ElasticBounds MultipleOf(int min, int max, int n) {
  v1::ElasticBounds b = Bounds(min, max);
  b.mutable_sizes()->set_multiple_of(n);
  return b;
}

v1::ElasticBounds Counts(int min, int max, std::initializer_list<int> counts) {
  v1::ElasticBounds b = Bounds(min, max);
  for (int c : counts) b.mutable_sizes()->add_counts(c);
  return b;
}

// What AtLeast and AtMost must answer, by walking every count.
void CheckAgainstWalk(const ElasticSizes& sizes, int min, int max) {
  for (int n = 0; n <= max + 2; ++n) {
    std::optional<int> up;
    for (int c = std::max(n, min); c <= max && !up; ++c) {
      if (sizes.Allows(c)) up = c;
    }
    std::optional<int> down;
    for (int c = std::min(n, max); c >= min && !down; --c) {
      if (sizes.Allows(c)) down = c;
    }
    INFO("n = " << n << ", rule " << sizes.Describe());
    CHECK(sizes.AtLeast(n) == up);
    CHECK(sizes.AtMost(n) == down);
  }
}

TEST_CASE("elastic sizes: without a rule every count of the range is allowed") {
  const ElasticSizes sizes = ElasticSizes::FromBounds(Bounds(2, 6));
  CHECK(sizes.Smallest() == 2);
  CHECK(sizes.Largest() == 6);
  CHECK(sizes.Above(3) == 4);
  CHECK(sizes.Below(3) == 2);
  CHECK(sizes.Below(2) == std::nullopt);
  CHECK(sizes.Above(6) == std::nullopt);
  CHECK_FALSE(sizes.Allows(1));
  CHECK_FALSE(sizes.Allows(7));
  CheckAgainstWalk(sizes, 2, 6);
}

TEST_CASE("elastic sizes: powers of two grow 1 -> 2 -> 4 -> 8 and shrink 8 -> 4, never 3 or 7") {
  const ElasticSizes sizes = ElasticSizes::FromBounds(PowersOfTwo(1, 8));
  CHECK(sizes.Above(1) == 2);
  CHECK(sizes.Above(2) == 4);
  CHECK(sizes.Above(3) == 4);
  CHECK(sizes.Above(4) == 8);
  CHECK(sizes.Below(8) == 4);
  CHECK(sizes.Below(7) == 4);
  CHECK(sizes.Below(1) == std::nullopt);
  CHECK_FALSE(sizes.Allows(3));
  CHECK_FALSE(sizes.Allows(7));
  CHECK(sizes.Describe() == "powers of two");
  for (int min = 1; min <= 9; ++min) {
    for (int max = min; max <= 70; ++max) {
      const ElasticSizes s = ElasticSizes::FromBounds(PowersOfTwo(min, max));
      if (s.AtLeast(min)) CheckAgainstWalk(s, min, max);
    }
  }
}

TEST_CASE("elastic sizes: the smallest and largest allowed counts are the job's real bounds") {
  // 3..12 in powers of two: the job starts with at least 4 and grows to at most 8.
  const ElasticSizes sizes = ElasticSizes::FromBounds(PowersOfTwo(3, 12));
  CHECK(sizes.Smallest() == 4);
  CHECK(sizes.Largest() == 8);
  CHECK(sizes.AtMost(7) == 4);
  CHECK(sizes.AtMost(3) == std::nullopt);  // a shrink from 4 would go below the minimum.
  const ElasticSizes eights = ElasticSizes::FromBounds(MultipleOf(1, 30, 8));
  CHECK(eights.Smallest() == 8);
  CHECK(eights.Largest() == 24);
  CHECK(eights.Below(24) == 16);
  CHECK(eights.Above(9) == 16);
  CHECK(eights.Describe() == "multiples of 8");
  for (int n = 1; n <= 9; ++n) {
    for (int max = 1; max <= 40; ++max) {
      const ElasticSizes s = ElasticSizes::FromBounds(MultipleOf(1, max, n));
      if (s.AtLeast(1)) CheckAgainstWalk(s, 1, max);
    }
  }
}

TEST_CASE("elastic sizes: an explicit list, in any order") {
  const ElasticSizes sizes = ElasticSizes::FromBounds(Counts(2, 12, {8, 2, 6}));
  CHECK(sizes.Smallest() == 2);
  CHECK(sizes.Largest() == 8);
  CHECK(sizes.Above(2) == 6);
  CHECK(sizes.Below(6) == 2);
  CHECK(sizes.Above(8) == std::nullopt);
  CHECK(sizes.Describe() == "2, 6, 8");
  CheckAgainstWalk(sizes, 2, 12);
}

TEST_CASE("elastic sizes: a rule that allows no count, or two rules, is refused naming the field") {
  CHECK(ElasticSizes::Check(Bounds(1, 8)).ok());
  CHECK(ElasticSizes::Check(PowersOfTwo(5, 7)).message() ==
        "elastic.sizes.powers_of_two: powers of two allow no task count between "
        "elastic.min_tasks (5) and elastic.max_tasks (7)");
  CHECK(ElasticSizes::Check(MultipleOf(1, 7, 8)).message() ==
        "elastic.sizes.multiple_of: multiples of 8 allow no task count between "
        "elastic.min_tasks (1) and elastic.max_tasks (7)");
  CHECK(ElasticSizes::Check(MultipleOf(1, 8, -2)).message() ==
        "elastic.sizes.multiple_of: must be >= 1, got -2");
  CHECK(ElasticSizes::Check(Counts(2, 8, {2, 9})).message() ==
        "elastic.sizes.counts[1]: must be between elastic.min_tasks (2) and elastic.max_tasks "
        "(8), got 9");
  CHECK(ElasticSizes::Check(Counts(2, 8, {4, 4})).message() ==
        "elastic.sizes.counts[1]: 4 is listed twice");
  v1::ElasticBounds two = PowersOfTwo(1, 8);
  two.mutable_sizes()->set_multiple_of(2);
  CHECK(ElasticSizes::Check(two).message() ==
        "elastic.sizes: set at most one of powers_of_two, multiple_of and counts");
  CHECK(ElasticSizes::Check(PowersOfTwo(3, 4)).ok());
  CHECK(ElasticSizes::Check(MultipleOf(8, 8, 8)).ok());
}

}  // namespace
}  // namespace tessera
