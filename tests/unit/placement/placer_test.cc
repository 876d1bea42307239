// Placer, NodeIndex and NodeState::Fit: which node and which GPUs a task gets.
#include <doctest/doctest.h>

#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;
using testing::GpuShare;
using testing::PlacementFixture;
using testing::WholeGpus;

TEST_CASE("placement: binpack fills the fullest node that fits, spread the emptiest") {
  for (bool binpack : {true, false}) {
    PlacementFixture f(binpack ? PlacementOptions::Binpack() : PlacementOptions::Spread());
    const NodeIndexId a = f.Add(GpuNode("a", 8, "A100"));
    const NodeIndexId b = f.Add(GpuNode("b", 8, "A100"));
    // Take 6 GPUs of "a" directly so that "a" has 2 free and "b" 8.
    PlacementResult setup = f.placer.Place(WholeGpus(6), 1, 1, false);
    REQUIRE(setup.placed());
    const NodeIndexId first = setup.tasks[0].node;
    const NodeIndexId other = first == a ? b : a;
    PlacementResult r = f.placer.Place(WholeGpus(2), 1, 1, false);
    REQUIRE(r.placed());
    CHECK(r.tasks[0].node == (binpack ? first : other));
  }
}

TEST_CASE("placement: a whole-GPU task prefers one NVLink domain, the tightest that fits") {
  PlacementFixture f;
  f.Add(GpuNode("n", 8, "H100", /*gpus_per_domain=*/4));
  // Occupy GPU 0 of domain 0, leaving 3 free there and 4 in domain 1.
  REQUIRE(f.placer.Place(WholeGpus(1), 1, 1, false).placed());
  PlacementResult r = f.placer.Place(WholeGpus(3), 1, 1, false);
  REQUIRE(r.placed());
  CHECK(r.tasks[0].gpu_mask == 0b1110u);  // GPUs 1..3: domain 0 is the tightest fit.
  PlacementResult four = f.placer.Place(WholeGpus(4), 1, 1, false);
  REQUIRE(four.placed());
  CHECK(four.tasks[0].gpu_mask == 0xF0u);
}

TEST_CASE("placement: same-NVLink tasks never span domains; others may") {
  PlacementFixture f;
  f.Add(GpuNode("n", 8, "H100", 4));
  REQUIRE(f.placer.Place(WholeGpus(2), 1, 1, false).placed());  // 2 of domain 0.
  TaskShape same = WholeGpus(5);
  same.same_nvlink = true;
  CHECK_FALSE(f.placer.Place(same, 1, 1, false).placed());
  PlacementResult spanning = f.placer.Place(WholeGpus(5), 1, 1, false);
  REQUIRE(spanning.placed());
  CHECK(__builtin_popcount(spanning.tasks[0].gpu_mask) == 5);
}

TEST_CASE("placement: fractional tasks share GPUs, best fit first, with proportional memory") {
  PlacementFixture f;
  f.Add(GpuNode("n", 2, "T4", 0, 16000));
  PlacementResult a = f.placer.Place(GpuShare(500), 1, 1, false);
  PlacementResult b = f.placer.Place(GpuShare(300), 1, 1, false);
  REQUIRE(a.placed());
  REQUIRE(b.placed());
  // Binpack puts the second share on the GPU already in use.
  CHECK(a.tasks[0].gpu_mask == b.tasks[0].gpu_mask);
  CHECK(a.tasks[0].gpu_memory_mib == 8000);
  CHECK(b.tasks[0].gpu_memory_mib == 4800);
  PlacementResult c = f.placer.Place(GpuShare(300), 1, 1, false);
  REQUIRE(c.placed());
  CHECK(c.tasks[0].gpu_mask != a.tasks[0].gpu_mask);  // 200 left there: not enough.
  const NodeState& n = f.cluster.node(0);
  CHECK(n.max_free_milli() == 700);
  CHECK(n.whole_free_gpus() == 0);
}

TEST_CASE("placement: a share asking for more GPU memory than is free does not fit") {
  PlacementFixture f;
  f.Add(GpuNode("n", 1, "T4", 0, 16000));
  TaskShape s = GpuShare(100);
  s.gpu_memory_mib = 12000;
  REQUIRE(f.placer.Place(s, 1, 1, false).placed());
  CHECK_FALSE(f.placer.Place(s, 1, 1, false).placed());  // 900 milli free but 4000 MiB.
}

TEST_CASE("placement: GPU model constraints are honoured") {
  PlacementFixture f;
  f.Add(GpuNode("a100", 8, "A100"));
  f.Add(GpuNode("h100", 8, "H100"));
  TaskShape s = WholeGpus(1);
  s.models = ModelMask{1} << *f.cluster.models().Find("H100");
  PlacementResult r = f.placer.Place(s, 1, 1, false);
  REQUIRE(r.placed());
  CHECK(f.cluster.node(r.tasks[0].node).name() == "h100");
}

TEST_CASE("placement: a gang is all or nothing and a failed gang holds nothing") {
  PlacementFixture f;
  f.Add(GpuNode("a", 8, "A100"));
  f.Add(GpuNode("b", 8, "A100"));
  REQUIRE(f.placer.Place(WholeGpus(4), 1, 1, false).placed());
  const ResourceVector before = f.cluster.node(0).Allocated() + f.cluster.node(1).Allocated();
  // Three tasks of 8 GPUs cannot fit (12 free, only one whole node).
  PlacementResult r = f.placer.Place(WholeGpus(8), 3, 3, false);
  CHECK_FALSE(r.placed());
  CHECK(r.tasks.empty());
  CHECK(f.cluster.node(0).Allocated() + f.cluster.node(1).Allocated() == before);
  CHECK_FALSE(r.reason.empty());
  // The index was restored too: an 8-GPU task still finds the whole node.
  CHECK(f.placer.Place(WholeGpus(8), 1, 1, false).placed());
}

