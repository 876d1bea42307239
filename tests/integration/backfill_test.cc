// Gangs are not starved: a job that does not fit reserves nodes from the time running jobs
// will free them, and other jobs may use those nodes only if they end first (backfill).
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

v1::SimulatedCluster TwoNodesOfFour() {
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "node", 2, 4);
  return cluster;
}

v1::JobSpec Small(int64_t run_s, int64_t limit_s) {
  return JobSpecBuilder("small")
      .Gpus(1)
      .SimulatedDurationMs(run_s * 1000)
      .TimeLimitSeconds(limit_s)
      .Build();
}

struct Story {
  uint64_t gang = 0;
  uint64_t short_job = 0;
  TestScheduler t;
};

// Eight one-GPU jobs fill both nodes, ending at 10, 20, ..., 80 s; many more small jobs with
// 100 s limits wait; then a gang of two 4-GPU tasks arrives in its own queue.
Story Start(int max_reservations) {
  Options options;
  options.engine.max_reservations = max_reservations;
  Story s{0, 0, OpenCluster(TwoNodesOfFour(), options)};
  Scheduler* sched = s.t.scheduler.get();
  CreateQueue(sched, QueueSpec("small"));
  CreateQueue(sched, QueueSpec("big"));
  for (int i = 1; i <= 8; ++i) MustSubmit(sched, Small(10 * i, 10 * i));
  s.t->WaitIdle();
  for (int i = 0; i < 30; ++i) MustSubmit(sched, Small(100, 100));
  s.gang = MustSubmit(sched, JobSpecBuilder("big").Tasks(2).Gpus(4).Build()).id();
  s.short_job = MustSubmit(sched, Small(5, 30)).id();  // ends before the gang could start.
  s.t->WaitIdle();
  return s;
}

void RunUntil(TestScheduler& t, TimestampUs until) {
  while (auto next = t->NextWakeupUs()) {
    if (*next > until) break;
    t.clock->AdvanceToUs(*next);
    t->WaitIdle();
  }
  t.clock->AdvanceToUs(until);
  t->WaitIdle();
}

TEST_CASE("backfill: a reserved gang starts when the running jobs end, not never") {
  Story s = Start(1);
  const TimestampUs t0 = s.t.clock->NowUs();
  const v1::Job waiting = MustGet(s.t.scheduler.get(), s.gang);
  CHECK(waiting.status().reserved_start_us() == t0 + 80'000'000);
  CHECK(waiting.status().reason().find("2 node(s) reserved") != std::string::npos);
  CHECK(s.t->GetStats().reservations() == 1);

  RunUntil(s.t, t0 + 80'000'000);
  const v1::Job gang = MustGet(s.t.scheduler.get(), s.gang);
  CHECK(gang.status().state() == v1::RUNNING);
  CHECK(gang.status().start_time_us() == t0 + 80'000'000);
  CHECK(gang.status().reserved_start_us() == 0);
  // The next job first in line (a small one now) holds the reservation.
  v1::ListJobsRequest pending;
  pending.set_queue("small");
  pending.add_states(v1::PENDING);
  auto small = s.t->ListJobs(pending);
  REQUIRE(small.ok());
  CHECK(small->jobs(0).status().reserved_start_us() > 0);
}

