// The learned workload (WorkloadLearner, and FgdScorer / FragmentationAwareScorer without
// expected_tasks): it converges to the submitted mix, forgets with its half-life, offers a new
// distribution only when the mix changed, and a change drops the scorers' cached choices. And
// PlacementOptions::max_candidates: fragmentation awareness compares no more candidates than
// asked.
#include <doctest/doctest.h>

#include <map>

#include "placement/fgd_scorer.h"
#include "placement/workload_learner.h"
#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;
using testing::GpuShare;
using testing::PlacementFixture;
using testing::WholeGpus;

// The weight of each GPU share (or 1000 for whole GPUs) in `d`.
std::map<int32_t, double> WeightsByShare(const WorkloadDistribution& d) {
  std::map<int32_t, double> w;
  for (const TypicalTask& t : d.tasks()) w[t.shape.gpu_milli] += t.weight;
  return w;
}

// The i-th shape of a fixed mix: 50 % half GPUs, 30 % quarter GPUs, 20 % whole GPUs.
TaskShape MixShape(int i) {
  const int slot = i % 10;
  if (slot < 5) return GpuShare(500);
  if (slot < 8) return GpuShare(250);
  return WholeGpus(1);
}

TEST_CASE(
    "placement: learned workload: converges to the submitted mix, the same for the same input") {
  WorkloadLearner a({.coverage = 1.0, .half_life_tasks = 0});
  WorkloadLearner b({.coverage = 1.0, .half_life_tasks = 0});
  int offered = 0;
  for (int i = 0; i < 3000; ++i) {
    if (a.Observe(MixShape(i), 1)) ++offered;
    (void)b.Observe(MixShape(i), 1);
  }
  const std::map<int32_t, double> w = WeightsByShare(a.current());
  REQUIRE(w.size() == 3);
  CHECK(w.at(500) == doctest::Approx(0.5).epsilon(0.02));
  CHECK(w.at(250) == doctest::Approx(0.3).epsilon(0.02));
  CHECK(w.at(1000) == doctest::Approx(0.2).epsilon(0.02));
  CHECK(WeightsByShare(b.current()) == w);
  // A steady mix is offered a few times while it is learned, not at every rebuild.
  CHECK(offered >= 1);
  CHECK(offered <= 8);
  int late = 0;
  for (int i = 3000; i < 6000; ++i) late += a.Observe(MixShape(i), 1).has_value();
  CHECK(late == 0);
}

TEST_CASE("placement: learned workload: old shapes fade with the half-life") {
  WorkloadLearner forgetting({.coverage = 1.0, .half_life_tasks = 500});
  WorkloadLearner keeping({.coverage = 1.0, .half_life_tasks = 0});
  for (WorkloadLearner* l : {&forgetting, &keeping}) {
    for (int i = 0; i < 4000; ++i) (void)l->Observe(GpuShare(500), 1);
    for (int i = 0; i < 4000; ++i) (void)l->Observe(GpuShare(250), 1);
  }
  // 4,000 tasks are 8 half-lives: the old shape keeps 1/256 of its weight.
  CHECK(WeightsByShare(forgetting.current())[250] > 0.99);
  CHECK(WeightsByShare(keeping.current())[250] == doctest::Approx(0.5).epsilon(0.02));
  // A job of many tasks counts each of them.
  WorkloadLearner tasks({.coverage = 1.0, .rebuild_every = 1});
  (void)tasks.Observe(GpuShare(500), 3);
  (void)tasks.Observe(GpuShare(250), 1);
  (void)tasks.Observe(GpuShare(250), 0);  // ignored.
  CHECK(tasks.observations() == 4);
  CHECK(WeightsByShare(tasks.current())[500] == doctest::Approx(0.75));
}

TEST_CASE("placement: learned workload: a new workload drops the cached choices") {
  // GPU 0 has 500 free, GPU 1 is free. With nothing learned a 0.3 share takes the fuller GPU;
  // once 0.5 shares are learned it takes GPU 1, leaving 500 and 700 that they can use. The
  // node does not change in between, so only dropping the cached choice can change it.
  PlacementOptions learning = PlacementOptions::Fgd({});
  PlacementOptions not_learning = learning;
  not_learning.learn_workload = false;
  PlacementOptions explicit_workload = PlacementOptions::Fgd(
      {ExpectedTask{.cpu_milli = 1000, .memory_mib = 1024, .gpu_count = 1, .gpu_milli = 1000}});
  for (const PlacementOptions* o : {&learning, &not_learning, &explicit_workload}) {
    PlacementFixture f(*o);
    const NodeIndexId n = f.Add(GpuNode("n", 2, "T4", 0, 16000));
    std::optional<TaskAllocation> half = f.cluster.node(n).FitOn(GpuShare(500), 0b01);
    REQUIRE(half.has_value());
    f.placer.Apply(*half);
    const NodeState& node = f.cluster.node(n);
    const uint64_t stamp = node.stamp();
    CHECK(f.placer.scorer().Choose(node, GpuShare(300))->allocation.gpu_mask == 0b01u);
    for (int i = 0; i < 64; ++i) f.placer.Observe(GpuShare(500), 1);
    REQUIRE(node.stamp() == stamp);
    const uint32_t after = f.placer.scorer().Choose(node, GpuShare(300))->allocation.gpu_mask;
    // Learning moves the share; without it, or with a workload given, nothing changes.
    CHECK(after == (o == &learning ? 0b10u : 0b01u));
  }
}

TEST_CASE("placement: fragmentation-aware compares at most max_candidates fitting nodes") {
  // Expected: half GPUs. A 0.3 share on "a" (0.6 free, so the tightest candidate) would leave
  // 0.3 that no expected task can use; on "b" (a free GPU) it leaves 0.7, which one can.
  // Comparing both finds "b"; a bound of one stops at "a".
  for (int bound : {0, 2, 1}) {
    PlacementOptions o = PlacementOptions::FragmentationAware(
        {ExpectedTask{.cpu_milli = 1000, .gpu_count = 1, .gpu_milli = 500}});
    o.max_candidates = bound;
    PlacementFixture f(o);
    const NodeIndexId a = f.Add(GpuNode("a", 1, "T4", 0, 16000));
    const NodeIndexId b = f.Add(GpuNode("b", 1, "T4", 0, 16000));
    f.placer.Apply(*f.cluster.node(a).FitOn(GpuShare(400), 0b1));
    PlacementResult r = f.placer.Place(GpuShare(300), 1, 1, false);
    REQUIRE(r.placed());
    CAPTURE(bound);
    CHECK(r.tasks[0].node == (bound == 1 ? a : b));
  }
  CHECK(MakeScorer(PlacementOptions::FragmentationAware({}))->candidates() ==
        PlacementOptions().max_candidates);
  PlacementOptions all = PlacementOptions::FragmentationAware({});
  all.max_candidates = 0;
  CHECK(MakeScorer(all)->candidates() == Scorer::kAllCandidates);
}

}  // namespace
}  // namespace tessera