TEST_CASE("placement: a gang spans nodes when it must; min..max places as many as fit") {
  PlacementFixture f;
  f.Add(GpuNode("a", 8, "A100"));
  f.Add(GpuNode("b", 8, "A100"));
  PlacementResult gang = f.placer.Place(WholeGpus(8), 2, 2, false);
  REQUIRE(gang.placed());
  CHECK(gang.tasks[0].node != gang.tasks[1].node);

  PlacementFixture g;
  g.Add(GpuNode("a", 8, "A100"));
  PlacementResult elastic = g.placer.Place(WholeGpus(2), 2, 10, false);
  REQUIRE(elastic.placed());
  CHECK(elastic.tasks.size() == 4);
}

TEST_CASE("placement: a gang's later tasks stay in the rack of its first") {
  for (bool binpack : {true, false}) {
    PlacementFixture f(binpack ? PlacementOptions::Binpack() : PlacementOptions::Spread());
    // Racks interleaved in index order: without a rack preference, the second task of each
    // gang would land in the other rack.
    for (const char* name : {"r1-a", "r2-a", "r1-b", "r2-b", "r1-c", "r2-c"}) {
      v1::NodeSpec spec = GpuNode(name, 8, "A100");
      (*spec.mutable_labels())["rack"] = std::string(name).substr(0, 2);
      f.Add(spec);
    }
    PlacementResult gang = f.placer.Place(WholeGpus(8), 3, 3, false);
    REQUIRE(gang.placed());
    const std::string rack = f.cluster.node(gang.tasks[0].node).rack();
    for (const TaskAllocation& a : gang.tasks) CHECK(f.cluster.node(a.node).rack() == rack);
    // When the rack is full, the rest of the gang goes elsewhere rather than wait.
    PlacementResult spill = f.placer.Place(WholeGpus(8), 3, 3, false);
    REQUIRE(spill.placed());
    CHECK(f.cluster.node(spill.tasks[0].node).rack() != rack);
  }
}

TEST_CASE("placement: tasks that must share a node go to one node or nowhere") {
  PlacementFixture f;
  f.Add(GpuNode("a", 8, "A100"));
  f.Add(GpuNode("b", 8, "A100"));
  REQUIRE(f.placer.Place(WholeGpus(6), 1, 1, false).placed());  // a or b keeps 2.
  PlacementResult r = f.placer.Place(WholeGpus(2), 4, 4, /*same_node=*/true);
  REQUIRE(r.placed());
  for (const TaskAllocation& a : r.tasks) CHECK(a.node == r.tasks[0].node);
  CHECK(f.cluster.node(r.tasks[0].node).whole_free_gpus() == 0);
  CHECK_FALSE(f.placer.Place(WholeGpus(1), 3, 3, true).placed());  // 2 free on one node only.
}

TEST_CASE("placement: cordoned and draining nodes take no new work") {
  PlacementFixture f;
  const NodeIndexId a = f.Add(GpuNode("a", 8, "A100"));
  f.cluster.node(a).set_cordoned(true);
  f.placer.Refresh(a);
  CHECK_FALSE(f.placer.Place(WholeGpus(1), 1, 1, false).placed());
  f.cluster.node(a).set_cordoned(false);
  f.cluster.node(a).set_draining(true);
  f.placer.Refresh(a);
  CHECK_FALSE(f.placer.Place(WholeGpus(1), 1, 1, false).placed());
  f.cluster.node(a).set_draining(false);
  f.placer.Refresh(a);
  CHECK(f.placer.Place(WholeGpus(1), 1, 1, false).placed());
}

TEST_CASE("placement: an unhealthy GPU is skipped") {
  PlacementFixture f;
  const NodeIndexId a = f.Add(GpuNode("a", 2, "A100"));
  f.cluster.node(a).SetGpuHealthy(0, false);
  f.placer.Refresh(a);
  PlacementResult r = f.placer.Place(WholeGpus(1), 1, 1, false);
  REQUIRE(r.placed());
  CHECK(r.tasks[0].gpu_mask == 0b10u);
  CHECK_FALSE(f.placer.Place(WholeGpus(1), 1, 1, false).placed());
}

TEST_CASE("placement: CPU-only tasks are bounded by cpu and memory") {
  PlacementFixture f;
  f.Add(GpuNode("a", 0, ""));
  TaskShape s;
  s.cpu_milli = 40000;
  s.memory_mib = 1024;
  REQUIRE(f.placer.Place(s, 1, 1, false).placed());
  CHECK_FALSE(f.placer.Place(s, 1, 1, false).placed());  // 24000 milli left.
  s.cpu_milli = 24000;
  CHECK(f.placer.Place(s, 1, 1, false).placed());
}

TEST_CASE("placement: release returns exactly what was taken") {
  PlacementFixture f;
  f.Add(GpuNode("a", 4, "A100", 2));
  PlacementResult r = f.placer.Place(GpuShare(250), 1, 1, false);
  REQUIRE(r.placed());
  f.placer.Release(r.tasks[0]);
  const NodeState& n = f.cluster.node(0);
  CHECK(n.Allocated().IsZero());
  CHECK(n.whole_free_gpus() == 4);
  CHECK(n.running_tasks() == 0);
}

}  // namespace
}  // namespace tessera
