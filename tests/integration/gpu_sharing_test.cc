// Fractional GPUs end to end: MIG instances, vGPU types, time slices and MPS shares through the
// public API, counted in physical units by queue accounting, with clear errors for bad asks.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

// One A100-80GB node with two GPUs split 3g+3g+1g, and one A100-40GB vGPU node.
v1::SimulatedCluster MigAndVgpu() {
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* mig = AddGroup(cluster, "mig", 1, 2, "A100-80GB");
  mig->set_sharing(v1::GPU_SHARING_MIG);
  for (auto [profile, start] : {std::pair{"3g.40gb", 0}, {"3g.40gb", 4}}) {
    v1::MigInstance* m = mig->add_mig_instances();
    m->set_profile(profile);
    m->set_start(start);
  }
  v1::SimulatedNodeGroup* vgpu = AddGroup(cluster, "vgpu", 1, 1, "A100-40GB");
  vgpu->set_gpu_memory_mib(40960);
  vgpu->set_sharing(v1::GPU_SHARING_VGPU);
  return cluster;
}

// One H100-80GB node whose one GPU the scheduler may re-partition, now a single 7g instance.
v1::SimulatedCluster ManagedH100As7g() {
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* group = AddGroup(cluster, "h100", 1, 1, "H100-80GB");
  group->set_sharing(v1::GPU_SHARING_MIG);
  group->set_mig_managed(true);
  v1::MigInstance* whole = group->add_mig_instances();
  whole->set_profile("7g.80gb");
  whole->set_start(0);
  return cluster;
}

TEST_CASE("gpu sharing: MIG profile requests take instances and count 3/7 of a GPU each") {
  auto t = OpenCluster(MigAndVgpu());
  Scheduler* s = t.scheduler.get();
  std::vector<uint64_t> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build()).id());
  }
  t->WaitIdle();
  std::set<std::pair<int, int>> instances;  // (gpu, start)
  for (int i = 0; i < 4; ++i) {
    const v1::Job job = MustGet(s, jobs[i]);
    REQUIRE(job.status().state() == v1::RUNNING);
    const v1::TaskPlacement& p = job.status().placements(0);
    CHECK(p.node() == "mig-0");
    CHECK(p.partition().sharing() == v1::GPU_SHARING_MIG);
    CHECK(p.partition().mig_profile() == "3g.40gb");
    CHECK(p.gpu_milli() == 428);
    CHECK(p.gpu_memory_mib() == 40192);
    instances.insert({p.gpus(0), p.partition().mig_start()});
  }
  CHECK(instances.size() == 4);  // four different instances.
  // Four instances exist; the fifth waits.
  CHECK(MustGet(s, jobs[4]).status().state() == v1::PENDING);
  const v1::Queue queue = *s->GetQueue("default");
  CHECK(queue.status().allocated().gpu_milli() == 4 * 428);
  CHECK(queue.status().allocated().gpu_memory_mib() == 4 * 40192);
}

TEST_CASE("gpu sharing: 'at least X GiB and Y%' gets the smallest form that satisfies") {
  auto t = OpenCluster(MigAndVgpu());
  Scheduler* s = t.scheduler.get();
  // 10% and 6 GiB as a vGPU: the smallest type with 6 GiB is A100-8C (five per A100-40GB,
  // 200 milli each).
  const uint64_t small = MustSubmit(s, JobSpecBuilder("default")
                                           .GpuFraction(100)
                                           .GpuMemoryMib(6 * 1024)
                                           .GpuForm(v1::GPU_FORM_VGPU)
                                           .Build())
                             .id();
  // 30% and 30 GiB in any form: the vGPU GPU now holds 8 GiB vGPUs only, so a MIG 3g.40gb
  // instance is the smallest share that satisfies.
  const uint64_t big =
      MustSubmit(s, JobSpecBuilder("default").GpuFraction(300).GpuMemoryMib(30 * 1024).Build())
          .id();
  t->WaitIdle();
  const v1::TaskPlacement a = MustGet(s, small).status().placements(0);
  CHECK(a.partition().vgpu_type() == "A100-8C");
  CHECK(a.gpu_milli() == 200);
  const v1::TaskPlacement b = MustGet(s, big).status().placements(0);
  CHECK(b.partition().mig_profile() == "3g.40gb");
  CHECK(b.gpu_milli() == 428);
}