TEST_CASE("backfill: a job without a limit counts as ending after the estimate, then soon") {
  Options options;
  options.engine.default_runtime_estimate = std::chrono::seconds(60);
  TestScheduler t = OpenCluster(TwoNodesOfFour(), options);
  Scheduler* sched = t.scheduler.get();
  CreateQueue(sched, QueueSpec("small"));
  CreateQueue(sched, QueueSpec("big"));
  // One node runs a job with a 200 s limit; the other, from 10 s later, one without a limit.
  MustSubmit(
      sched,
      JobSpecBuilder("small").Gpus(4).SimulatedDurationMs(2'000'000).TimeLimitSeconds(200).Build());
  t->WaitIdle();
  const TimestampUs t0 = t.clock->NowUs();
  t.clock->AdvanceToUs(t0 + 10'000'000);
  MustSubmit(sched, JobSpecBuilder("small").Gpus(4).SimulatedDurationMs(2'000'000).Build());
  t->WaitIdle();
  const uint64_t gang = MustSubmit(sched, JobSpecBuilder("big").Gpus(4).Build()).id();
  t->WaitIdle();
  // The job without a limit is expected to end 60 s after its start, long before the other.
  CHECK(MustGet(sched, gang).status().reserved_start_us() == t0 + 70'000'000);
  // Once past its estimate it could end at any moment: the plan is redone a second later and
  // expects it five minutes from then, which is after the limited job's end, so the
  // reservation moves to that job's node.
  RunUntil(t, t0 + 71'000'000);
  const v1::Job replanned = MustGet(sched, gang);
  CHECK(replanned.status().reserved_start_us() == t0 + 200'000'000);
  CHECK(replanned.status().reason().find("expected start in 129 s") != std::string::npos);
}

TEST_CASE("backfill: a short job uses reserved capacity it will give back in time") {
  Story s = Start(1);
  const TimestampUs t0 = s.t.clock->NowUs();
  RunUntil(s.t, t0 + 10'000'000);  // the first GPU frees.
  const v1::Job short_job = MustGet(s.t.scheduler.get(), s.short_job);
  CHECK(short_job.status().state() == v1::RUNNING);
  CHECK(short_job.status().start_time_us() == t0 + 10'000'000);
  CHECK(s.t->GetStats().backfilled() == 1);
  // The long small jobs, which would end after the gang's start, did not get in.
  auto small = CountStates(s.t.scheduler.get(), "small");
  CHECK(small[v1::RUNNING] == 8);  // seven of the first eight, plus the backfilled one.
}

TEST_CASE("backfill: without reservations the gang starves behind small jobs") {
  Story s = Start(0);
  const TimestampUs t0 = s.t.clock->NowUs();
  RunUntil(s.t, t0 + 200'000'000);
  CHECK(MustGet(s.t.scheduler.get(), s.gang).status().state() == v1::PENDING);
  CHECK(s.t->GetStats().reservations() == 0);
}

// One node of four GPUs. Queue a-capped may hold one GPU and holds it (a job with a 100 s
// limit); its next job, over the cap, is the first backfill looks at. Queue b-free waits behind
// a 4-GPU job that reserves the node from 100 s; behind it waits a one-GPU job of the same
// shape as a-capped's next one, ending after 10 s: it may backfill.
struct QuotaTwins {
  TestScheduler t;
  uint64_t over_cap = 0;
  uint64_t big = 0;
  uint64_t twin = 0;
};

v1::JobSpec OneGpu(const std::string& queue, int64_t limit_s) {
  return JobSpecBuilder(queue)
      .Gpus(1)
      .SimulatedDurationMs(limit_s * 1000)
      .TimeLimitSeconds(limit_s)
      .Build();
}

// With `twin_arrives_later`, the twin is submitted after b-free's head was found not to fit;
// otherwise all three wait for one decision pass.
QuotaTwins StartQuotaTwins(bool twin_arrives_later) {
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "node", 1, 4);
  QuotaTwins s{OpenCluster(cluster)};
  Scheduler* sched = s.t.scheduler.get();
  v1::QueueSpec capped = QueueSpec("a-capped");
  capped.mutable_cap()->set_gpu_milli(1000);
  CreateQueue(sched, capped);
  CreateQueue(sched, QueueSpec("b-free"));
  MustSubmit(sched, OneGpu("a-capped", 100));
  s.t->WaitIdle();
  if (!twin_arrives_later) sched->PauseDecisions();
  s.over_cap = MustSubmit(sched, OneGpu("a-capped", 10)).id();
  s.big = MustSubmit(sched, JobSpecBuilder("b-free").Gpus(4).Build()).id();
  if (twin_arrives_later) s.t->WaitIdle();
  s.twin = MustSubmit(sched, OneGpu("b-free", 10)).id();
  if (!twin_arrives_later) sched->ResumeDecisions();
  s.t->WaitIdle();
  CHECK(MustGet(sched, s.over_cap).status().state() == v1::PENDING);
  CHECK(MustGet(sched, s.big).status().reserved_start_us() > 0);
  return s;
}

