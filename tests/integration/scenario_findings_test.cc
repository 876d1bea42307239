// The defects the randomized scenario checker (tests/scenario/) found, each as the smallest case
// its shrinker left, replayed through the public API. Each failed before its fix.
#include <chrono>
#include <thread>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;

// Runs the virtual clock forward, stopping at each moment the scheduler has work, until `until`.
void RunUntil(TestScheduler& t, int64_t until) {
  for (int i = 0; i < 10'000; ++i) {
    t->WaitIdle();
    const std::optional<TimestampUs> next = t->NextWakeupUs();
    if (!next || *next > until) break;
    t.clock->AdvanceToUs(std::max(*next, t.clock->NowUs() + 1));
  }
  if (t.clock->NowUs() < until) t.clock->AdvanceToUs(until);
  t->WaitIdle();
}

TEST_CASE("scenario findings: a cancel request and a resize are JOB_UPDATED, not a state change") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  const int64_t start = t.clock->NowUs();
  MustSubmit(s, JobSpecBuilder("default").Gpus(3).SimulatedDurationMs(10'000).Build());
  const uint64_t elastic =
      MustSubmit(s, JobSpecBuilder("default").Elastic(2, 8).Gpus(1).Build()).id();
  RunUntil(t, start + 10 * kSecond);  // the 3-GPU job ends; the elastic job grows into it.
  REQUIRE(MustGet(s, elastic).status().placements_size() == 8);
  REQUIRE(s->Cancel(elastic).ok());
  RunUntil(t, start + 20 * kSecond);
  CHECK(MustGet(s, elastic).status().state() == v1::CANCELLED);

  auto events = s->WatchEvents(0, 1000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  int resizes = 0;
  int cancel_requests = 0;
  for (const v1::Event& e : *events) {
    if (e.job_id() != elastic) continue;
    INFO("event ", e.seq(), ": ", v1::EventKind_Name(e.kind()), " ",
         v1::JobState_Name(e.from_state()), " -> ", v1::JobState_Name(e.to_state()), " (",
         e.reason(), ")");
    if (e.kind() == v1::JOB_STATE_CHANGED) CHECK(e.from_state() != e.to_state());
    if (e.kind() != v1::JOB_UPDATED) continue;
    CHECK(e.to_state() == v1::RUNNING);
    if (e.reason().find("more task") != std::string::npos) ++resizes;
    if (e.reason().find("cancel requested") != std::string::npos) ++cancel_requests;
  }
  CHECK(resizes == 3);
  CHECK(cancel_requests == 1);
}

TEST_CASE("scenario findings: cancelling the blocked head of a queue lets the next job start") {
  // No reservation for the head either: dropping one asks for decisions by itself.
  Options options;
  options.engine.max_reservations = 0;
  auto t = OpenCluster(OneNode(2), options);
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec strict = QueueSpec("strict");
  strict.set_queueing(v1::STRICT_FIFO);  // no backfill: only the head is tried.
  CreateQueue(s, strict);
  MustSubmit(s, JobSpecBuilder("strict").Gpus(1).Build());
  const uint64_t head = MustSubmit(s, JobSpecBuilder("strict").Gpus(2).Build()).id();
  const uint64_t next = MustSubmit(s, JobSpecBuilder("strict").Gpus(1).Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, head).status().state() == v1::PENDING);
  REQUIRE(MustGet(s, next).status().state() == v1::PENDING);

  REQUIRE(s->Cancel(head).ok());
  // Nothing else happens: the cancel alone must lead to a decision. (Not WaitIdle: it waited
  // for ever on a decision the engine said it had but never asked its host to make.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  v1::JobState state = v1::PENDING;
  while (state == v1::PENDING && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    state = MustGet(s, next).status().state();
  }
  REQUIRE_MESSAGE(state != v1::PENDING, MustGet(s, next).status().reason());
  t->WaitIdle();
  CHECK(MustGet(s, next).status().state() == v1::RUNNING);
}

TEST_CASE("scenario findings: priority preemption leaves alone a queue within its guarantee") {
  // Queue "a" holds exactly its guarantee with a low-priority job; a normal job of queue "b"
  // may not take it (reclaim would take it back at once, and the two queues would preempt each
  // other at the cooldown's rate, neither job ever finishing). It waits for the GPU instead.
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(1);
  options.preemption.cooldown = std::chrono::seconds(5);
  auto t = OpenCluster(OneNode(1), options);
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec a = QueueSpec("a");
  a.mutable_guarantee()->set_gpu_milli(1000);
  CreateQueue(s, a);
  CreateQueue(s, QueueSpec("b"));
  const int64_t start = t.clock->NowUs();
  const uint64_t low =
      MustSubmit(
          s, JobSpecBuilder("a").Gpus(1).PriorityClass("low").SimulatedDurationMs(100'000).Build())
          .id();
  RunUntil(t, start + 10 * kSecond);
  const uint64_t normal =
      MustSubmit(s, JobSpecBuilder("b").Gpus(1).SimulatedDurationMs(50'000).Build()).id();
  RunUntil(t, start + 100 * kSecond);
  const v1::Job low_done = MustGet(s, low);
  CHECK(low_done.status().state() == v1::SUCCEEDED);
  CHECK(low_done.status().preemptions() == 0);
  CHECK(MustGet(s, normal).status().state() == v1::RUNNING);
  RunUntil(t, start + 150 * kSecond);
  CHECK(MustGet(s, normal).status().state() == v1::SUCCEEDED);
}

// One node, two GPUs: a 1-GPU job for 10 s, and an elastic job (1..2 tasks of 30 s) that starts
// with one task and grows a second when the GPU comes free at 10 s.
struct ElasticGrown {
  TestScheduler t;
  uint64_t elastic = 0;
  int64_t start = 0;
};

ElasticGrown GrowAnElasticJob() {
  ElasticGrown g{OpenCluster(OneNode(2))};
  Scheduler* s = g.t.scheduler.get();
  g.start = g.t.clock->NowUs();
  MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(10'000).Build());
  g.elastic =
      MustSubmit(
          s, JobSpecBuilder("default").Elastic(1, 2).Gpus(1).SimulatedDurationMs(30'000).Build())
          .id();
  RunUntil(g.t, g.start + 10 * kSecond);
  REQUIRE(MustGet(s, g.elastic).status().placements_size() == 2);
  return g;
}

TEST_CASE("scenario findings: a task that ends while its job runs on is shown as exited") {
  ElasticGrown g = GrowAnElasticJob();
  Scheduler* s = g.t.scheduler.get();
  RunUntil(g.t, g.start + 30 * kSecond);  // task 0 ends; task 1 runs until 40 s.
  const v1::Job job = MustGet(s, g.elastic);
  CHECK(job.status().state() == v1::RUNNING);
  REQUIRE(job.status().placements_size() >= 2);
  CHECK(job.status().placements(0).exited());
  CHECK_FALSE(job.status().placements(1).exited());
  // What the job shows holding is what its queue is charged for.
  int64_t live_milli = 0;
  for (const v1::TaskPlacement& p : job.status().placements()) {
    if (!p.exited()) live_milli += 1000;
  }
  CHECK(live_milli == s->GetQueue("default")->status().allocated().gpu_milli());
}

TEST_CASE("scenario findings: an elastic job whose task has ended does not grow again") {
  ElasticGrown g = GrowAnElasticJob();
  Scheduler* s = g.t.scheduler.get();
  // Task 0 ends at 30 s with its work done; a new task then would start the work over, and
  // the job, always holding a task, would never end.
  RunUntil(g.t, g.start + 40 * kSecond);
  const v1::Job job = MustGet(s, g.elastic);
  CHECK(job.status().state() == v1::SUCCEEDED);
  CHECK(job.status().placements_size() == 2);
}

TEST_CASE("scenario findings: a vGPU job that preempts gets the GPU its victims free") {
  // One A100-40GB as vGPUs, typed A100-8C by two low-priority jobs; a normal A100-4C job needs
  // the GPU empty. The victim with the shorter grace came straight back onto the GPU (still
  // typed 8C by the other), so the 4C job never fit and preempted both again and again.
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(1);
  options.preemption.cooldown = std::chrono::seconds(5);
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* vgpu = AddGroup(cluster, "vgpu", 1, 1, "A100-40GB");
  vgpu->set_gpu_memory_mib(40960);
  vgpu->set_sharing(v1::GPU_SHARING_VGPU);
  auto t = OpenCluster(cluster, options);
  Scheduler* s = t.scheduler.get();
  const int64_t start = t.clock->NowUs();
  std::vector<uint64_t> low;
  for (int grace_s : {1, 2}) {
    v1::JobSpec spec = JobSpecBuilder("default")
                           .Gpus(1)
                           .VgpuType("A100-8C")
                           .PriorityClass("low")
                           .SimulatedDurationMs(100'000)
                           .Build();
    spec.set_checkpoint_grace_s(grace_s);
    low.push_back(MustSubmit(s, spec).id());
  }
  RunUntil(t, start + 10 * kSecond);
  const uint64_t urgent =
      MustSubmit(
          s,
          JobSpecBuilder("default").Gpus(1).VgpuType("A100-4C").SimulatedDurationMs(30'000).Build())
          .id();
  RunUntil(t, start + 15 * kSecond);
  CHECK(MustGet(s, urgent).status().state() == v1::RUNNING);
  RunUntil(t, start + 45 * kSecond);
  CHECK(MustGet(s, urgent).status().state() == v1::SUCCEEDED);
  for (uint64_t id : low) CHECK(MustGet(s, id).status().preemptions() == 1);
}

TEST_CASE(
    "scenario findings: a time slice and a vGPU of the same size both start on an idle cluster") {
  // A 4 GiB time slice and an A100-4C vGPU differ only in their form. The placement scorer
  // cached per node whether a shape fits and keyed both alike, so the vGPU's "does not fit" on
  // the time-sliced node became the time slice's answer there: it waited for ever, "1 node(s)
  // reserved, expected start in 0 s", with nothing running.
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* sliced = AddGroup(cluster, "ts", 1, 1, "A100-80GB");
  sliced->set_sharing(v1::GPU_SHARING_TIME_SLICE);
  sliced->set_replicas(3);
  v1::SimulatedNodeGroup* vgpu = AddGroup(cluster, "vgpu", 1, 1, "A100-40GB");
  vgpu->set_gpu_memory_mib(40960);
  vgpu->set_sharing(v1::GPU_SHARING_VGPU);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  const int64_t start = t.clock->NowUs();
  const uint64_t typed = MustSubmit(s, JobSpecBuilder("default")
                                           .Gpus(1)
                                           .MemoryMib(4096)
                                           .VgpuType("A100-4C")
                                           .SimulatedDurationMs(60'000)
                                           .Build())
                             .id();
  RunUntil(t, start + kSecond);
  const uint64_t slice = MustSubmit(s, JobSpecBuilder("default")
                                           .Gpus(1)
                                           .MemoryMib(4096)
                                           .GpuMemoryMib(4096)
                                           .GpuForm(v1::GPU_FORM_TIME_SLICE)
                                           .SimulatedDurationMs(60'000)
                                           .Build())
                             .id();
  RunUntil(t, start + 2 * kSecond);
  CHECK(MustGet(s, typed).status().state() == v1::RUNNING);
  const v1::Job sliced_job = MustGet(s, slice);
  INFO(sliced_job.status().reason());
  CHECK(sliced_job.status().state() == v1::RUNNING);
}

TEST_CASE("scenario findings: a job that preempts shares for whole GPUs gets them") {
  // Two low-priority quarter-GPU shares on a 2-GPU node; a normal job needs both GPUs whole and
  // preempts them. The hold for it counted milli-GPUs, not GPUs: the victim without a grace
  // period was requeued and placed straight back on a GPU that had just become free, so the
  // job never fit, and preempted both again each cooldown, for ever.
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(7);
  options.preemption.cooldown = std::chrono::seconds(8);
  auto t = OpenCluster(OneNode(2), options);
  Scheduler* s = t.scheduler.get();
  const int64_t start = t.clock->NowUs();
  std::vector<uint64_t> shares;
  for (int grace_s : {0, 2}) {
    v1::JobSpec spec = JobSpecBuilder("default")
                           .Gpus(1)
                           .GpuFraction(250)
                           .PriorityClass("low")
                           .SimulatedDurationMs(300'000)
                           .Build();
    spec.set_checkpoint_grace_s(grace_s);
    shares.push_back(MustSubmit(s, spec).id());
    RunUntil(t, t.clock->NowUs() + 5 * kSecond);
  }
  RunUntil(t, start + 40 * kSecond);
  const uint64_t whole =
      MustSubmit(s, JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(60'000).Build()).id();
  RunUntil(t, start + 50 * kSecond);
  const v1::Job job = MustGet(s, whole);
  INFO(job.status().reason());
  CHECK(job.status().state() == v1::RUNNING);
  for (uint64_t id : shares) CHECK(MustGet(s, id).status().preemptions() == 1);
}

TEST_CASE(
    "scenario findings: the job behind a head no step can serve reclaims its queue's guarantee") {
  // Queue "a" is owed one GPU. Its head needs both GPUs of the node, one of which has failed, so
  // no make-room step can serve it; the 1-GPU job behind it must reclaim the GPU queue "b"
  // borrows, or "a" waits for its guarantee as long as its head cannot run (seeds 359, 481 and
  // 836). The borrower is placed in the very pass the reclaim is first tried, still starting:
  // the reclaim must look again once it runs.
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(0);
  options.preemption.cooldown = std::chrono::seconds(18);
  auto t = OpenCluster(OneNode(2), options);
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec a = QueueSpec("a");
  a.mutable_guarantee()->set_gpu_milli(1000);
  CreateQueue(s, a);
  CreateQueue(s, QueueSpec("b"));
  const int64_t start = t.clock->NowUs();
  const uint64_t head =
      MustSubmit(s, JobSpecBuilder("a").Gpus(2).SimulatedDurationMs(65'000).Build()).id();
  RunUntil(t, start + 5 * kSecond);
  const uint64_t behind = MustSubmit(s, JobSpecBuilder("a")
                                            .Gpus(1)
                                            .PriorityClass("low")
                                            .TimeLimitSeconds(69)
                                            .SimulatedDurationMs(44'000)
                                            .Build())
                              .id();
  const uint64_t borrower = MustSubmit(s, JobSpecBuilder("b")
                                              .Gpus(1)
                                              .PriorityClass("low")
                                              .TimeLimitSeconds(120)
                                              .SimulatedDurationMs(114'000)
                                              .Build())
                                .id();
  RunUntil(t, start + 10 * kSecond);
  v1::GpuTelemetry failed;
  failed.set_node(MustGet(s, head).status().placements(0).node());
  failed.set_gpu(0);
  failed.add_xid_errors(79);
  REQUIRE(s->ReportTelemetry(failed).ok());
  RunUntil(t, start + 40 * kSecond);
  const v1::Job job = MustGet(s, behind);
  INFO(job.status().reason());
  CHECK(job.status().state() == v1::RUNNING);
  CHECK(MustGet(s, borrower).status().preemptions() == 1);
  CHECK(MustGet(s, head).status().state() == v1::PENDING);
}

TEST_CASE("scenario findings: a gang that preempted and started leaves no claim on its queue") {
  // A 2-task gang of queue "b" preempts for both GPUs and runs. Its queue's count of what its
  // waiting jobs will take was lowered by one task, not two, once it had started (seed 461):
  // "b" then looked a GPU nearer its guarantee than it was and never reclaimed it again.
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(1);
  options.preemption.cooldown = std::chrono::seconds(1);
  auto t = OpenCluster(OneNode(2), options);
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec b = QueueSpec("b");
  b.mutable_guarantee()->set_gpu_milli(1000);
  CreateQueue(s, b);
  CreateQueue(s, QueueSpec("a"));
  const int64_t start = t.clock->NowUs();
  for (int i = 0; i < 2; ++i) {
    MustSubmit(
        s, JobSpecBuilder("a").Gpus(1).PriorityClass("low").SimulatedDurationMs(600'000).Build());
  }
  RunUntil(t, start + 5 * kSecond);
  const uint64_t gang = MustSubmit(s, JobSpecBuilder("b")
                                          .Tasks(2)
                                          .Gpus(1)
                                          .PriorityClass("high")
                                          .SimulatedDurationMs(20'000)
                                          .Build())
                            .id();
  RunUntil(t, start + 40 * kSecond);
  REQUIRE(MustGet(s, gang).status().state() == v1::SUCCEEDED);
  // Queue "a" has both GPUs again; "b" is owed one, for a job of no higher priority than a's.
  const uint64_t owed =
      MustSubmit(
          s, JobSpecBuilder("b").Gpus(1).PriorityClass("low").SimulatedDurationMs(30'000).Build())
          .id();
  RunUntil(t, start + 60 * kSecond);
  const v1::Job job = MustGet(s, owed);
  INFO(job.status().reason());
  CHECK(job.status().state() == v1::RUNNING);
}

TEST_CASE("scenario findings: a reclaim may use a reserved node it leaves before the start") {
  // Queue "a" is owed one GPU. Its head needs both GPUs: one is borrowed by queue "b" (no time
  // limit), the other is queue "c"'s guarantee, so the head reserves the node, from a day away.
  // The 1-GPU job behind it ends within 60 s, long before that: like a backfill candidate, it
  // may use the reserved node, here to reclaim "b"'s GPU (seed 359).
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(0);
  options.preemption.cooldown = std::chrono::seconds(1);
  auto t = OpenCluster(OneNode(2), options);
  Scheduler* s = t.scheduler.get();
  for (const char* name : {"a", "c"}) {
    v1::QueueSpec q = QueueSpec(name);
    q.mutable_guarantee()->set_gpu_milli(1000);
    CreateQueue(s, q);
  }
  CreateQueue(s, QueueSpec("b"));
  const int64_t start = t.clock->NowUs();
  const uint64_t borrower =
      MustSubmit(
          s, JobSpecBuilder("b").Gpus(1).PriorityClass("low").SimulatedDurationMs(600'000).Build())
          .id();
  MustSubmit(s,
             JobSpecBuilder("c").Gpus(1).PriorityClass("low").SimulatedDurationMs(600'000).Build());
  RunUntil(t, start + 5 * kSecond);
  const uint64_t head =
      MustSubmit(s, JobSpecBuilder("a").Gpus(2).SimulatedDurationMs(60'000).Build()).id();
  RunUntil(t, start + 10 * kSecond);
  REQUIRE(MustGet(s, head).status().state() == v1::PENDING);
  const uint64_t behind = MustSubmit(s, JobSpecBuilder("a")
                                            .Gpus(1)
                                            .PriorityClass("low")
                                            .TimeLimitSeconds(60)
                                            .SimulatedDurationMs(30'000)
                                            .Build())
                              .id();
  RunUntil(t, start + 20 * kSecond);
  const v1::Job job = MustGet(s, behind);
  INFO(job.status().reason());
  INFO(MustGet(s, head).status().reason());
  CHECK(job.status().state() == v1::RUNNING);
  CHECK(MustGet(s, borrower).status().preemptions() == 1);
}

}  // namespace
}  // namespace tessera
