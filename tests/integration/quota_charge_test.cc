// Quotas charge every form of GPU share what it holds, in the same physical units: a time slice
// 1/replicas of its GPU, a vGPU 1/instances of it and its framebuffer, a MIG instance its
// compute slices and its real memory. A cap or a borrowing limit stops each form at the same
// point as whole GPUs.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

// One H100-80GB whose GPU gives 4 time slices of 250 milli-GPUs each.
v1::SimulatedCluster FourSlices() {
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* slices = AddGroup(cluster, "ts", 1, 1, "H100-80GB");
  slices->set_sharing(v1::GPU_SHARING_TIME_SLICE);
  slices->set_replicas(4);
  return cluster;
}

std::vector<uint64_t> SubmitSlices(Scheduler* s, const std::string& queue, int count) {
  std::vector<uint64_t> ids;
  for (int i = 0; i < count; ++i) {
    ids.push_back(
        MustSubmit(s, JobSpecBuilder(queue).GpuForm(v1::GPU_FORM_TIME_SLICE).Build()).id());
  }
  return ids;
}

TEST_CASE("quota charge: a cap of 500 milli-GPUs admits two 250-milli time slices, not four") {
  auto t = OpenCluster(FourSlices());
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec capped = QueueSpec("capped");
  capped.mutable_cap()->set_gpu_milli(500);
  CreateQueue(s, capped);
  SubmitSlices(s, "capped", 4);
  t->WaitIdle();
  const std::map<v1::JobState, int> states = CountStates(s, "capped");
  CHECK(states.at(v1::RUNNING) == 2);
  CHECK(states.at(v1::PENDING) == 2);
  CHECK(s->GetQueue("capped")->status().allocated().gpu_milli() == 500);
}

TEST_CASE("quota charge: a borrowing limit of 250 milli-GPUs admits one time slice") {
  auto t = OpenCluster(FourSlices());
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec borrower = QueueSpec("borrower");
  borrower.mutable_borrowing_limit()->set_gpu_milli(250);
  CreateQueue(s, borrower);
  const std::vector<uint64_t> jobs = SubmitSlices(s, "borrower", 4);
  t->WaitIdle();
  CHECK(CountStates(s, "borrower").at(v1::RUNNING) == 1);
  CHECK(s->GetQueue("borrower")->status().allocated().gpu_milli() == 250);
  const v1::Job waiting = MustGet(s, jobs[1]);
  CHECK(waiting.status().state() == v1::PENDING);
  CHECK(waiting.status().reason() ==
        "waiting for quota: queue 'borrower' borrowing limit on gpu_milli");
}

TEST_CASE("quota charge: vGPUs count 1/instances of their GPU against a cap") {
  // A100-10C on an A100-40GB: four per GPU, 250 milli-GPUs and 10 GiB each.
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* vgpu = AddGroup(cluster, "vgpu", 1, 1, "A100-40GB");
  vgpu->set_gpu_memory_mib(40960);
  vgpu->set_sharing(v1::GPU_SHARING_VGPU);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec capped = QueueSpec("capped");
  capped.mutable_cap()->set_gpu_milli(500);
  CreateQueue(s, capped);
  for (int i = 0; i < 4; ++i) {
    MustSubmit(s, JobSpecBuilder("capped").VgpuType("A100-10C").Build());
  }
  t->WaitIdle();
  CHECK(CountStates(s, "capped").at(v1::RUNNING) == 2);
  const v1::Queue queue = *s->GetQueue("capped");
  CHECK(queue.status().allocated().gpu_milli() == 500);
  CHECK(queue.status().allocated().gpu_memory_mib() == 2 * 10 * 1024);
}

TEST_CASE("quota charge: MIG requests are checked with the instances' real memory") {
  // Two 3g.40gb instances of an A100-80GB hold 2 x 40,192 MiB: a cap of exactly that admits
  // both (a request counted as 40 GiB would admit one).
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* mig = AddGroup(cluster, "mig", 1, 1, "A100-80GB");
  mig->set_sharing(v1::GPU_SHARING_MIG);
  for (int start : {0, 4}) {
    v1::MigInstance* m = mig->add_mig_instances();
    m->set_profile("3g.40gb");
    m->set_start(start);
  }
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec capped = QueueSpec("capped");
  capped.mutable_cap()->set_gpu_memory_mib(2 * 40192);
  CreateQueue(s, capped);
  for (int i = 0; i < 2; ++i) MustSubmit(s, JobSpecBuilder("capped").MigProfile("3g.40gb").Build());
  t->WaitIdle();
  CHECK(CountStates(s, "capped").at(v1::RUNNING) == 2);
  CHECK(s->GetQueue("capped")->status().allocated().gpu_memory_mib() == 2 * 40192);
}

}  // namespace
}  // namespace tessera
