// The fragmentation measure (fragmentation.h): F_n(m) and F_n(M) on hand-computed cases from the
// FGD paper's definitions, the host-limited extension, and the grouped F_n(M) against the plain
// weighted sum of F_n(m) on random node states.
#include <doctest/doctest.h>

#include <random>

#include "placement/fragmentation.h"

namespace tessera {
namespace {

TaskShape Share(int32_t milli, int64_t cpu, int64_t memory = 0) {
  TaskShape s;
  s.cpu_milli = cpu;
  s.memory_mib = memory;
  s.gpu_count = 1;
  s.gpu_milli = milli;
  return s;
}

TaskShape Whole(int32_t count, int64_t cpu, int64_t memory = 0) {
  TaskShape s = Share(1000, cpu, memory);
  s.gpu_count = count;
  return s;
}

TaskShape CpuOnly(int64_t cpu) {
  TaskShape s;
  s.cpu_milli = cpu;
  return s;
}

NodeFree Node(std::vector<int32_t> gpu_free, int64_t cpu, int64_t memory = 1 << 20, int model = 0) {
  NodeFree n;
  n.model = model;
  n.cpu_milli = cpu;
  n.memory_mib = memory;
  n.gpus = static_cast<int>(gpu_free.size());
  for (size_t i = 0; i < gpu_free.size(); ++i) n.gpu_free[i] = gpu_free[i];
  return n;
}

// Two task types, equally frequent: a 0.4-GPU share with 2 cores and one whole GPU with 4 cores.
WorkloadDistribution TwoTypes() {
  return WorkloadDistribution::FromCounts({{Share(400, 2000), 1}, {Whole(1, 4000), 1}}, 1.0);
}

TEST_CASE("placement: fragmentation: F_n(m) counts the GPUs a task that fits cannot use") {
  // GPUs with 1000, 500, 300 and 0 milli free; 1800 free in all.
  const NodeFree n = Node({1000, 500, 300, 0}, 8000);
  // A 0.4 share fits on the 1000 and the 500: only the 300 is a fragment for it.
  CHECK(TaskFragmentation(n, Share(400, 2000), false) == 300);
  // A whole GPU fits on the 1000: the 500 and the 300 are fragments.
  CHECK(TaskFragmentation(n, Whole(1, 4000), false) == 800);
  // Two whole GPUs do not fit at all: everything free is a fragment.
  CHECK(TaskFragmentation(n, Whole(2, 4000), false) == 1800);
  // A task without GPUs can use none of them.
  CHECK(TaskFragmentation(n, CpuOnly(1000), false) == 1800);
}

TEST_CASE(
    "placement: fragmentation: a task the host cannot take, or whose model is not allowed, uses "
    "none") {
  const NodeFree short_of_cpu = Node({1000, 500, 300, 0}, 3000);
  CHECK(TaskFragmentation(short_of_cpu, Whole(1, 4000), false) == 1800);
  CHECK(TaskFragmentation(short_of_cpu, Share(400, 2000), false) == 300);

  TaskShape elsewhere = Whole(1, 1000);
  elsewhere.models = ModelMask{1} << 3;  // model 3 only; the node is model 0.
  CHECK(TaskFragmentation(Node({1000}, 8000), elsewhere, false) == 1000);

  // Memory counts only when asked for (the simulator ignores it).
  const NodeFree short_of_memory = Node({1000, 1000}, 8000, /*memory=*/1024);
  CHECK(TaskFragmentation(short_of_memory, Whole(1, 1000, 4096), false) == 0);
  CHECK(TaskFragmentation(short_of_memory, Whole(1, 1000, 4096), true) == 2000);
}

TEST_CASE("placement: fragmentation: F_n(M) is the popularity-weighted mean of F_n(m)") {
  FragmentationMeasure fgd(TwoTypes(), {});
  // 0.5 * 300 + 0.5 * 800.
  CHECK(fgd.Of(Node({1000, 500, 300, 0}, 8000)) == doctest::Approx(550));
  // With 3 cores free the whole-GPU type cannot run: 0.5 * 300 + 0.5 * 1800.
  CHECK(fgd.Of(Node({1000, 500, 300, 0}, 3000)) == doctest::Approx(1050));
  // Nothing free, nothing fragmented; a node of a model no type may use is all fragment.
  CHECK(fgd.Of(Node({0, 0}, 8000)) == 0);

  TaskShape only_model_1 = Whole(1, 1000);
  only_model_1.models = ModelMask{1} << 1;
  FragmentationMeasure pinned(WorkloadDistribution::FromCounts({{only_model_1, 1}}, 1.0), {});
  CHECK(pinned.Of(Node({1000, 1000}, 8000, 1 << 20, /*model=*/0)) == doctest::Approx(2000));
  CHECK(pinned.Of(Node({1000, 1000}, 8000, 1 << 20, /*model=*/1)) == doctest::Approx(0));
}

TEST_CASE(
    "placement: fragmentation: GPUs the host cannot feed count when host_limited_weight is set") {
  // Eight free GPUs and 96 cores; tasks of one GPU and 18 cores: five fit by cpu, three GPUs idle.
  const WorkloadDistribution w = WorkloadDistribution::FromCounts({{Whole(1, 18000), 1}}, 1.0);
  const NodeFree n = Node(std::vector<int32_t>(8, 1000), 96000);
  CHECK(FragmentationMeasure(w, {}).Of(n) == doctest::Approx(0));
  CHECK(FragmentationMeasure(w, {.host_limited_weight = 1}).Of(n) == doctest::Approx(3000));
  CHECK(FragmentationMeasure(w, {.host_limited_weight = 0.5}).Of(n) == doctest::Approx(1500));
  // Memory limits the tasks too when checked: 4 tasks of 64 GiB in 256 GiB.
  const WorkloadDistribution big =
      WorkloadDistribution::FromCounts({{Whole(1, 1000, 65536), 1}}, 1.0);
  const NodeFree roomy = Node(std::vector<int32_t>(8, 1000), 96000, 262144);
  CHECK(FragmentationMeasure(big, {.check_memory = true, .host_limited_weight = 1}).Of(roomy) ==
        doctest::Approx(4000));
  CHECK(FragmentationMeasure(big, {.host_limited_weight = 1}).Of(roomy) == doctest::Approx(0));
}

TEST_CASE("placement: fragmentation: a shape asking for no GPU capacity starves nothing") {
  // A time slice without a fraction has gpu_milli 0: every free GPU can take one, and the host
  // only has to feed one task (no division by the per-task capacity).
  const WorkloadDistribution w = WorkloadDistribution::FromCounts({{Share(0, 4000), 1}}, 1.0);
  const FragmentationMeasure measure(w, {.check_memory = true, .host_limited_weight = 0.75});
  CHECK(measure.Of(Node({1000, 500}, 8000)) == doctest::Approx(0));
  // A host without the cpu for one task leaves all of its GPUs unusable.
  CHECK(measure.Of(Node({1000, 500}, 2000)) == doctest::Approx(1500));
}

TEST_CASE(
    "placement: fragmentation: the grouped F_n(M) equals the weighted sum of F_n(m) (random "
    "states)") {
  std::mt19937_64 random(7);
  std::vector<std::pair<TaskShape, double>> counts;
  for (int32_t milli : {100, 250, 400, 500, 750}) counts.push_back({Share(milli, 2000), 3});
  for (int64_t cpu : {4000, 12000, 30000}) counts.push_back({Whole(1, cpu), 4});
  counts.push_back({Whole(2, 16000), 1});
  counts.push_back({Whole(8, 64000), 1});
  counts.push_back({CpuOnly(8000), 2});
  const WorkloadDistribution w = WorkloadDistribution::FromCounts(counts, 1.0);
  for (bool memory : {false, true}) {
    FragmentationMeasure measure(w, {.check_memory = memory});
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int32_t> free(1 + random() % 8);
      for (int32_t& f : free) f = static_cast<int32_t>(random() % 5) * 250;
      const NodeFree n = Node(free, static_cast<int64_t>(random() % 64) * 1000,
                              static_cast<int64_t>(random() % 4096));
      double expected = 0;
      for (const TypicalTask& t : w.tasks()) {
        expected += t.weight * static_cast<double>(TaskFragmentation(n, t.shape, memory));
      }
      CHECK(measure.Of(n) == doctest::Approx(expected));
    }
  }
}

}  // namespace
}  // namespace tessera
