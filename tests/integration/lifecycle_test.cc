// A job's life through the public API, in virtual time: run, succeed, fail, cancel, and the
// events that record each step.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

TEST_CASE("lifecycle: a submitted job runs for its simulated duration and succeeds") {
  auto t = OpenCluster(OneNode(8));
  const v1::Job job = MustSubmit(
      t.scheduler.get(), JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(10'000).Build());
  CHECK(job.status().state() == v1::PENDING);
  CHECK(job.status().attempt() == 1);
  CHECK(job.status().priority() == 100);  // the default class, "normal".
  t->WaitIdle();
  const v1::Job running = MustGet(t.scheduler.get(), job.id());
  CHECK(running.status().state() == v1::RUNNING);
  REQUIRE(running.status().placements_size() == 1);
  CHECK(running.status().placements(0).gpus_size() == 2);
  CHECK(running.status().placements(0).node() == "node-0");
  CHECK(running.status().start_time_us() == t.clock->NowUs());

  t.clock->AdvanceUs(9'999'000);
  t->WaitIdle();
  CHECK(MustGet(t.scheduler.get(), job.id()).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(1000);
  t->WaitIdle();
  const v1::Job done = MustGet(t.scheduler.get(), job.id());
  CHECK(done.status().state() == v1::SUCCEEDED);
  CHECK(done.status().end_time_us() == t.clock->NowUs());
  CHECK(t->GetQueue("default")->status().allocated().gpu_milli() == 0);

  // The event log tells the whole story, in order.
  auto events = t->WatchEvents(0, 100, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  std::vector<v1::JobState> states;
  for (const v1::Event& e : *events) {
    if (e.job_id() == job.id()) states.push_back(e.to_state());
  }
  CHECK(states == std::vector<v1::JobState>{v1::PENDING, v1::ADMITTED, v1::STARTING, v1::RUNNING,
                                            v1::SUCCEEDED});
  for (size_t i = 1; i < events->size(); ++i)
    CHECK((*events)[i].seq() == (*events)[i - 1].seq() + 1);
}

TEST_CASE("lifecycle: NextWakeupUs tells a simulation when the next task ends") {
  auto t = OpenCluster(OneNode(8));
  CHECK_FALSE(t->NextWakeupUs().has_value());
  const TimestampUs start = t.clock->NowUs();
  MustSubmit(t.scheduler.get(),
             JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(30'000).Build());
  MustSubmit(t.scheduler.get(),
             JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(5'000).Build());
  t->WaitIdle();
  REQUIRE(t->NextWakeupUs().has_value());
  CHECK(*t->NextWakeupUs() == start + 5'000'000);
  t.clock->AdvanceToUs(*t->NextWakeupUs());
  t->WaitIdle();
  CHECK(*t->NextWakeupUs() == start + 30'000'000);
}

TEST_CASE("lifecycle: a task that exits non-zero fails the job and stops its other tasks") {
  auto t = OpenCluster(OneNode(8));
  v1::JobSpec spec =
      JobSpecBuilder("default").Tasks(3).Gpus(1).SimulatedDurationMs(5000, 3).Build();
  const v1::Job job = MustSubmit(t.scheduler.get(), spec);
  t->WaitIdle();
  t.clock->AdvanceUs(5'000'000);
  t->WaitIdle();
  const v1::Job failed = MustGet(t.scheduler.get(), job.id());
  CHECK(failed.status().state() == v1::FAILED);
  CHECK(failed.status().reason().find("exited with code 3") != std::string::npos);
  CHECK(t->GetQueue("default")->status().allocated().gpu_milli() == 0);
}

TEST_CASE("lifecycle: cancelling a pending job, a running job, a finished one, an unknown one") {
  auto t = OpenCluster(OneNode(1));
  Scheduler* s = t.scheduler.get();
  const v1::Job running = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build());
  const v1::Job waiting = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build());
  t->WaitIdle();
  REQUIRE(MustGet(s, running.id()).status().state() == v1::RUNNING);

  auto cancelled = s->Cancel(waiting.id());
  REQUIRE_MESSAGE(cancelled.ok(), cancelled.status().ToString());
  CHECK(cancelled->status().state() == v1::CANCELLED);

  auto stopping = s->Cancel(running.id());
  REQUIRE_MESSAGE(stopping.ok(), stopping.status().ToString());
  CHECK(stopping->status().cancel_requested());
  t->WaitIdle();
  CHECK(MustGet(s, running.id()).status().state() == v1::CANCELLED);
  CHECK(t->GetQueue("default")->status().allocated().gpu_milli() == 0);

  auto again = s->Cancel(running.id());
  CHECK(again.status().code() == StatusCode::kFailedPrecondition);
  CHECK(again.status().message().find("CANCELLED") != std::string::npos);
  CHECK(s->Cancel(987654).status().code() == StatusCode::kNotFound);
}

TEST_CASE("lifecycle: a gang starts all its tasks at once or waits with nothing held") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  const v1::Job blocker = MustSubmit(s, JobSpecBuilder("default").Gpus(4).Build());
  const v1::Job gang = MustSubmit(s, JobSpecBuilder("default").Tasks(3).Gpus(2).Build());
  t->WaitIdle();
  // 4 GPUs free, the gang needs 6: it waits and holds nothing.
  CHECK(MustGet(s, gang.id()).status().state() == v1::PENDING);
  CHECK(t->GetQueue("default")->status().allocated().gpu_milli() == 4000);
  REQUIRE(s->Cancel(blocker.id()).ok());
  t->WaitIdle();
  const v1::Job started = MustGet(s, gang.id());
  CHECK(started.status().state() == v1::RUNNING);
  CHECK(started.status().placements_size() == 3);
}

TEST_CASE("lifecycle: an elastic job starts with what fits, at least its minimum") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").Gpus(3).Build());
  const v1::Job elastic = MustSubmit(s, JobSpecBuilder("default").Elastic(2, 8).Gpus(1).Build());
  t->WaitIdle();
  const v1::Job got = MustGet(s, elastic.id());
  CHECK(got.status().state() == v1::RUNNING);
  CHECK(got.status().placements_size() == 5);
}

TEST_CASE("lifecycle: an elastic job grows into capacity nobody else wants") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  const uint64_t other =
      MustSubmit(s, JobSpecBuilder("default").Gpus(3).SimulatedDurationMs(10'000).Build()).id();
  const uint64_t elastic =
      MustSubmit(s, JobSpecBuilder("default").Elastic(2, 8).Gpus(1).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, elastic).status().placements_size() == 5);
  t.clock->AdvanceUs(10'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, other).status().state() == v1::SUCCEEDED);
  const v1::Job grown = MustGet(s, elastic);
  CHECK(grown.status().placements_size() == 8);
  CHECK(t->GetQueue("default")->status().allocated().gpu_milli() == 8000);
}

TEST_CASE("lifecycle: a pending job says why it waits, and stops saying so once it runs") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec capped = QueueSpec("capped");
  capped.mutable_cap()->set_gpu_milli(2000);
  CreateQueue(s, capped);
  const uint64_t first =
      MustSubmit(s, JobSpecBuilder("capped").Gpus(2).SimulatedDurationMs(10'000).Build()).id();
  const uint64_t second = MustSubmit(s, JobSpecBuilder("capped").Gpus(1).Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, second).status().state() == v1::PENDING);
  const std::string why = "waiting for quota: queue 'capped' cap on gpu_milli";
  CHECK(MustGet(s, second).status().reason() == why);
  v1::ListJobsRequest request;
  request.set_queue("capped");
  auto page = s->ListJobs(request);
  REQUIRE(page.ok());
  REQUIRE(page->jobs_size() == 2);
  CHECK(page->jobs(1).status().reason() == why);

  // Once the first ends, the second runs and its reason is the placement's, not the wait's.
  t.clock->AdvanceUs(10'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, first).status().state() == v1::SUCCEEDED);
  const v1::Job running = MustGet(s, second);
  CHECK(running.status().state() == v1::RUNNING);
  CHECK(running.status().reason().find("waiting") == std::string::npos);
}

TEST_CASE("lifecycle: a job no node could run is accepted as infeasible, with the reason") {
  auto t = OpenCluster(OneNode(8));
  const v1::Job job = MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(16).Build());
  CHECK(job.status().infeasible());
  CHECK(job.status().reason().find("gpu_count 16 > largest node's 8") != std::string::npos);
  t->WaitIdle();
  CHECK(MustGet(t.scheduler.get(), job.id()).status().state() == v1::PENDING);
  // It does not block the queue for others.
  const v1::Job small = MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(1).Build());
  t->WaitIdle();
  CHECK(MustGet(t.scheduler.get(), small.id()).status().state() == v1::RUNNING);
  auto model = t->Submit(JobSpecBuilder("default").Gpus(1).GpuModel("H200-141GB").Build());
  REQUIRE(model.ok());
  CHECK(model->status().reason().find("no node has GPUs of model H200-141GB") != std::string::npos);
  // It can still be cancelled.
  auto cancelled = t->Cancel(job.id());
  REQUIRE(cancelled.ok());
  CHECK(cancelled->status().state() == v1::CANCELLED);
}

TEST_CASE("lifecycle: a retried submit with the same idempotency key returns the same job") {
  auto t = OpenCluster(OneNode(8));
  const v1::JobSpec spec = JobSpecBuilder("default").Name("train").Gpus(1).Build();
  SubmitOptions options;
  options.idempotency_key = "req-42";
  auto first = t->Submit(spec, options);
  auto retry = t->Submit(spec, options);
  REQUIRE(first.ok());
  REQUIRE(retry.ok());
  CHECK(first->id() == retry->id());
  CHECK(CountStates(t.scheduler.get()).size() == 1);
  v1::JobSpec different = spec;
  different.set_name("other");
  auto conflict = t->Submit(different, options);
  CHECK(conflict.status().code() == StatusCode::kAlreadyExists);
  CHECK(conflict.status().message().find("idempotency_key") != std::string::npos);
}

TEST_CASE("lifecycle: idempotency keys are unique per scope, and reported without it") {
  auto t = OpenCluster(OneNode(8));
  const v1::JobSpec spec = JobSpecBuilder("default").Name("train").Gpus(1).Build();
  SubmitOptions alice{.idempotency_key = "req-1", .idempotency_scope = "team-a"};
  SubmitOptions bob{.idempotency_key = "req-1", .idempotency_scope = "team-b"};
  SubmitOptions unscoped{.idempotency_key = "req-1"};
  auto a = t->Submit(spec, alice);
  REQUIRE(a.ok());
  v1::JobSpec other = spec;
  other.set_name("bob's");
  // The same key in another scope is another job, even with another spec: no 409, no id.
  auto b = t->Submit(other, bob);
  REQUIRE(b.ok());
  CHECK(b->id() != a->id());
  auto u = t->Submit(other, unscoped);
  REQUIRE(u.ok());
  CHECK(u->id() != a->id());
  CHECK(u->id() != b->id());
  // Within a scope the key still deduplicates, and conflicts name only the scope's own job.
  auto retry = t->Submit(spec, alice);
  REQUIRE(retry.ok());
  CHECK(retry->id() == a->id());
  auto conflict = t->Submit(other, alice);
  CHECK(conflict.status().code() == StatusCode::kAlreadyExists);
  CHECK(conflict.status().message() == "idempotency_key: 'req-1' was used by job " +
                                           std::to_string(a->id()) + " with a different spec");
  // Every read reports the key as given.
  CHECK(a->idempotency_key() == "req-1");
  CHECK(retry->idempotency_key() == "req-1");
  CHECK(t->GetJob(a->id())->idempotency_key() == "req-1");
  v1::ListJobsRequest list;
  auto listed = t->ListJobs(list);
  REQUIRE(listed.ok());
  for (const v1::Job& job : listed->jobs()) CHECK(job.idempotency_key() == "req-1");
  // The separator cannot be smuggled in to reach another scope.
  SubmitOptions forged{.idempotency_key = std::string("team-a\x1freq-1")};
  CHECK(t->Submit(spec, forged).status().message() ==
        "idempotency_key: must not contain the byte 0x1f");
  SubmitOptions forged_scope{.idempotency_key = "k",
                             .idempotency_scope = std::string("a\x1f") + "b"};
  CHECK(t->Submit(spec, forged_scope).status().message() ==
        "idempotency_scope: must not contain the byte 0x1f");
}

TEST_CASE("lifecycle: many concurrent asynchronous submits are all acknowledged, in order") {
  auto t = OpenCluster(OneNode(8));
  t->PauseDecisions();
  std::mutex mu;
  std::vector<uint64_t> ids;
  constexpr int kJobs = 500;
  std::atomic<int> done{0};
  for (int i = 0; i < kJobs; ++i) {
    t->SubmitAsync(JobSpecBuilder("default").Gpus(1).Build(), {}, [&](StatusOr<v1::Job> job) {
      REQUIRE(job.ok());
      std::lock_guard<std::mutex> lock(mu);
      ids.push_back(job->id());
      ++done;
    });
  }
  while (done.load() < kJobs) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<uint64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted.front() == 1);
  CHECK(sorted.back() == kJobs);
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  CHECK(t->GetStats().commits() < kJobs);  // submits shared commits.
}

}  // namespace
}  // namespace tessera
