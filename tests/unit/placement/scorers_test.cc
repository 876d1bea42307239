// The comparing scorers on tiny clusters: which node and which GPU FGD, BestFit and the
// fragmentation-aware default choose where binpack would choose otherwise; ties broken by a
// seeded node order; NodeState::FitOn and stamps, which those scorers rely on.
#include <doctest/doctest.h>

#include <set>

#include "placement/fgd_scorer.h"
#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;
using testing::GpuShare;
using testing::PlacementFixture;
using testing::WholeGpus;

ExpectedTask Expect(int32_t gpus, int32_t milli, int64_t cpu, int64_t memory = 0) {
  ExpectedTask t;
  t.gpu_count = gpus;
  t.gpu_milli = milli;
  t.cpu_milli = cpu;
  t.memory_mib = memory;
  return t;
}

TaskShape CpuTask(int64_t cpu, int64_t memory = 1024) {
  TaskShape s;
  s.cpu_milli = cpu;
  s.memory_mib = memory;
  return s;
}

void Take(PlacementFixture& f, NodeIndexId node, const TaskShape& shape, uint32_t mask) {
  std::optional<TaskAllocation> a = f.cluster.node(node).FitOn(shape, mask);
  REQUIRE(a.has_value());
  f.placer.Apply(*a);
}

TEST_CASE("placement: FGD puts a share on the GPU that leaves room for the expected shares") {
  // GPU 0 has 500 free, GPU 1 is free; only 0.5 shares are expected. A 0.3 share on GPU 0
  // would leave 200 that no expected task can use; on GPU 1 it leaves 700 and 500, both usable.
  PlacementFixture fgd(PlacementOptions::Fgd({Expect(1, 500, 1000)}));
  PlacementFixture binpack;
  for (PlacementFixture* f : {&fgd, &binpack}) {
    const NodeIndexId n = f->Add(GpuNode("n", 2, "T4", 0, 16000));
    Take(*f, n, GpuShare(500), 0b01);
  }
  PlacementResult r = fgd.placer.Place(GpuShare(300), 1, 1, false);
  REQUIRE(r.placed());
  CHECK(r.tasks[0].gpu_mask == 0b10u);
  PlacementResult tight = binpack.placer.Place(GpuShare(300), 1, 1, false);
  REQUIRE(tight.placed());
  CHECK(tight.tasks[0].gpu_mask == 0b01u);  // binpack fills the fuller GPU.
}

TEST_CASE("placement: FGD sends a CPU-only task where it strands no GPU") {
  // Expected: whole GPUs with 60 cores. On "a" a 10-core task would leave 53 cores beside two
  // free GPUs, so they could no longer be used; "b" has no free GPU to strand.
  PlacementFixture fgd(PlacementOptions::Fgd({Expect(1, 1000, 60000)}));
  PlacementFixture binpack;
  for (PlacementFixture* f : {&fgd, &binpack}) {
    const NodeIndexId a = f->Add(GpuNode("a", 2, "A100"));
    const NodeIndexId b = f->Add(GpuNode("b", 2, "A100"));
    Take(*f, a, CpuTask(1000), 0);
    TaskShape two = WholeGpus(2, /*cpu=*/0);
    Take(*f, b, two, 0b11);
  }
  PlacementResult r = fgd.placer.Place(CpuTask(10000), 1, 1, false);
  REQUIRE(r.placed());
  CHECK(fgd.cluster.node(r.tasks[0].node).name() == "b");
  PlacementResult tight = binpack.placer.Place(CpuTask(10000), 1, 1, false);
  REQUIRE(tight.placed());
  CHECK(binpack.cluster.node(tight.tasks[0].node).name() == "a");  // the least free cpu.
}

TEST_CASE("placement: BestFit takes the node left with the least free cpu and GPU") {
  PlacementFixture f(PlacementOptions::BestFit());
  const NodeIndexId a = f.Add(GpuNode("a", 8, "A100"));
  f.Add(GpuNode("b", 8, "A100"));
  Take(f, a, WholeGpus(4), 0x0F);
  PlacementResult r = f.placer.Place(WholeGpus(1), 1, 1, false);
  REQUIRE(r.placed());
  CHECK(r.tasks[0].node == a);
  CHECK(r.tasks[0].gpu_mask == 0x10u);  // the lowest-numbered free GPU.
}

TEST_CASE("placement: the fragmentation-aware default keeps memory for the expected tasks") {
  // Expected: whole GPUs that need 300,000 MiB. A CPU-only task of the same memory would leave
  // "a" (all GPUs free, 512 GiB) unable to feed any of them; "b" has no free GPU. FGD checks
  // cpu only and sees no difference.
  PlacementFixture aware(PlacementOptions::FragmentationAware({Expect(1, 1000, 1000, 300000)}));
  const NodeIndexId a = aware.Add(GpuNode("a", 2, "A100"));
  const NodeIndexId b = aware.Add(GpuNode("b", 2, "A100"));
  Take(aware, b, WholeGpus(2, 0), 0b11);
  const TaskShape heavy = CpuTask(1000, 300000);
  PlacementResult r = aware.placer.Place(heavy, 1, 1, false);
  REQUIRE(r.placed());
  CHECK(r.tasks[0].node == b);

  FgdScorer fgd({Expect(1, 1000, 1000, 300000)}, 1.0);
  fgd.Attach(aware.cluster);
  aware.placer.Release(r.tasks[0]);
  CHECK(fgd.Choose(aware.cluster.node(a), heavy)->score ==
        fgd.Choose(aware.cluster.node(b), heavy)->score);
}

