// DrfSorter: the worked examples of the DRF paper and the ordering rules.
#include <doctest/doctest.h>

#include "fairshare/drf.h"
#include "fairshare/drf_sorter.h"
#include "unit/fairshare/progressive_filling.h"

namespace tessera {
namespace {

using testing::DrfUser;
using testing::ProgressiveFilling;

// 9 CPUs and 18 GB; cpu in milli-cores, memory in GiB-as-MiB units (only ratios matter).
const ResourceVector kPaperCluster{9000, 18, 0, 0};
const ResourceVector kTaskA{1000, 4, 0, 0};  // <1 CPU, 4 GB>: memory-dominant.
const ResourceVector kTaskB{3000, 1, 0, 0};  // <3 CPUs, 1 GB>: cpu-dominant.

TEST_CASE("drf: the paper's example gives A three tasks and B two, both at dominant share 2/3") {
  const std::vector<int> tasks = ProgressiveFilling(kPaperCluster, {{kTaskA}, {kTaskB}});
  CHECK(tasks[0] == 3);
  CHECK(tasks[1] == 2);
  CHECK(DominantShare(kTaskA * 3, kPaperCluster, 1.0) == doctest::Approx(2.0 / 3.0));
  CHECK(DominantShare(kTaskB * 2, kPaperCluster, 1.0) == doctest::Approx(2.0 / 3.0));
}

TEST_CASE("drf: weight 2 for A shifts the paper's example to four tasks for A and one for B") {
  // Continuous weighted DRF wants A's dominant share twice B's; memory binds at a = 4.15,
  // b = 1.38, and the discrete allocation is 4 and 1.
  const std::vector<int> tasks = ProgressiveFilling(kPaperCluster, {{kTaskA, 2.0}, {kTaskB, 1.0}});
  CHECK(tasks[0] == 4);
  CHECK(tasks[1] == 1);
}

TEST_CASE("drf: equal users with equal weights split a resource evenly") {
  const ResourceVector cluster{0, 0, 8000, 0};
  const ResourceVector gpu{0, 0, 1000, 0};
  const std::vector<int> tasks = ProgressiveFilling(cluster, {{gpu}, {gpu}});
  CHECK(tasks[0] == 4);
  CHECK(tasks[1] == 4);
}

TEST_CASE("drf: weights 3:1 split eight GPUs six to two") {
  const ResourceVector cluster{0, 0, 8000, 0};
  const ResourceVector gpu{0, 0, 1000, 0};
  const std::vector<int> tasks = ProgressiveFilling(cluster, {{gpu, 3.0}, {gpu, 1.0}});
  CHECK(tasks[0] == 6);
  CHECK(tasks[1] == 2);
}

TEST_CASE("drf: a user that wants little gets all of it and the rest goes to the other") {
  const ResourceVector cluster{0, 0, 8000, 0};
  const ResourceVector gpu{0, 0, 1000, 0};
  DrfUser small{gpu};
  small.max_tasks = 1;
  const std::vector<int> tasks = ProgressiveFilling(cluster, {small, {gpu}});
  CHECK(tasks[0] == 1);
  CHECK(tasks[1] == 7);
}

TEST_CASE("drf sorter: clients below their guarantee come first, furthest below first") {
  DrfSorter sorter;
  sorter.SetCapacity({0, 0, 10000, 0});
  sorter.Add(1, 1.0);
  sorter.Add(2, 1.0);
  sorter.Add(3, 1.0);
  for (uint32_t id : {1u, 2u, 3u}) sorter.Activate(id);
  sorter.UpdateGuarantee(2, {0, 0, 4000, 0});
  sorter.UpdateGuarantee(3, {0, 0, 2000, 0});
  // Client 1 holds nothing but has no guarantee; 2 holds half its guarantee, 3 a quarter.
  sorter.UpdateAllocation(2, {0, 0, 2000, 0}, {0, 0, 2000, 0});
  sorter.UpdateAllocation(3, {0, 0, 500, 0}, {0, 0, 500, 0});
  CHECK(sorter.Order() == std::vector<uint32_t>{3, 2, 1});
  CHECK(sorter.BelowGuarantee(2));
  CHECK_FALSE(sorter.BelowGuarantee(1));
  // Reaching the guarantee moves a client back among the others, by dominant share.
  sorter.UpdateAllocation(3, {0, 0, 2000, 0}, {0, 0, 2000, 0});
  CHECK(sorter.Order() == std::vector<uint32_t>{2, 1, 3});
}

TEST_CASE("drf sorter: inactive clients are not ordered, ties go to the lower id") {
  DrfSorter sorter;
  sorter.SetCapacity({1000, 0, 0, 0});
  sorter.Add(7, 1.0);
  sorter.Add(4, 1.0);
  CHECK_FALSE(sorter.First().has_value());
  sorter.Activate(7);
  sorter.Activate(4);
  CHECK(*sorter.First() == 4);
  sorter.Deactivate(4);
  CHECK(*sorter.First() == 7);
  sorter.Remove(7);
  CHECK_FALSE(sorter.First().has_value());
  CHECK(sorter.active_count() == 0);
}

TEST_CASE("drf sorter: a resource the cluster lacks does not count towards the share") {
  // No GPUs at all: a GPU allocation (which cannot happen) must not make the share infinite.
  const ResourceVector capacity{1000, 1000, 0, 0};
  CHECK(DominantShare({500, 100, 0, 0}, capacity, 1.0) == doctest::Approx(0.5));
  CHECK(DominantShare({500, 100, 0, 0}, capacity, 2.0) == doctest::Approx(0.25));
}

}  // namespace
}  // namespace tessera
