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

}  // namespace
}  // namespace tessera
