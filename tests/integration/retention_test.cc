// Scheduler::GetJobByIdempotencyKey, and Options::retention: finished jobs past a time or count
// bound are deleted with their events, live jobs and their events never, and what was deleted
// stays deleted after a reopen.
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecondUs = 1'000'000;

Options StoreAt(const std::string& path) {
  Options options;
  options.store.path = path;
  options.simulated_cluster = OneNode(4);
  return options;
}

StatusOr<v1::Job> SubmitWithKey(Scheduler* s, const v1::JobSpec& spec, const std::string& key,
                                const std::string& scope = "") {
  SubmitOptions keys;
  keys.idempotency_key = key;
  keys.idempotency_scope = scope;
  return s->Submit(spec, keys);
}

// Every event of the log, oldest first.
std::vector<v1::Event> AllEvents(Scheduler* s) {
  std::vector<v1::Event> all;
  uint64_t after = 0;
  while (true) {
    auto page = s->WatchEvents(after, 1000, std::chrono::milliseconds(0));
    REQUIRE_MESSAGE(page.ok(), page.status().ToString());
    if (page->empty()) return all;
    after = page->back().seq();
    for (v1::Event& e : *page) all.push_back(std::move(e));
  }
}

int EventsOf(const std::vector<v1::Event>& events, uint64_t job) {
  int n = 0;
  for (const v1::Event& e : events) n += e.job_id() == job ? 1 : 0;
  return n;
}

bool Exists(Scheduler* s, uint64_t job) {
  auto found = s->GetJob(job);
  if (found.ok()) return true;
  REQUIRE_MESSAGE(found.status().code() == StatusCode::kNotFound, found.status().ToString());
  return false;
}

// Waits (in real time: the sweeper runs on its own thread) until `job` is gone.
bool GoneWithin(Scheduler* s, uint64_t job, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!Exists(s, job)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST_CASE("idempotency lookup: the job a key made, within its scope only") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  auto made = SubmitWithKey(s, JobSpecBuilder("default").Build(), "order-17", "tenant-a");
  REQUIRE_MESSAGE(made.ok(), made.status().ToString());

  auto found = s->GetJobByIdempotencyKey("order-17", "tenant-a");
  REQUIRE_MESSAGE(found.ok(), found.status().ToString());
  CHECK(found->id() == made->id());
  CHECK(found->idempotency_key() == "order-17");  // without its scope, as GetJob shows it.

  auto other_scope = s->GetJobByIdempotencyKey("order-17", "tenant-b");
  CHECK(other_scope.status().code() == StatusCode::kNotFound);
  CHECK(other_scope.status().message() == "idempotency_key: no job has the key 'order-17'");
  CHECK(s->GetJobByIdempotencyKey("order-17").status().code() == StatusCode::kNotFound);
  CHECK(s->GetJobByIdempotencyKey("order-18", "tenant-a").status().code() == StatusCode::kNotFound);

  auto empty = s->GetJobByIdempotencyKey("", "tenant-a");
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);
  CHECK(empty.status().message() == "idempotency_key: required");
  auto separator = s->GetJobByIdempotencyKey(
      "a\x1f"
      "b");
  CHECK(separator.status().code() == StatusCode::kInvalidArgument);
  CHECK(separator.status().message() == "idempotency_key: must not contain the byte 0x1f");
}

TEST_CASE("retention: bad bounds are refused, naming the field") {
  Options options;
  options.retention.finished_job_ttl = std::chrono::seconds(-1);
  auto refused = Scheduler::Open(options);
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message() == "retention.finished_job_ttl: must be >= 0 s, got -1");
  options = Options();
  options.retention.sweep_batch = 0;
  CHECK(Scheduler::Open(options).status().message() ==
        "retention.sweep_batch: must be in 1..100000, got 0");
}

