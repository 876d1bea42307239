// PreemptionPlanner and PreemptionGuard on tiny clusters: the cheapest sufficient victims, the
// reprieve of unneeded ones, gangs across nodes, and the guards' arithmetic.
#include <doctest/doctest.h>

#include <map>

#include "preemption/preemption_guard.h"
#include "preemption/preemption_planner.h"
#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;
using testing::WholeGpus;

// A cluster whose nodes are filled with one-GPU victims of given costs.
struct Scenario {
  Cluster cluster;
  std::vector<Victim> victims;

  NodeIndexId Node(const std::string& name, int gpus) {
    auto id = cluster.AddNode(GpuNode(name, gpus, "A100"));
    REQUIRE(id.ok());
    return *id;
  }
  // A victim holding `gpus` GPUs on `node`, applied to the node.
  void Victim1(uint64_t job, NodeIndexId node, int gpus, int64_t lost, int whole = 1) {
    NodeState& n = cluster.node(node);
    auto a = n.Fit(WholeGpus(gpus), DevicePreference::kTightest);
    REQUIRE(a.has_value());
    n.Apply(*a);
    Victim v;
    v.job = job;
    v.shrink_only = whole == 0;
    v.tasks.push_back({0, *a});
    v.cost.whole_jobs = whole;
    v.cost.lost_gpu_us = lost;
    victims.push_back(v);
  }
  std::optional<PreemptionPlan> Plan(const TaskShape& shape, int min_tasks,
                                     bool same_node = false) {
    PreemptionPlanner planner;
    return planner.Plan(
        cluster, shape, min_tasks, same_node,
        [&](NodeIndexId node) {
          std::vector<const Victim*> out;
          for (const Victim& v : victims) {
            if (v.tasks[0].allocation.node == node) out.push_back(&v);
          }
          return out;
        },
        [](const NodeState&) { return true; });
  }
};

std::vector<uint64_t> Jobs(const PreemptionPlan& plan) {
  std::vector<uint64_t> out;
  for (const Victim* v : plan.victims) out.push_back(v->job);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("preemption planner: the victims that lose least, and only as many as needed") {
  Scenario s;
  const NodeIndexId n = s.Node("n", 4);
  s.Victim1(1, n, 1, 500);
  s.Victim1(2, n, 1, 100);
  s.Victim1(3, n, 1, 300);
  s.Victim1(4, n, 1, 200);
  auto plan = s.Plan(WholeGpus(2), 1);
  REQUIRE(plan.has_value());
  CHECK(Jobs(*plan) == std::vector<uint64_t>{2, 4});
  CHECK(plan->cost.lost_gpu_us == 300);
  CHECK(plan->nodes == std::vector<NodeIndexId>{n});
}

TEST_CASE("preemption planner: a victim that does not help is given back") {
  Scenario s;
  const NodeIndexId n = s.Node("n", 4);
  s.Victim1(1, n, 1, 10);  // cheapest, but one GPU is not enough alone...
  s.Victim1(2, n, 3, 50);  // ...while this one frees three.
  auto plan = s.Plan(WholeGpus(3), 1);
  REQUIRE(plan.has_value());
  CHECK(Jobs(*plan) == std::vector<uint64_t>{2});
}

TEST_CASE("preemption planner: shrinks before whole jobs, the cheapest node wins") {
  Scenario s;
  const NodeIndexId a = s.Node("a", 2);
  const NodeIndexId b = s.Node("b", 2);
  s.Victim1(1, a, 1, 0);
  s.Victim1(2, a, 1, 0);
  s.Victim1(3, b, 1, 0, /*whole=*/0);
  s.Victim1(4, b, 1, 0, /*whole=*/0);
  auto plan = s.Plan(WholeGpus(2), 1);
  REQUIRE(plan.has_value());
  CHECK(plan->nodes == std::vector<NodeIndexId>{b});
  CHECK(plan->cost.whole_jobs == 0);
}

TEST_CASE("preemption planner: a gang across nodes counts free room and victims together") {
  Scenario s;
  const NodeIndexId a = s.Node("a", 4);
  const NodeIndexId b = s.Node("b", 4);
  s.Victim1(1, a, 4, 100);  // node a full; node b empty.
  (void)b;
  auto plan = s.Plan(WholeGpus(4), 2);
  REQUIRE(plan.has_value());
  CHECK(Jobs(*plan) == std::vector<uint64_t>{1});
  CHECK(plan->nodes.size() == 2);
  // More than the cluster could ever hold: no plan.
  CHECK_FALSE(s.Plan(WholeGpus(4), 3).has_value());
}

TEST_CASE("preemption planner: no plan when stopping everyone would still not help") {
  Scenario s;
  const NodeIndexId n = s.Node("n", 2);
  s.Victim1(1, n, 2, 0);
  CHECK_FALSE(s.Plan(WholeGpus(4), 1).has_value());
}

TEST_CASE("preemption guard: minimum runtime, cooldown and the per-minute budget") {
  PreemptionOptions options;
  options.min_runtime = std::chrono::seconds(60);
  options.cooldown = std::chrono::seconds(300);
  options.max_per_minute = 2;
  PreemptionGuard guard(options);
  constexpr int64_t s = 1'000'000;
  CHECK_FALSE(guard.MayPreempt(100 * s, 50 * s, 0));  // ran 50 s.
  CHECK(guard.MayPreempt(110 * s, 50 * s, 0));
  CHECK(guard.AllowedAt(50 * s, 0) == 110 * s);
  CHECK_FALSE(guard.MayPreempt(500 * s, 0 + 1, 400 * s));  // preempted 100 s ago.
  CHECK(guard.AllowedAt(1, 400 * s) == 700 * s);
  CHECK(guard.WithinRate(0, 2));
  guard.Record(0, 2);
  CHECK_FALSE(guard.WithinRate(30 * s, 1));
  CHECK(guard.RateAllowsAt(30 * s, 1) == 60 * s);
  CHECK(guard.WithinRate(60 * s, 2));
}

}  // namespace
}  // namespace tessera