TEST_CASE("gpu sharing: time slices and MPS shares from a simulated cluster") {
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* slices = AddGroup(cluster, "ts", 1, 1, "H100-80GB");
  slices->set_sharing(v1::GPU_SHARING_TIME_SLICE);
  slices->set_replicas(2);
  v1::SimulatedNodeGroup* mps = AddGroup(cluster, "mps", 1, 1, "H100-80GB");
  mps->set_sharing(v1::GPU_SHARING_MPS);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  const uint64_t slice =
      MustSubmit(s, JobSpecBuilder("default").GpuForm(v1::GPU_FORM_TIME_SLICE).Build()).id();
  const uint64_t share = MustSubmit(s, JobSpecBuilder("default")
                                           .GpuFraction(250)
                                           .GpuMemoryMib(8192)
                                           .GpuForm(v1::GPU_FORM_MPS)
                                           .Build())
                             .id();
  // A whole GPU: neither node serves one.
  const uint64_t whole = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  const v1::TaskPlacement a = MustGet(s, slice).status().placements(0);
  CHECK(a.node() == "ts-0");
  CHECK(a.gpu_milli() == 500);
  CHECK(a.partition().sharing() == v1::GPU_SHARING_TIME_SLICE);
  const v1::TaskPlacement b = MustGet(s, share).status().placements(0);
  CHECK(b.node() == "mps-0");
  CHECK(b.gpu_milli() == 250);
  CHECK(b.gpu_memory_mib() == 8192);
  const v1::Job w = MustGet(s, whole);
  CHECK(w.status().infeasible());
  CHECK(w.status().state() == v1::PENDING);
}

TEST_CASE("gpu sharing: fragmentation-aware placement learns the shares jobs ask for") {
  // A half GPU runs on GPU 0. A 0.3 share next to it would leave 0.2 that none of the submitted
  // shapes can use, so once the engine has learned them it goes to GPU 1; without learning (and
  // no expected tasks) the policy only packs and fills GPU 0.
  for (bool learn : {true, false}) {
    CAPTURE(learn);
    Options options;
    options.placement = PlacementOptions::FragmentationAware({});
    options.placement.learn_workload = learn;
    auto t = OpenCluster(OneNode(2), options);
    Scheduler* s = t.scheduler.get();
    const uint64_t half = MustSubmit(s, JobSpecBuilder("default").GpuFraction(500).Build()).id();
    t->WaitIdle();
    REQUIRE(MustGet(s, half).status().placements_size() == 1);
    CHECK(MustGet(s, half).status().placements(0).gpus(0) == 0);
    const uint64_t small = MustSubmit(s, JobSpecBuilder("default").GpuFraction(300).Build()).id();
    t->WaitIdle();
    const v1::Job placed = MustGet(s, small);
    REQUIRE(placed.status().placements_size() == 1);
    CHECK(placed.status().placements(0).gpus(0) == (learn ? 1 : 0));
  }
}

TEST_CASE("gpu sharing: a form no GPU offers is infeasible with a reason") {
  auto t = OpenCluster(OneNode(2));
  Scheduler* s = t.scheduler.get();
  const v1::Job job = MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build());
  CHECK(job.status().infeasible());
  CHECK(job.status().reason().find("no GPU offers the MIG profile 3g.40gb") != std::string::npos);
}