TEST_CASE("placement: ties go by a node order fixed by the seed") {
  std::set<std::string> chosen;
  for (uint64_t seed = 1; seed <= 32; ++seed) {
    std::string first;
    for (int repeat = 0; repeat < 2; ++repeat) {
      PlacementFixture f(PlacementOptions::BestFit());
      f.Add(GpuNode("a", 8, "A100"));
      f.Add(GpuNode("b", 8, "A100"));
      f.Add(GpuNode("c", 8, "A100"));
      f.placer.BreakTiesByRandomNodeOrder(seed);
      PlacementResult r = f.placer.Place(WholeGpus(1), 1, 1, false);
      REQUIRE(r.placed());
      const std::string name = f.cluster.node(r.tasks[0].node).name();
      if (repeat == 0) first = name;
      CHECK(name == first);  // the same seed, the same choice.
      // The order stays fixed: the next task packs onto the same node.
      PlacementResult next = f.placer.Place(WholeGpus(1), 1, 1, false);
      REQUIRE(next.placed());
      CHECK(next.tasks[0].node == r.tasks[0].node);
    }
    chosen.insert(first);
  }
  CHECK(chosen.size() == 3);  // every node comes first for some seed.
}

TEST_CASE("placement: FitOn takes exactly the GPUs asked for, or nothing") {
  PlacementFixture f;
  const NodeIndexId id = f.Add(GpuNode("n", 4, "A100", /*gpus_per_domain=*/2));
  const NodeState& n = f.cluster.node(id);
  CHECK(n.FitOn(WholeGpus(2), 0b0101).has_value());
  CHECK_FALSE(n.FitOn(WholeGpus(2), 0b0001).has_value());  // one GPU for a two-GPU task.
  TaskShape same = WholeGpus(2);
  same.same_nvlink = true;
  CHECK_FALSE(n.FitOn(same, 0b0101).has_value());  // GPUs 0 and 2 are in different domains.
  CHECK(n.FitOn(same, 0b0011).has_value());
  CHECK_FALSE(n.FitOn(CpuTask(1000), 0b1).has_value());  // a CPU-only task takes no GPU.
  CHECK(n.FitOn(CpuTask(1000), 0).has_value());

  const uint64_t before = n.stamp();
  Take(f, id, GpuShare(600), 0b0001);
  CHECK(n.stamp() != before);
  CHECK_FALSE(n.FitOn(GpuShare(500), 0b0001).has_value());  // 400 left on GPU 0.
  CHECK_FALSE(n.FitOn(WholeGpus(1), 0b0001).has_value());
  std::optional<TaskAllocation> share = n.FitOn(GpuShare(400), 0b0001);
  REQUIRE(share.has_value());
  CHECK(share->gpu_milli == 400);
}

TEST_CASE("placement: FGD's cached choices tell a time slice from a vGPU of the same size") {
  // A 4 GiB time slice and the vGPU type A100-4C ask for the same cpu, memory, GPU count and
  // GPU memory; only their form differs. FGD caches per node whether a shape fits, and once
  // keyed both alike: the vGPU's "does not fit" on the time-sliced node was then the time
  // slice's answer there too, and on an idle cluster neither job ever started.
  PlacementFixture f{PlacementOptions{}};  // the default: fragmentation-aware, an FGD scorer.
  v1::NodeSpec sliced = GpuNode("ts", 1, "A100-80GB");
  sliced.mutable_gpus(0)->set_sharing(v1::GPU_SHARING_TIME_SLICE);
  sliced.mutable_gpus(0)->set_replicas(3);
  v1::NodeSpec virtualized = GpuNode("vgpu", 1, "A100-40GB", 0, 40960);
  virtualized.mutable_gpus(0)->set_sharing(v1::GPU_SHARING_VGPU);
  const NodeIndexId ts = f.Add(sliced);
  const NodeIndexId vgpu = f.Add(virtualized);

  v1::JobSpec slice_spec;
  slice_spec.mutable_task()->set_cpu_milli(1000);
  slice_spec.mutable_task()->set_memory_mib(4096);
  slice_spec.mutable_task()->set_gpu_count(1);
  slice_spec.mutable_task()->set_gpu_memory_mib(4096);
  slice_spec.mutable_task()->set_gpu_form(v1::GPU_FORM_TIME_SLICE);
  v1::JobSpec vgpu_spec;
  vgpu_spec.mutable_task()->set_cpu_milli(1000);
  vgpu_spec.mutable_task()->set_memory_mib(4096);
  vgpu_spec.mutable_task()->set_gpu_count(1);
  vgpu_spec.mutable_task()->set_vgpu_type("A100-4C");
  const TaskShape slice = MakeTaskShape(slice_spec, f.cluster.models());
  const TaskShape typed = MakeTaskShape(vgpu_spec, f.cluster.models());

  PlacementResult first = f.placer.Place(typed, 1, 1, false);
  REQUIRE(first.placed());
  CHECK(first.tasks[0].node == vgpu);
  PlacementResult second = f.placer.Place(slice, 1, 1, false);
  REQUIRE(second.placed());
  CHECK(second.tasks[0].node == ts);
}

}  // namespace
}  // namespace tessera
