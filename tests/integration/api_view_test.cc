// What the public API shows an operator: nodes with every field of their spec as it is now
// (sharing mode, slices, MIG layout, vGPU type, labels), an event for each MIG re-partition,
// pending counts that agree between the scheduler and its queues, and a reason on every
// pending job.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

const v1::Node& NodeNamed(const std::vector<v1::Node>& nodes, const std::string& name) {
  for (const v1::Node& n : nodes) {
    if (n.spec().name() == name) return n;
  }
  FAIL("no node " << name);
  return nodes.front();
}

TEST_CASE("api view: nodes report sharing mode, slices, MIG layout, vGPU type and all labels") {
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* slices = AddGroup(cluster, "ts", 1, 1, "H100-80GB");
  slices->set_sharing(v1::GPU_SHARING_TIME_SLICE);
  slices->set_replicas(4);
  (*slices->mutable_labels())["rack"] = "r1";
  (*slices->mutable_labels())["zone"] = "z2";
  v1::SimulatedNodeGroup* mig = AddGroup(cluster, "mig", 1, 1, "H100-80GB");
  mig->set_sharing(v1::GPU_SHARING_MIG);
  mig->set_mig_managed(true);
  v1::MigInstance* whole = mig->add_mig_instances();
  whole->set_profile("7g.80gb");
  whole->set_start(0);
  v1::SimulatedNodeGroup* vgpu = AddGroup(cluster, "vgpu", 1, 1, "A100-40GB");
  vgpu->set_gpu_memory_mib(40960);
  vgpu->set_sharing(v1::GPU_SHARING_VGPU);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").VgpuType("A100-10C").Build());
  t->WaitIdle();

  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  const v1::Node& ts = NodeNamed(*nodes, "ts-0");
  CHECK(ts.spec().labels().at("rack") == "r1");
  CHECK(ts.spec().labels().at("zone") == "z2");
  CHECK(ts.spec().gpus(0).sharing() == v1::GPU_SHARING_TIME_SLICE);
  CHECK(ts.spec().gpus(0).replicas() == 4);
  const v1::GpuDevice& m = NodeNamed(*nodes, "mig-0").spec().gpus(0);
  CHECK(m.sharing() == v1::GPU_SHARING_MIG);
  CHECK(m.mig_managed());
  REQUIRE(m.mig_instances_size() == 1);
  CHECK(m.mig_instances(0).profile() == "7g.80gb");
  CHECK(m.mig_instances(0).start() == 0);
  const v1::GpuDevice& v = NodeNamed(*nodes, "vgpu-0").spec().gpus(0);
  CHECK(v.sharing() == v1::GPU_SHARING_VGPU);
  CHECK(v.vgpu_type() == "A100-10C");  // the type in use.
}

TEST_CASE("api view: a MIG re-partition is an event naming the node, the GPU and the layout") {
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* group = AddGroup(cluster, "h100", 1, 1, "H100-80GB");
  group->set_sharing(v1::GPU_SHARING_MIG);
  group->set_mig_managed(true);
  v1::MigInstance* whole = group->add_mig_instances();
  whole->set_profile("7g.80gb");
  whole->set_start(0);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, job).status().state() == v1::RUNNING);
  auto events = s->WatchEvents(0, 1000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  int changes = 0;
  for (const v1::Event& e : *events) {
    if (e.kind() != v1::MIG_LAYOUT_CHANGED) continue;
    ++changes;
    CHECK(e.node() == "h100-0");
    CHECK(e.reason().rfind("GPU 0 re-partitioned to ", 0) == 0);
    CHECK(e.reason().find("3g.40gb@") != std::string::npos);
    CHECK(e.reason().find("for job " + std::to_string(job)) != std::string::npos);
  }
  CHECK(changes == 1);
  // The nodes route shows the layout now in force.
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  bool has_3g = false;
  for (const v1::MigInstance& m : nodes->at(0).spec().gpus(0).mig_instances()) {
    has_3g |= m.profile() == "3g.40gb";
  }
  CHECK(has_3g);
}

TEST_CASE("api view: a queue's pending count includes its infeasible jobs, as the total does") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("team"));
  MustSubmit(s, JobSpecBuilder("team").Gpus(16).Build());  // no node has 16 GPUs.
  MustSubmit(s, JobSpecBuilder("team").Gpus(8).Build());
  MustSubmit(s, JobSpecBuilder("team").Gpus(8).Build());  // waits for the one running.
  t->WaitIdle();
  CHECK(t->GetStats().pending_jobs() == 2);
  CHECK(t->GetQueue("team")->status().pending_jobs() == 2);
  // A queue holding only an infeasible job still holds a job.
  CreateQueue(s, QueueSpec("other"));
  MustSubmit(s, JobSpecBuilder("other").Gpus(16).Build());
  t->WaitIdle();
  CHECK(t->GetQueue("other")->status().pending_jobs() == 1);
  CHECK(s->DeleteQueue("other").code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("api view: every pending job has a reason, also those behind a blocked head") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").Gpus(8).Build());
  std::vector<uint64_t> waiting;
  for (int i = 0; i < 5; ++i) {
    waiting.push_back(MustSubmit(s, JobSpecBuilder("default").Gpus(8).Build()).id());
  }
  t->WaitIdle();
  for (uint64_t id : waiting) {
    CAPTURE(id);
    const v1::Job job = MustGet(s, id);
    CHECK(job.status().state() == v1::PENDING);
    CHECK_FALSE(job.status().reason().empty());
  }
  v1::ListJobsRequest list;
  list.set_page_size(100);
  auto page = s->ListJobs(list);
  REQUIRE(page.ok());
  for (const v1::Job& j : page->jobs()) {
    if (j.status().state() == v1::PENDING) CHECK_FALSE(j.status().reason().empty());
  }
}

}  // namespace
}  // namespace tessera
