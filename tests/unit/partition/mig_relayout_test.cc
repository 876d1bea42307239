// MIG re-layout: idle instances of a managed GPU are re-shaped for a waiting job (busy ones
// kept), and a drain is planned only where the caller says the holders may be drained.
#include "partition/mig_relayout.h"

#include <doctest/doctest.h>

#include "tessera/job.h"
#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

// One node with one H100 the scheduler manages, a single 7g instance now.
v1::NodeSpec ManagedH100(const std::string& name) {
  v1::NodeSpec spec = testing::GpuNode(name, 1, "H100-80GB");
  v1::GpuDevice* gpu = spec.mutable_gpus(0);
  gpu->set_sharing(v1::GPU_SHARING_MIG);
  gpu->set_mig_managed(true);
  v1::MigInstance* whole = gpu->add_mig_instances();
  whole->set_profile("7g.80gb");
  whole->set_start(0);
  return spec;
}

TaskShape Mig(testing::PlacementFixture& f, const std::string& profile) {
  return MakeTaskShape(JobSpecBuilder("q").MigProfile(profile).Build(), f.cluster.models());
}

auto Anywhere = [](const NodeState&) { return true; };

TEST_CASE("mig relayout: an idle 7g instance is re-shaped for a 3g, and the change reported") {
  testing::PlacementFixture f;
  const NodeIndexId node = f.Add(ManagedH100("h100-0"));
  std::vector<MigLayoutChange> changes;
  const bool changed = RelayoutIdleMig(f.cluster, Mig(f, "3g.40gb"), 1, Anywhere,
                                       [&](const MigLayoutChange& c) { changes.push_back(c); });
  CHECK(changed);
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].node == &f.cluster.node(node));
  CHECK(changes[0].gpu == 0);
  CHECK(changes[0].offered >= 1);
  CHECK(changes[0].described.find("3g.40gb@") != std::string::npos);
  bool has_3g = false;
  for (const v1::MigInstance& m : changes[0].layout) has_3g |= m.profile() == "3g.40gb";
  CHECK(has_3g);
  // The cluster holds the new layout: the 3g now fits without another change.
  f.placer.Refresh(node);
  CHECK(f.placer.Place(Mig(f, "3g.40gb"), 1, 1, false).placed());
}

TEST_CASE("mig relayout: nodes the caller holds back, and whole-GPU jobs, change nothing") {
  testing::PlacementFixture f;
  f.Add(ManagedH100("h100-0"));
  int calls = 0;
  auto count = [&](const MigLayoutChange&) { ++calls; };
  CHECK_FALSE(RelayoutIdleMig(
      f.cluster, Mig(f, "3g.40gb"), 1, [](const NodeState&) { return false; }, count));
  CHECK_FALSE(RelayoutIdleMig(f.cluster, testing::WholeGpus(1), 1, Anywhere, count));
  CHECK(calls == 0);
}

TEST_CASE("mig relayout: a drain is planned only over holders the caller lets go") {
  testing::PlacementFixture f;
  const NodeIndexId node = f.Add(ManagedH100("h100-0"));
  // A task holds the whole GPU as its 7g instance: no idle instance to re-shape.
  REQUIRE(f.placer.Place(Mig(f, "7g.80gb"), 1, 1, false).placed());
  CHECK_FALSE(
      RelayoutIdleMig(f.cluster, Mig(f, "3g.40gb"), 1, Anywhere, [](const MigLayoutChange&) {}));

  int asked = 0;
  auto drainable = [&](const NodeState&, int gpu, int instance) {
    ++asked;
    CHECK(gpu == 0);
    CHECK(instance == 0);
    return MigInstanceHolder{42, 1000};
  };
  const std::optional<MigDrainPlan> plan = PlanMigDrain(f.cluster, Mig(f, "3g.40gb"), 1, drainable);
  REQUIRE(plan);
  CHECK(asked == 1);
  CHECK(plan->node == node);
  CHECK(plan->gpu == 0);
  CHECK(plan->victims == std::vector<uint64_t>{42});
  CHECK(plan->plan.drain_cost == 1000);

  // The caller refuses the holder (the victim rule said no): no plan.
  auto refused = [](const NodeState&, int, int) { return MigInstanceHolder{42, -1}; };
  CHECK_FALSE(PlanMigDrain(f.cluster, Mig(f, "3g.40gb"), 1, refused));
  // Work costing more than the drain limit is not stopped either.
  auto costly = [](const NodeState&, int, int) {
    return MigInstanceHolder{42, kMaxMigDrainLostGpuUs + 1};
  };
  CHECK_FALSE(PlanMigDrain(f.cluster, Mig(f, "3g.40gb"), 1, costly));
}

}  // namespace
}  // namespace tessera