TEST_CASE("gpu sharing: bad share requests are refused naming the field") {
  auto t = OpenCluster(MigAndVgpu());
  Scheduler* s = t.scheduler.get();
  auto expect = [&](const v1::JobSpec& spec, const std::string& message) {
    auto r = s->Submit(spec);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(r.status().message().find(message) != std::string::npos, r.status().message());
  };
  expect(JobSpecBuilder("default").MigProfile("5g.50gb").Build(),
         "task.mig_profile: '5g.50gb' is not a MIG profile");
  expect(JobSpecBuilder("default").VgpuType("A100").Build(),
         "task.vgpu_type: 'A100' is not a vGPU type name");
  v1::JobSpec two = JobSpecBuilder("default").MigProfile("3g.40gb").Build();
  two.mutable_task()->set_gpu_count(2);
  expect(two, "task.mig_profile: a share of one GPU needs task.gpu_count == 1, got 2");
  expect(JobSpecBuilder("default").MigProfile("3g.40gb").GpuFraction(300).Build(),
         "task.gpu_milli: set, but task.mig_profile already names the share");
  expect(JobSpecBuilder("default").GpuForm(v1::GPU_FORM_MPS).Build(),
         "task.gpu_milli: an MPS share needs its thread percentage");
  expect(JobSpecBuilder("default").GpuFraction(300).GpuForm(v1::GPU_FORM_WHOLE).Build(),
         "task.gpu_milli: GPU_FORM_WHOLE takes whole GPUs");
  expect(JobSpecBuilder("default").MigProfile("3g.40gb").GpuForm(v1::GPU_FORM_VGPU).Build(),
         "task.mig_profile: set, but task.gpu_form is not GPU_FORM_MIG");
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

using namespace testing;

TEST_CASE("gpu sharing: managed MIG GPUs are re-partitioned for waiting jobs, busy ones kept") {
  v1::SimulatedCluster cluster = ManagedH100As7g();
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();

  const uint64_t small =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("1g.10gb").Build()).id();
  t->WaitIdle();
  const v1::Job a = MustGet(s, small);
  REQUIRE(a.status().state() == v1::RUNNING);
  const int small_start = a.status().placements(0).partition().mig_start();
  CHECK(small_start >= 4);  // the planner keeps the low slices open for large instances.

  const uint64_t large =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("4g.40gb").Build()).id();
  t->WaitIdle();
  const v1::Job b = MustGet(s, large);
  REQUIRE(b.status().state() == v1::RUNNING);
  CHECK(b.status().placements(0).partition().mig_start() == 0);
  // The 1g task was not disturbed.
  CHECK(MustGet(s, small).status().attempt() == 1);
  CHECK(MustGet(s, small).status().placements(0).partition().mig_start() == small_start);

  // A 3g instance needs slices 0-3 or 4-7, both partly held: it waits, feasible, for one to end.
  const uint64_t waiting =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build()).id();
  t->WaitIdle();
  const v1::Job c = MustGet(s, waiting);
  CHECK(c.status().state() == v1::PENDING);
  CHECK_FALSE(c.status().infeasible());
  REQUIRE(s->Cancel(large).ok());
  t->WaitIdle();
  const v1::Job d = MustGet(s, waiting);
  CHECK(d.status().state() == v1::RUNNING);
  CHECK(d.status().placements(0).partition().mig_profile() == "3g.40gb");
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

using namespace testing;

TEST_CASE("gpu sharing: the documented example cluster loads and serves MIG and slices") {
  Options options;
  options.simulated_cluster_file = std::string(TESSERA_EXAMPLES_DIR) + "/clusters/gpu-sharing.yaml";
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const uint64_t mig = MustSubmit(s, JobSpecBuilder("default").MigProfile("2g.20gb").Build()).id();
  const uint64_t slice =
      MustSubmit(s, JobSpecBuilder("default").GpuForm(v1::GPU_FORM_TIME_SLICE).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, mig).status().placements(0).node().rfind("mig-", 0) == 0);
  CHECK(MustGet(s, slice).status().placements(0).gpu_milli() == 250);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

using namespace testing;

