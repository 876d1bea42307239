// WorkloadDistribution: FGD's "typical tasks" (most frequent shapes covering a share of all
// tasks, renormalised), merging of equal shapes, and the order of equally frequent shapes.
#include <doctest/doctest.h>

#include "placement/workload_distribution.h"

namespace tessera {
namespace {

TaskShape Shape(int64_t cpu, int32_t gpus, int32_t milli, int64_t memory = 0) {
  TaskShape s;
  s.cpu_milli = cpu;
  s.memory_mib = memory;
  s.gpu_count = gpus;
  s.gpu_milli = milli;
  return s;
}

TEST_CASE(
    "placement: workload distribution: the most frequent shapes covering the share, renormalised") {
  const std::vector<std::pair<TaskShape, double>> counts = {{Shape(1000, 1, 500), 50},
                                                            {Shape(2000, 1, 1000), 30},
                                                            {Shape(4000, 0, 0), 15},
                                                            {Shape(8000, 8, 1000), 5}};
  const WorkloadDistribution d = WorkloadDistribution::FromCounts(counts, 0.9);
  // 50 + 30 = 80 < 90, so the third shape is needed; 95 >= 90 ends it.
  REQUIRE(d.tasks().size() == 3);
  CHECK(d.tasks()[0].shape.gpu_milli == 500);
  CHECK(d.tasks()[0].weight == doctest::Approx(50.0 / 95));
  CHECK(d.tasks()[1].weight == doctest::Approx(30.0 / 95));
  CHECK(d.tasks()[2].weight == doctest::Approx(15.0 / 95));
  CHECK(d.covered() == doctest::Approx(0.95));

  const WorkloadDistribution all = WorkloadDistribution::FromCounts(counts, 1.0);
  CHECK(all.tasks().size() == 4);
  double sum = 0;
  for (const TypicalTask& t : all.tasks()) sum += t.weight;
  CHECK(sum == doctest::Approx(1.0));
}

TEST_CASE("placement: workload distribution: shapes differing only in memory are one shape") {
  const WorkloadDistribution d = WorkloadDistribution::FromCounts(
      {{Shape(1000, 1, 500, 1024), 1}, {Shape(1000, 1, 500, 4096), 2}, {Shape(1000, 1, 250), 1}},
      1.0);
  REQUIRE(d.tasks().size() == 2);
  CHECK(d.tasks()[0].shape.gpu_milli == 500);
  CHECK(d.tasks()[0].weight == doctest::Approx(0.75));
  CHECK(d.tasks()[0].shape.memory_mib == 3072);  // (1 * 1024 + 2 * 4096) / 3.
}

TEST_CASE(
    "placement: workload distribution: equal counts go to the larger cpu first; nothing counted") {
  const WorkloadDistribution d = WorkloadDistribution::FromCounts(
      {{Shape(1000, 1, 500), 5}, {Shape(3000, 1, 500), 5}, {Shape(2000, 1, 500), 5}}, 0.5);
  REQUIRE(d.tasks().size() == 2);
  CHECK(d.tasks()[0].shape.cpu_milli == 3000);
  CHECK(d.tasks()[1].shape.cpu_milli == 2000);

  CHECK(WorkloadDistribution::FromCounts({}, 0.95).empty());
  CHECK(WorkloadDistribution::FromCounts({{Shape(1000, 1, 500), 0}}, 0.95).empty());
}

}  // namespace
}  // namespace tessera
