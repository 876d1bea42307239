// The bound on pending jobs per queue (Options::max_pending_jobs_per_queue,
// QueueSpec::max_pending_jobs): a submit beyond it is refused with RESOURCE_EXHAUSTED naming the
// queue and the limit, and counts only jobs that wait, across restarts.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr const char* kFull =
    "queue 'default' holds 3 pending jobs, its limit (max_pending_jobs); retry when some have "
    "started";

TEST_CASE("pending limit: a queue holds at most max_pending_jobs_per_queue waiting jobs") {
  ScratchDir dir;
  Options options;
  options.store.path = dir.File("state.db");
  options.simulated_cluster = OneNode(4);
  options.max_pending_jobs_per_queue = 3;
  uint64_t waiting = 0;
  {
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    // A running job does not count; three that wait behind it do.
    MustSubmit(s, JobSpecBuilder("default").Gpus(4).Build());
    t->WaitIdle();
    SubmitOptions keyed;
    keyed.idempotency_key = "w0";
    auto first = s->Submit(JobSpecBuilder("default").Gpus(4).Build(), keyed);
    REQUIRE(first.ok());
    waiting = first->id();
    MustSubmit(s, JobSpecBuilder("default").Gpus(4).Build());
    MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build());
    auto refused = s->Submit(JobSpecBuilder("default").Gpus(1).Build());
    CHECK(refused.status().code() == StatusCode::kResourceExhausted);
    CHECK(refused.status().message() == kFull);
    // A retried submit of a job that exists is no new job: it is answered, not refused.
    auto retried = s->Submit(JobSpecBuilder("default").Gpus(4).Build(), keyed);
    REQUIRE(retried.ok());
    CHECK(retried->id() == waiting);
    CHECK(CountStates(s)[v1::PENDING] == 3);
  }
  // Counted from the store: the same after a restart, where the running job was requeued and
  // now waits too.
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  t->WaitIdle();
  CHECK(s->Submit(JobSpecBuilder("default").Gpus(1).Build()).status().message() == kFull);
  // A cancelled job no longer waits: there is room for one more.
  CHECK(CountStates(s)[v1::PENDING] == 3);
  REQUIRE(s->Cancel(waiting).ok());
  t->WaitIdle();
  auto room = s->Submit(JobSpecBuilder("default").Gpus(4).Build());
  CHECK_MESSAGE(room.ok(), room.status().ToString());
  CHECK(s->Submit(JobSpecBuilder("default").Gpus(4).Build()).status().code() ==
        StatusCode::kResourceExhausted);
}

TEST_CASE("pending limit: a queue's max_pending_jobs takes precedence over the default") {
  Options options;
  options.max_pending_jobs_per_queue = 100;
  auto t = OpenCluster(OneNode(1), options);
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec strict = QueueSpec("strict");
  strict.set_max_pending_jobs(1);
  CreateQueue(s, strict);
  // Infeasible jobs wait too: on a 1-GPU node, 2 GPUs never fit.
  MustSubmit(s, JobSpecBuilder("strict").Gpus(2).Build());
  auto refused = s->Submit(JobSpecBuilder("strict").Gpus(2).Build());
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK(refused.status().message() ==
        "queue 'strict' holds 1 pending jobs, its limit (max_pending_jobs); retry when some "
        "have started");
  MustSubmit(s, JobSpecBuilder("default").Gpus(2).Build());
  MustSubmit(s, JobSpecBuilder("default").Gpus(2).Build());

  v1::QueueSpec bad = QueueSpec("bad");
  bad.set_max_pending_jobs(-1);
  const Status invalid = s->CreateQueue(bad);
  CHECK(invalid.code() == StatusCode::kInvalidArgument);
  CHECK(invalid.message() == "max_pending_jobs: must be >= 0, got -1");
}

TEST_CASE("pending limit: a parent queue's max_pending_jobs bounds all its leaves together") {
  auto t = OpenCluster(OneNode(1));
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec org = QueueSpec("org");
  org.set_max_pending_jobs(2);
  CreateQueue(s, org);
  CreateQueue(s, QueueSpec("org/a"));
  CreateQueue(s, QueueSpec("org/b"));
  CreateQueue(s, QueueSpec("other"));
  // 2 GPUs never fit on a 1-GPU node: these wait.
  MustSubmit(s, JobSpecBuilder("org/a").Gpus(2).Build());
  MustSubmit(s, JobSpecBuilder("org/b").Gpus(2).Build());
  for (const char* leaf : {"org/a", "org/b"}) {
    auto refused = s->Submit(JobSpecBuilder(leaf).Gpus(2).Build());
    CHECK(refused.status().code() == StatusCode::kResourceExhausted);
    CHECK(refused.status().message() ==
          "queue 'org' holds 2 pending jobs in its subtree, its limit (max_pending_jobs); retry "
          "when some have started");
  }
  // A queue outside the subtree, even one whose name starts alike, is not counted.
  MustSubmit(s, JobSpecBuilder("other").Gpus(2).Build());
  CreateQueue(s, QueueSpec("org-2"));
  MustSubmit(s, JobSpecBuilder("org-2").Gpus(2).Build());
  // A running job does not wait: once one leaves the line there is room again.
  auto jobs = s->ListJobs({});
  REQUIRE(jobs.ok());
  REQUIRE(s->Cancel(jobs->jobs(0).id()).ok());
  t->WaitIdle();
  auto room = s->Submit(JobSpecBuilder("org/b").GpuFraction(500).Build());
  CHECK_MESSAGE(room.ok(), room.status().ToString());
}

}  // namespace
}  // namespace tessera
