// Shadow time: when and where a job that does not fit could start if running tasks end when
// their limits say.
#include <doctest/doctest.h>

#include "placement/shadow_time.h"
#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;
using testing::WholeGpus;

TEST_CASE("shadow time: the job starts when enough tasks have ended, on the nodes they free") {
  Cluster c;
  const NodeIndexId a = *c.AddNode(GpuNode("a", 4, "A100"));
  const NodeIndexId b = *c.AddNode(GpuNode("b", 4, "A100"));
  std::vector<RunningTaskEnd> running;
  auto hold = [&](NodeIndexId node, int gpus, TimestampUs end) {
    auto alloc = c.node(node).Fit(WholeGpus(gpus), DevicePreference::kTightest);
    REQUIRE(alloc.has_value());
    c.node(node).Apply(*alloc);
    running.push_back({*alloc, end});
  };
  hold(a, 2, 100);
  hold(a, 2, 300);
  hold(b, 4, 200);
  auto all = [](const NodeState&) { return true; };
  // One 4-GPU task: node b frees at 200, before node a is empty at 300.
  auto plan = PlanShadowStart(c, WholeGpus(4), 1, false, running, all, 0);
  REQUIRE(plan.has_value());
  CHECK(plan->start_us == 200);
  CHECK(plan->nodes == std::vector<NodeIndexId>{b});
  // Two 4-GPU tasks need both nodes: 300.
  plan = PlanShadowStart(c, WholeGpus(4), 2, false, running, all, 0);
  REQUIRE(plan.has_value());
  CHECK(plan->start_us == 300);
  CHECK(plan->nodes.size() == 2);
  // Two 2-GPU tasks on one node: node a frees 2 at 100, 4 at 300; node b 4 at 200.
  plan = PlanShadowStart(c, WholeGpus(2), 2, /*same_node=*/true, running, all, 0);
  REQUIRE(plan.has_value());
  CHECK(plan->start_us == 200);
  // More than the cluster has: never.
  CHECK_FALSE(PlanShadowStart(c, WholeGpus(4), 3, false, running, all, 0).has_value());
  // Nodes the caller excludes are not used.
  auto not_b = [b](const NodeState& n) { return n.id() != b; };
  plan = PlanShadowStart(c, WholeGpus(4), 1, false, running, not_b, 0);
  REQUIRE(plan.has_value());
  CHECK(plan->start_us == 300);
}

TEST_CASE("shadow time: tasks that fit count whole GPUs, shares and host limits") {
  Cluster c;
  v1::NodeSpec spec = GpuNode("n", 4, "A100");
  spec.set_cpu_milli(3000);
  const NodeIndexId n = *c.AddNode(spec);
  CHECK(TasksThatFit(c.node(n), WholeGpus(1)) == 3);  // cpu: 3 x 1000.
  TaskShape share;
  share.cpu_milli = 100;
  share.memory_mib = 10;
  share.gpu_count = 1;
  share.gpu_milli = 300;
  CHECK(TasksThatFit(c.node(n), share) == 12);  // 3 per GPU.
  TaskShape other_model = WholeGpus(1);
  other_model.models = ModelMask{1} << 5;
  CHECK(TasksThatFit(c.node(n), other_model) == 0);
}

}  // namespace
}  // namespace tessera
