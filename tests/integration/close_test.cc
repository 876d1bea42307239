// Scheduler::Close: shutting down while other threads are inside calls. A watcher blocked in a
// long WatchEvents must get out at once with UNAVAILABLE (not wait out its wait and read an
// empty, successful answer), open asynchronous watches are answered, and every call after Close
// is UNAVAILABLE until the scheduler is destroyed.
#include <chrono>
#include <future>
#include <thread>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr char kShuttingDown[] = "scheduler is shutting down";

TEST_CASE(
    "Close: a blocked WatchEvents returns UNAVAILABLE at once, and so does every later call") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build());
  t->WaitIdle();
  const uint64_t last = s->GetStats().last_event_seq();

  auto blocked = std::async(std::launch::async, [s, last] {
    const auto start = steady_clock::now();
    StatusOr<std::vector<v1::Event>> events = s->WatchEvents(last, 10, milliseconds(20'000));
    return std::make_pair(std::move(events), steady_clock::now() - start);
  });
  std::promise<Status> async_answer;
  s->WatchEventsAsync(last, 10, milliseconds(20'000), [&](StatusOr<std::vector<v1::Event>> events) {
    async_answer.set_value(events.status());
  });
  std::this_thread::sleep_for(milliseconds(100));  // both are waiting now.

  const auto close_start = steady_clock::now();
  s->Close();
  CHECK(steady_clock::now() - close_start < milliseconds(5000));
  auto [events, waited] = blocked.get();
  CHECK(waited < milliseconds(5000));
  REQUIRE_FALSE(events.ok());
  CHECK(events.status().code() == StatusCode::kUnavailable);
  CHECK(events.status().message() == kShuttingDown);
  const Status async_status = async_answer.get_future().get();
  CHECK(async_status.code() == StatusCode::kUnavailable);

  // Every call after Close.
  CHECK(s->GetJob(1).status().code() == StatusCode::kUnavailable);
  CHECK(s->Submit(JobSpecBuilder("default").Gpus(1).Build()).status().code() ==
        StatusCode::kUnavailable);
  CHECK(s->WatchEvents(0, 10, milliseconds(0)).status().message() == kShuttingDown);
  std::promise<Status> late;
  s->WatchEventsAsync(0, 10, milliseconds(20'000),
                      [&](StatusOr<std::vector<v1::Event>> e) { late.set_value(e.status()); });
  CHECK(late.get_future().get().code() == StatusCode::kUnavailable);
  s->Close();  // again: nothing happens.
  t.scheduler.reset();
}

TEST_CASE("Close: what was acknowledged before it is in the store after reopening") {
  ScratchDir dir;
  Options options;
  options.store.path = dir.File("store.db");
  options.simulated_cluster = OneNode(8);
  uint64_t id = 0;
  {
    auto t = Open(options);
    id = MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(1).Build()).id();
    t->Close();
  }
  auto reopened = Open(options);
  CHECK(MustGet(reopened.scheduler.get(), id).id() == id);
}

}  // namespace
}  // namespace tessera
