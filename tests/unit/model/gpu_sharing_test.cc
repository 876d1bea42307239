// GPU sharing modes: what each mode offers a fractional task, how shares are counted in
// physical units, and how a stored share is restored after a restart.
#include <doctest/doctest.h>

#include "model/cluster.h"
#include "model/gpu_partition.h"

namespace tessera {
namespace {

v1::NodeSpec SharedNode(const std::string& model, int64_t memory_mib, v1::GpuSharing sharing,
                        int gpus = 1) {
  v1::NodeSpec spec;
  spec.set_name("n");
  spec.set_cpu_milli(64000);
  spec.set_memory_mib(512 * 1024);
  for (int i = 0; i < gpus; ++i) {
    v1::GpuDevice* g = spec.add_gpus();
    g->set_index(i);
    g->set_model(model);
    g->set_memory_mib(memory_mib);
    g->set_sharing(sharing);
  }
  return spec;
}

void AddMig(v1::NodeSpec& spec, const std::string& profile, int start, int gpu = 0) {
  v1::MigInstance* m = spec.mutable_gpus(gpu)->add_mig_instances();
  m->set_profile(profile);
  m->set_start(start);
}

TaskShape Share(int milli, int64_t memory_mib = 0, GpuForm form = GpuForm::kAny) {
  TaskShape s;
  s.cpu_milli = 1000;
  s.memory_mib = 1024;
  s.gpu_count = 1;
  s.gpu_milli = milli;
  s.gpu_memory_mib = memory_mib;
  s.form = form;
  return s;
}

TaskShape Profile(const std::string& name) {
  v1::JobSpec spec;
  spec.mutable_task()->set_cpu_milli(1000);
  spec.mutable_task()->set_memory_mib(1024);
  spec.mutable_task()->set_gpu_count(1);
  spec.mutable_task()->set_mig_profile(name);
  GpuModels models;
  return MakeTaskShape(spec, models);
}

TaskShape VgpuType(const std::string& name) {
  v1::JobSpec spec;
  spec.mutable_task()->set_cpu_milli(1000);
  spec.mutable_task()->set_memory_mib(1024);
  spec.mutable_task()->set_gpu_count(1);
  spec.mutable_task()->set_vgpu_type(name);
  GpuModels models;
  return MakeTaskShape(spec, models);
}

NodeState& Add(Cluster& cluster, const v1::NodeSpec& spec) {
  auto id = cluster.AddNode(spec);
  REQUIRE_MESSAGE(id.ok(), id.status().ToString());
  return cluster.node(*id);
}

// Places `shape` on `node` and applies it; fails the test when it does not fit.
TaskAllocation Place(NodeState& node, const TaskShape& shape) {
  std::optional<TaskAllocation> a = node.Fit(shape, DevicePreference::kTightest);
  REQUIRE(a.has_value());
  node.Apply(*a);
  return *a;
}

TEST_CASE("sharing: an exclusive GPU takes whole-GPU tasks only") {
  Cluster c;
  NodeState& n = Add(c, SharedNode("A100-80GB", 81920, v1::GPU_SHARING_EXCLUSIVE));
  CHECK_FALSE(n.Fit(Share(250), DevicePreference::kTightest).has_value());
  TaskShape whole = Share(1000);
  CHECK(n.Fit(whole, DevicePreference::kTightest).has_value());
}

TEST_CASE("sharing: time slices are equal; memory is what the task asked, within the GPU") {
  Cluster c;
  v1::NodeSpec spec = SharedNode("A100-80GB", 81920, v1::GPU_SHARING_TIME_SLICE);
  spec.mutable_gpus(0)->set_replicas(4);
  NodeState& n = Add(c, spec);
  CHECK(n.whole_free_gpus() == 0);  // a time-sliced GPU serves slices only.
  CHECK(n.max_free_milli() == 250);
  const TaskAllocation first = Place(n, Share(100));
  CHECK(first.gpu_milli == 250);  // a slice is a quarter of the GPU, however little is asked.
  CHECK(first.gpu_memory_mib == 81920 / 4);
  CHECK_FALSE(n.Fit(Share(300), DevicePreference::kTightest).has_value());  // bigger than a slice.
  // Memory is not isolated, so a slice that asks for 50 GiB reserves it; then 10 GiB remain,
  // less than a slice's quarter (20 GiB) that a task without a memory ask reserves.
  Place(n, Share(0, 50 * 1024, GpuForm::kTimeSlice));
  CHECK_FALSE(n.Fit(Share(0, 0, GpuForm::kTimeSlice), DevicePreference::kTightest));
  Place(n, Share(0, 8 * 1024, GpuForm::kTimeSlice));
  CHECK(n.gpus()[0].users == 3);
  Place(n, Share(0, 1024, GpuForm::kTimeSlice));
  CHECK_FALSE(n.Fit(Share(0, 100, GpuForm::kTimeSlice), DevicePreference::kTightest));  // 4 of 4.
  n.Release(first);
  CHECK(n.Fit(Share(0, 0, GpuForm::kTimeSlice), DevicePreference::kTightest).has_value());
  // Another form is refused.
  CHECK_FALSE(n.Fit(Share(100, 0, GpuForm::kMps), DevicePreference::kTightest).has_value());
}

TEST_CASE("sharing: MPS shares are as asked, with at most 48 clients per GPU") {
  Cluster c;
  NodeState& n = Add(c, SharedNode("H100-80GB", 81920, v1::GPU_SHARING_MPS));
  const TaskAllocation a = Place(n, Share(300, 10000, GpuForm::kMps));
  CHECK(a.gpu_milli == 300);
  CHECK(a.gpu_memory_mib == 10000);
  CHECK(DescribeShare(n, a).sharing() == v1::GPU_SHARING_MPS);
  for (int i = 1; i < kMaxMpsClients; ++i) Place(n, Share(10, 100));
  CHECK(n.gpus()[0].users == kMaxMpsClients);
  CHECK_FALSE(n.Fit(Share(10, 100), DevicePreference::kTightest).has_value());
  CHECK(n.max_free_milli() == 0);
}

TEST_CASE("sharing: MIG offers the smallest free instance that meets the asks") {
  Cluster c;
  v1::NodeSpec spec = SharedNode("A100-80GB", 81920, v1::GPU_SHARING_MIG);
  AddMig(spec, "3g.40gb", 0);
  AddMig(spec, "2g.20gb", 4);
  AddMig(spec, "1g.10gb", 6);
  NodeState& n = Add(c, spec);
  CHECK(n.max_free_milli() == 428);
  CHECK(n.whole_free_gpus() == 0);

  // At least 20% and 12 GiB: the 1g (142) is too small in compute, the 2g.20gb fits.
  const TaskAllocation two = Place(n, Share(200, 12 * 1024));
  CHECK(two.gpu_milli == 285);
  CHECK(two.gpu_memory_mib == 19968);
  CHECK(DescribeShare(n, two).mig_profile() == "2g.20gb");
  CHECK(DescribeShare(n, two).mig_start() == 4);
  // A named profile takes exactly that instance.
  const TaskAllocation three = Place(n, Profile("3g.40gb"));
  CHECK(three.gpu_milli == 428);
  CHECK(three.gpu_memory_mib == 40192);
  CHECK_FALSE(n.Fit(Profile("3g.40gb"), DevicePreference::kTightest).has_value());
  CHECK_FALSE(n.Fit(Profile("4g.40gb"), DevicePreference::kTightest).has_value());
  // Quotas see physical units: 428 + 285 milli-GPUs and the instances' memory.
  CHECK(n.Allocated().gpu_milli() == 713);
  CHECK(n.Allocated().gpu_memory_mib() == 40192 + 19968);
  // A packed fraction is not a MIG instance unless the task accepts any form.
  CHECK_FALSE(n.Fit(Share(100, 0, GpuForm::kMps), DevicePreference::kTightest).has_value());
  CHECK(n.Fit(Share(100), DevicePreference::kTightest)->gpu_milli == 142);
  n.Release(three);
  CHECK(n.Fit(Profile("3g.40gb"), DevicePreference::kTightest).has_value());
}

TEST_CASE("sharing: a profile name means different instances on different models") {
  Cluster c;
  v1::NodeSpec small = SharedNode("A100-40GB", 40960, v1::GPU_SHARING_MIG);
  AddMig(small, "1g.10gb", 0);  // the double-memory 1-slice profile on a 40 GB A100.
  NodeState& n = Add(c, small);
  const TaskAllocation a = Place(n, Profile("1g.10gb"));
  CHECK(a.gpu_milli == 142);
  CHECK(a.gpu_memory_mib == 9856);
  CHECK(n.gpus()[0].mig[0].kind == mig::ProfileKind::k1SliceDoubleMem);
}

TEST_CASE("sharing: vGPU picks the smallest type on an idle GPU and keeps one type per GPU") {
  Cluster c;
  NodeState& n = Add(c, SharedNode("A100-40GB", 40960, v1::GPU_SHARING_VGPU));
  // At least 3 GiB: the 4 GiB type, ten per GPU, each a tenth of the compute.
  const TaskAllocation a = Place(n, Share(50, 3 * 1024, GpuForm::kVgpu));
  CHECK(a.vgpu_framebuffer_gib == 4);
  CHECK(a.gpu_milli == 100);
  CHECK(a.gpu_memory_mib == 4096);
  CHECK(DescribeShare(n, a).vgpu_type() == "A100-4C");
  // While an A100-4C exists, an A100-8C cannot be made on this GPU.
  CHECK_FALSE(n.Fit(VgpuType("A100-8C"), DevicePreference::kTightest).has_value());
  for (int i = 1; i < 10; ++i) Place(n, VgpuType("A100-4C"));
  CHECK_FALSE(n.Fit(VgpuType("A100-4C"), DevicePreference::kTightest).has_value());
  CHECK(n.Allocated().gpu_milli() == 1000);
  // Another family never fits.
  CHECK_FALSE(n.Fit(VgpuType("H100-4C"), DevicePreference::kTightest).has_value());
}

TEST_CASE("sharing: vGPU type freed when the last vGPU goes, unless fixed by the operator") {
  Cluster c;
  NodeState& n = Add(c, SharedNode("A100-40GB", 40960, v1::GPU_SHARING_VGPU));
  const TaskAllocation a = Place(n, VgpuType("A100-4C"));
  n.Release(a);
  CHECK(n.Fit(VgpuType("A100-8C"), DevicePreference::kTightest).has_value());

  Cluster fixed_cluster;
  v1::NodeSpec spec = SharedNode("A100-40GB", 40960, v1::GPU_SHARING_VGPU);
  spec.mutable_gpus(0)->set_vgpu_type("A100-10C");
  NodeState& fixed = Add(fixed_cluster, spec);
  CHECK_FALSE(fixed.Fit(VgpuType("A100-8C"), DevicePreference::kTightest).has_value());
  CHECK(fixed.Fit(Share(100), DevicePreference::kTightest)->vgpu_framebuffer_gib == 10);
}

TEST_CASE("sharing: node specs with bad sharing fields are refused, naming the field") {
  Cluster c;
  v1::NodeSpec slices = SharedNode("A100-80GB", 81920, v1::GPU_SHARING_TIME_SLICE);
  auto r = c.AddNode(slices);
  CHECK(r.status().message().find("gpus[0].replicas: a time-sliced GPU needs 2..1000") !=
        std::string::npos);

  v1::NodeSpec mig = SharedNode("T4", 16384, v1::GPU_SHARING_MIG);
  r = c.AddNode(mig);
  CHECK(r.status().message().find("gpus[0].sharing: model 'T4' has no MIG profiles") !=
        std::string::npos);

  v1::NodeSpec overlap = SharedNode("A100-80GB", 81920, v1::GPU_SHARING_MIG);
  AddMig(overlap, "4g.40gb", 0);
  AddMig(overlap, "2g.20gb", 2);
  r = c.AddNode(overlap);
  CHECK(r.status().message().find("gpus[0].mig_instances: instances overlap") != std::string::npos);

  v1::NodeSpec wrong_model = SharedNode("A100-40GB", 40960, v1::GPU_SHARING_MIG);
  AddMig(wrong_model, "3g.40gb", 0);
  r = c.AddNode(wrong_model);
  CHECK(r.status().message().find("'3g.40gb' is not a profile of A100-40GB") != std::string::npos);

  v1::NodeSpec vgpu = SharedNode("A100-40GB", 40960, v1::GPU_SHARING_VGPU);
  vgpu.mutable_gpus(0)->set_vgpu_type("H100-4C");
  r = c.AddNode(vgpu);
  CHECK(r.status().message().find("vgpu_type: 'H100-4C' is not a vGPU type of A100-40GB") !=
        std::string::npos);

  v1::NodeSpec stray = SharedNode("A100-80GB", 81920, v1::GPU_SHARING_DEFAULT);
  AddMig(stray, "7g.80gb", 0);
  r = c.AddNode(stray);
  CHECK(r.status().message().find("mig_instances: set, but sharing is not GPU_SHARING_MIG") !=
        std::string::npos);
}

TEST_CASE("sharing: a stored MIG share is restored, re-creating its instance on a managed GPU") {
  Cluster c;
  v1::NodeSpec spec = SharedNode("H100-80GB", 81920, v1::GPU_SHARING_MIG);
  spec.mutable_gpus(0)->set_mig_managed(true);
  AddMig(spec, "7g.80gb", 0);  // the layout the backend reports after the restart.
  NodeState& n = Add(c, spec);

  v1::TaskPlacement stored;
  stored.add_gpus(0);
  stored.set_gpu_milli(428);
  stored.set_gpu_memory_mib(40192);
  stored.mutable_partition()->set_sharing(v1::GPU_SHARING_MIG);
  stored.mutable_partition()->set_mig_profile("3g.40gb");
  stored.mutable_partition()->set_mig_start(4);
  TaskAllocation a;
  a.node = n.id();
  a.gpu_mask = 1;
  a.gpu_milli = 428;
  a.gpu_memory_mib = 40192;
  REQUIRE(RestoreShare(n, stored, a));
  n.Apply(a);
  CHECK(n.gpus()[0].mig_count == 1);  // the free 7g instance made way for the 3g at 4.
  CHECK(a.mig_start == 4);
  CHECK(MigProfileName(n.gpus()[0], FindMigInstance(n.gpus()[0], a.mig_start)) == "3g.40gb");

  // On a GPU whose layout the operator fixed, the share cannot be there any more.
  Cluster fixed_cluster;
  v1::NodeSpec fixed_spec = SharedNode("H100-80GB", 81920, v1::GPU_SHARING_MIG);
  AddMig(fixed_spec, "7g.80gb", 0);
  NodeState& fixed = Add(fixed_cluster, fixed_spec);
  TaskAllocation b = a;
  b.mig_start = -1;
  CHECK_FALSE(RestoreShare(fixed, stored, b));
}

}  // namespace
}  // namespace tessera