TEST_CASE("backfill: a job over its queue's quota does not keep a twin elsewhere out") {
  // Before, the over-cap job's quota failure was remembered as "this shape does not fit" and
  // the twin was skipped, though three GPUs were free until the reservation.
  // (All in the pass that first finds b-free's head too big, so the reservation is planned only
  // after the twin started: it does not count as backfilled.)
  QuotaTwins s = StartQuotaTwins(/*twin_arrives_later=*/false);
  CHECK(MustGet(s.t.scheduler.get(), s.twin).status().state() == v1::RUNNING);
}

TEST_CASE("backfill: a job arriving behind a head that does not fit is tried at once") {
  // Before, it waited for the next release (here the running job's end, 100 s later).
  QuotaTwins s = StartQuotaTwins(/*twin_arrives_later=*/true);
  CHECK(MustGet(s.t.scheduler.get(), s.twin).status().state() == v1::RUNNING);
  CHECK(s.t->GetStats().backfilled() == 1);
}

TEST_CASE("backfill: jobs that leave a reservation its room start at once, on its nodes too") {
  // One 8-GPU node: a 6-GPU job runs, a 4-GPU job waits with the node reserved for it.
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").Gpus(6).Build());
  const uint64_t gang = MustSubmit(s, JobSpecBuilder("default").Gpus(4).Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, gang).status().reserved_start_us() > 0);
  // Jobs without a time limit that need no GPU, or GPUs the reservation does not need when it
  // starts: the 4-GPU job still fits once the 6-GPU job ends, so they start now.
  std::vector<uint64_t> cpu_only;
  for (int i = 0; i < 4; ++i)
    cpu_only.push_back(MustSubmit(s, JobSpecBuilder("default").Build()).id());
  const uint64_t two_gpus = MustSubmit(s, JobSpecBuilder("default").Gpus(2).Build()).id();
  t->WaitIdle();
  for (uint64_t id : cpu_only) CHECK(MustGet(s, id).status().state() == v1::RUNNING);
  CHECK(MustGet(s, two_gpus).status().state() == v1::RUNNING);
  // One more GPU would leave the 4-GPU job short when the 6-GPU job ends: it waits, and says
  // why.
  const uint64_t one_more = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  const v1::Job waiting = MustGet(s, one_more);
  CHECK(waiting.status().state() == v1::PENDING);
  CHECK(waiting.status().reason() != "");
  CHECK(MustGet(s, gang).status().reserved_start_us() > 0);
}

TEST_CASE("backfill: a job that would leave a reservation short waits, and says why") {
  // A 3-GPU job runs; a 6-GPU job has the node reserved for when it ends.
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").Gpus(3).Build());
  const uint64_t gang = MustSubmit(s, JobSpecBuilder("default").Gpus(6).Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, gang).status().reserved_start_us() > 0);
  t.clock->AdvanceUs(10'000'000);  // the jobs below run past the 3-GPU job's expected end.
  t->WaitIdle();
  // Two GPUs leave the six it needs; one more would not, though it fits now.
  const uint64_t two = MustSubmit(s, JobSpecBuilder("default").Gpus(2).Build()).id();
  t->WaitIdle();
  const uint64_t one = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, two).status().state() == v1::RUNNING);
  const v1::Job waiting = MustGet(s, one);
  CHECK(waiting.status().state() == v1::PENDING);
  CHECK(waiting.status().reason() == "waiting for capacity: 0 of 1 tasks fit now");
  // A job that ends before the reservation starts may still use the GPU.
  const uint64_t brief =
      MustSubmit(s, JobSpecBuilder("default").Gpus(1).TimeLimitSeconds(60).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, brief).status().state() == v1::RUNNING);
}