TEST_CASE("retention: finished jobs past the time bound go with their events; live ones stay") {
  ScratchDir dir;
  Options options = StoreAt(dir.File("state.db"));
  options.retention.finished_job_ttl = std::chrono::seconds(60);
  options.retention.sweep_interval = std::chrono::milliseconds(5);
  uint64_t finished = 0;
  uint64_t running = 0;
  uint64_t pending = 0;
  uint64_t last_seq = 0;
  {
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    auto short_job = SubmitWithKey(
        s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1000).Build(), "short");
    REQUIRE(short_job.ok());
    finished = short_job->id();
    running =
        MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(36'000'000).Build())
            .id();
    pending = MustSubmit(s, JobSpecBuilder("default").Gpus(4).Build()).id();
    t->WaitIdle();
    t.clock->AdvanceUs(2 * kSecondUs);
    t->WaitIdle();
    REQUIRE(MustGet(s, finished).status().state() == v1::SUCCEEDED);
    REQUIRE(MustGet(s, running).status().state() == v1::RUNNING);
    REQUIRE(MustGet(s, pending).status().state() == v1::PENDING);

    // Finished, but not for 60 s yet: several sweeps leave it alone.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(Exists(s, finished));
    CHECK(EventsOf(AllEvents(s), finished) > 0);

    t.clock->AdvanceUs(61 * kSecondUs);  // past 60 s after it finished (at the 2 s advance).
    t->WaitIdle();
    REQUIRE(GoneWithin(s, finished, std::chrono::milliseconds(10000)));
    const std::vector<v1::Event> events = AllEvents(s);
    CHECK(EventsOf(events, finished) == 0);
    CHECK(EventsOf(events, running) > 0);
    CHECK(EventsOf(events, pending) > 0);
    CHECK(Exists(s, running));
    CHECK(Exists(s, pending));
    CHECK(s->GetJobByIdempotencyKey("short").status().code() == StatusCode::kNotFound);
    // The key is free again.
    auto again = SubmitWithKey(s, JobSpecBuilder("default").Build(), "short");
    REQUIRE(again.ok());
    CHECK(again->id() > pending);
    last_seq = AllEvents(s).back().seq();
  }

  // Reopened without retention: what was deleted stays deleted, the rest is there, and the
  // event sequence goes on after the last event.
  options.retention = RetentionOptions();
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  CHECK(!Exists(s, finished));
  CHECK(Exists(s, running));
  CHECK(Exists(s, pending));
  const std::vector<v1::Event> events = AllEvents(s);
  CHECK(EventsOf(events, finished) == 0);
  CHECK(EventsOf(events, running) > 0);
  // Recovery writes events of its own (the simulated tasks did not survive): the first new one
  // follows the last before the close.
  REQUIRE(s->CreateQueue(QueueSpec("more")).ok());
  auto next = s->WatchEvents(last_seq, 1, std::chrono::milliseconds(0));
  REQUIRE(next.ok());
  REQUIRE(next->size() == 1);
  CHECK(next->front().seq() == last_seq + 1);
}

TEST_CASE("retention: the sequence goes on after the last event even when it was deleted") {
  ScratchDir dir;
  Options options = StoreAt(dir.File("state.db"));
  options.retention.finished_job_ttl = std::chrono::seconds(10);
  options.retention.sweep_interval = std::chrono::milliseconds(5);
  uint64_t last_seq = 0;
  {
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    const uint64_t job =
        MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1000).Build()).id();
    t->WaitIdle();
    t.clock->AdvanceUs(2 * kSecondUs);
    t->WaitIdle();
    const std::vector<v1::Event> before = AllEvents(s);
    REQUIRE(before.back().job_id() == job);  // the job's end is the log's last event.
    last_seq = before.back().seq();
    t.clock->AdvanceUs(11 * kSecondUs);
    REQUIRE(GoneWithin(s, job, std::chrono::milliseconds(10000)));
    const std::vector<v1::Event> after = AllEvents(s);
    CHECK(EventsOf(after, job) == 0);
    CHECK(after.size() == 1);  // the default queue's creation.
  }
  options.retention = RetentionOptions();
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  REQUIRE(s->CreateQueue(QueueSpec("more")).ok());
  CHECK(AllEvents(s).back().seq() == last_seq + 1);
}

TEST_CASE("retention: the count bound keeps the most recently finished jobs, and every live one") {
  ScratchDir dir;
  Options options = StoreAt(dir.File("state.db"));
  options.retention.max_finished_jobs = 2;
  options.retention.sweep_interval = std::chrono::milliseconds(5);
  options.retention.sweep_batch = 1;  // several batches per sweep.
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const uint64_t live =
      MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(36'000'000).Build()).id();
  std::vector<uint64_t> done;
  for (int i = 0; i < 5; ++i) {
    done.push_back(
        MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1000).Build()).id());
    t->WaitIdle();
    t.clock->AdvanceUs(2 * kSecondUs);
    t->WaitIdle();
  }
  for (int i = 0; i < 3; ++i) {
    CHECK_MESSAGE(GoneWithin(s, done[i], std::chrono::milliseconds(10000)), done[i]);
  }
  // The two latest stay (checked after the sweeps have had time to go too far).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(Exists(s, done[3]));
  CHECK(Exists(s, done[4]));
  CHECK(MustGet(s, live).status().state() == v1::RUNNING);
  CHECK(EventsOf(AllEvents(s), live) > 0);
  CHECK(CountStates(s)[v1::SUCCEEDED] == 2);
}

}  // namespace
}  // namespace tessera