TEST_CASE("gpu sharing: a busy MIG instance of a lower-priority job is drained to re-partition") {
  v1::SimulatedCluster cluster = ManagedH100As7g();
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();

  // A low-priority job holds the whole GPU as one 7g instance.
  const uint64_t low =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("7g.80gb").PriorityClass("low").Build())
          .id();
  t->WaitIdle();
  REQUIRE(MustGet(s, low).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(120'000'000);  // past the minimum runtime before a job may be preempted.
  t->WaitIdle();

  // A high-priority job wants a 3g instance: no free instance can be re-shaped, so the 7g
  // task is preempted, and once it has stopped the GPU is re-partitioned for the 3g.
  const uint64_t high =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").PriorityClass("high").Build())
          .id();
  t->WaitIdle();
  t.clock->AdvanceUs(1'000'000);
  t->WaitIdle();
  const v1::Job placed = MustGet(s, high);
  REQUIRE(placed.status().state() == v1::RUNNING);
  CHECK(placed.status().placements(0).partition().mig_profile() == "3g.40gb");
  const v1::Job preempted = MustGet(s, low);
  CHECK(preempted.status().preemptions() == 1);
  CHECK(preempted.status().state() == v1::PENDING);  // waits for the GPU again.

  // An equal-priority job never drains another: a 7g needs the whole GPU, held by the 3g.
  const uint64_t peer =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("7g.80gb").PriorityClass("high").Build())
          .id();
  t->WaitIdle();
  CHECK(MustGet(s, peer).status().state() == v1::PENDING);
  CHECK(MustGet(s, high).status().preemptions() == 0);
}

TEST_CASE("gpu sharing: what a MIG drain frees is held for the job that drained it") {
  v1::SimulatedCluster cluster = ManagedH100As7g();
  AddGroup(cluster, "plain", 1, 1, "A100-80GB");
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  for (const char* name : {"a", "batch", "other"}) CreateQueue(s, QueueSpec(name));

  // Queue "a" already uses a GPU, so when room frees, the fair order serves "batch" and
  // "other" (no share yet) before it.
  MustSubmit(s, JobSpecBuilder("a").Gpus(1).Build());
  v1::JobSpec low_spec = JobSpecBuilder("batch").MigProfile("7g.80gb").PriorityClass("low").Build();
  low_spec.set_checkpoint_grace_s(30);
  const uint64_t low = MustSubmit(s, low_spec).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, low).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(120'000'000);  // past the minimum runtime before a job may be preempted.
  t->WaitIdle();

  // The high-priority 3g job drains the 7g task, which takes its 30 s notice.
  const uint64_t high =
      MustSubmit(s, JobSpecBuilder("a").MigProfile("3g.40gb").PriorityClass("high").Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, high).status().reason() == "waiting for MIG instances being drained");
  CHECK(MustGet(s, low).status().state() == v1::PREEMPTING);
  // Meanwhile an equal-priority job of a queue with no share wants the whole GPU.
  const uint64_t rival =
      MustSubmit(s, JobSpecBuilder("other").MigProfile("7g.80gb").PriorityClass("high").Build())
          .id();
  t->WaitIdle();

  // The 7g task stops: the freed GPU goes to the job that drained it, not to the rival served
  // first in fair order, nor back to the requeued 7g job.
  t.clock->AdvanceUs(31'000'000);
  t->WaitIdle();
  const v1::Job placed = MustGet(s, high);
  REQUIRE(placed.status().state() == v1::RUNNING);
  CHECK(placed.status().placements(0).partition().mig_profile() == "3g.40gb");
  CHECK(MustGet(s, rival).status().state() == v1::PENDING);
  CHECK(MustGet(s, low).status().state() == v1::PENDING);
}