TEST_CASE("backfill: a reservation holder whose queue reaches its cap gives the nodes back") {
  // Node big-0 (8 GPUs) runs a teamb job until 100 s, node small-0 (4 GPUs) another until 50 s.
  // teama (cap 10 GPUs) waits with an 8-GPU job holding big-0 from 100 s; at 50 s its 4-GPU job
  // starts on small-0, and the 8-GPU job no longer fits teama's cap. Before, it kept big-0
  // reserved and its "waiting for capacity" reason, and an 8-GPU job of teamb could not have
  // big-0 when it freed.
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "big", 1, 8);
  AddGroup(cluster, "small", 1, 4);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec teama = QueueSpec("teama");
  teama.mutable_cap()->set_gpu_milli(10'000);
  CreateQueue(s, teama);
  CreateQueue(s, QueueSpec("teamb"));
  auto limited = [](const std::string& queue, int gpus, int64_t seconds) {
    return JobSpecBuilder(queue)
        .Gpus(gpus)
        .SimulatedDurationMs(seconds * 1000)
        .TimeLimitSeconds(seconds)
        .Build();
  };
  MustSubmit(s, limited("teamb", 8, 100));
  MustSubmit(s, limited("teamb", 4, 50));
  t->WaitIdle();
  const TimestampUs t0 = t.clock->NowUs();
  const uint64_t holder = MustSubmit(s, JobSpecBuilder("teama").Gpus(8).Build()).id();
  const uint64_t second = MustSubmit(s, limited("teama", 4, 1000)).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, holder).status().reserved_start_us() == t0 + 100'000'000);

  RunUntil(t, t0 + 50'000'000);
  REQUIRE(MustGet(s, second).status().state() == v1::RUNNING);
  const v1::Job over_cap = MustGet(s, holder);
  CHECK(over_cap.status().reserved_start_us() == 0);
  CHECK(over_cap.status().reason() == "waiting for quota: queue 'teama' cap on gpu_milli");

  t.clock->AdvanceToUs(t0 + 60'000'000);
  const uint64_t rival = MustSubmit(s, limited("teamb", 8, 10)).id();
  t->WaitIdle();
  RunUntil(t, t0 + 100'000'000);
  const v1::Job started = MustGet(s, rival);
  CHECK(started.status().state() == v1::RUNNING);
  CHECK(started.status().start_time_us() == t0 + 100'000'000);
  CHECK(MustGet(s, holder).status().state() == v1::PENDING);
}

TEST_CASE("backfill: a cap lowered below a reservation holder's need drops its reservation") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("teama"));
  MustSubmit(s, JobSpecBuilder("default").Gpus(6).Build());
  const uint64_t holder = MustSubmit(s, JobSpecBuilder("teama").Gpus(4).Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, holder).status().reserved_start_us() > 0);
  v1::QueueSpec capped = QueueSpec("teama");
  capped.mutable_cap()->set_gpu_milli(2000);
  REQUIRE(s->UpdateQueue(capped).ok());
  t->WaitIdle();
  const v1::Job waiting = MustGet(s, holder);
  CHECK(waiting.status().reserved_start_us() == 0);
  CHECK(waiting.status().reason() == "waiting for quota: queue 'teama' cap on gpu_milli");
}

TEST_CASE("backfill: a job that outruns its time limit is stopped and fails") {
  auto t = OpenCluster(OneNode(1));
  const v1::Job job = MustSubmit(
      t.scheduler.get(),
      JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(100'000).TimeLimitSeconds(10).Build());
  t->WaitIdle();
  t.clock->AdvanceUs(10'000'000);
  t->WaitIdle();
  const v1::Job failed = MustGet(t.scheduler.get(), job.id());
  CHECK(failed.status().state() == v1::FAILED);
  CHECK(failed.status().reason() == "time limit of 10 s exceeded");
  CHECK(failed.status().end_time_us() == t.clock->NowUs());
}

}  // namespace
}  // namespace tessera