TEST_CASE("gpu sharing: a drain that frees a 1g for a 3g next to a busy 4g serves the 3g") {
  // The 1g and the 4g share the GPU; the 3g needs the memory slices the 1g sits on. Draining
  // the 1g must lead to a layout that serves the 3g, whatever else waits meanwhile.
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(1);
  auto t = OpenCluster(ManagedH100As7g(), options);
  Scheduler* s = t.scheduler.get();
  v1::JobSpec small = JobSpecBuilder("default").MigProfile("1g.10gb").PriorityClass("low").Build();
  small.set_checkpoint_grace_s(1);
  const uint64_t one = MustSubmit(s, small).id();
  t->WaitIdle();
  t.clock->AdvanceUs(300'000);
  const uint64_t four =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("4g.40gb").PriorityClass("low").Build())
          .id();
  t->WaitIdle();
  REQUIRE(MustGet(s, one).status().state() == v1::RUNNING);
  REQUIRE(MustGet(s, four).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(1'500'000);
  const uint64_t three =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").PriorityClass("normal").Build())
          .id();
  t->WaitIdle();
  for (int i = 0; i < 10; ++i) {
    t.clock->AdvanceUs(1'000'000);
    t->WaitIdle();
  }
  const v1::Job placed = MustGet(s, three);
  REQUIRE(placed.status().state() == v1::RUNNING);
  CHECK(placed.status().placements(0).partition().mig_profile() == "3g.40gb");
  CHECK(MustGet(s, four).status().state() == v1::RUNNING);
  CHECK(MustGet(s, one).status().state() == v1::PENDING);
  CHECK(MustGet(s, one).status().reason() != "");
}

TEST_CASE("gpu sharing: a job that needs the whole GPU drains every lower-priority instance") {
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(1);
  auto t = OpenCluster(ManagedH100As7g(), options);
  Scheduler* s = t.scheduler.get();
  v1::JobSpec small = JobSpecBuilder("default").MigProfile("1g.10gb").PriorityClass("low").Build();
  small.set_checkpoint_grace_s(1);
  const uint64_t one = MustSubmit(s, small).id();
  t->WaitIdle();
  t.clock->AdvanceUs(300'000);
  const uint64_t four =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("4g.40gb").PriorityClass("low").Build())
          .id();
  t->WaitIdle();
  t.clock->AdvanceUs(1'500'000);
  const uint64_t whole =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("7g.80gb").PriorityClass("normal").Build())
          .id();
  t->WaitIdle();
  for (int i = 0; i < 10; ++i) {
    t.clock->AdvanceUs(1'000'000);
    t->WaitIdle();
  }
  REQUIRE(MustGet(s, whole).status().state() == v1::RUNNING);
  CHECK(MustGet(s, one).status().state() == v1::PENDING);
  CHECK(MustGet(s, four).status().state() == v1::PENDING);
}

TEST_CASE("gpu sharing: a MIG drain the per-minute budget refused happens when it allows") {
  v1::SimulatedCluster cluster = ManagedH100As7g();
  AddGroup(cluster, "plain", 1, 1, "A100-80GB");
  Options options;
  options.preemption.max_per_minute = 1;
  auto t = OpenCluster(cluster, options);
  Scheduler* s = t.scheduler.get();
  MustSubmit(s,
             JobSpecBuilder("default").Gpus(1).GpuModel("A100-80GB").PriorityClass("low").Build());
  const uint64_t low =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("7g.80gb").PriorityClass("low").Build())
          .id();
  t->WaitIdle();
  t.clock->AdvanceUs(120'000'000);
  t->WaitIdle();
  // A whole A100 for a high-priority job spends this minute's one preemption.
  MustSubmit(s,
             JobSpecBuilder("default").Gpus(1).GpuModel("A100-80GB").PriorityClass("high").Build());
  t->WaitIdle();
  const uint64_t high =
      MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").PriorityClass("high").Build())
          .id();
  t->WaitIdle();
  CHECK(MustGet(s, low).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(60'000'000);
  t->WaitIdle();
  t.clock->AdvanceUs(1'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, low).status().preemptions() == 1);
  CHECK(MustGet(s, high).status().state() == v1::RUNNING);
}

}  // namespace
}  // namespace tessera
