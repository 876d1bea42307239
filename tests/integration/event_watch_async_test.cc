// Scheduler::WatchEventsAsync through the public API: many watches open at once without a
// thread each, each finished by the first commit after its cursor, by its wait running out, by
// CancelEventWatch, or by closing the scheduler.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;
using std::chrono::milliseconds;

// What a watch's callback got, waited for by the test.
class WatchResult {
 public:
  std::function<void(StatusOr<std::vector<v1::Event>>)> Callback() {
    return [this](StatusOr<std::vector<v1::Event>> events) {
      std::lock_guard lock(mu_);
      ++calls_;
      result_ = std::move(events);
      thread_ = std::this_thread::get_id();
      cv_.notify_all();
    };
  }
  // Whether the callback ran within `timeout`.
  bool WaitFor(milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return calls_ > 0; });
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  StatusOr<std::vector<v1::Event>> result() {
    std::lock_guard lock(mu_);
    return *result_;
  }
  std::thread::id thread() {
    std::lock_guard lock(mu_);
    return thread_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  std::optional<StatusOr<std::vector<v1::Event>>> result_;
  std::thread::id thread_;
};

TEST_CASE("WatchEventsAsync: a commit finishes every watch waiting before it, at once") {
  auto t = OpenCluster(OneNode(8));
  const uint64_t last = t->GetStats().last_event_seq();
  constexpr int kWatches = 200;  // far more than any thread pool a host would give them.
  std::vector<std::unique_ptr<WatchResult>> results;
  for (int i = 0; i < kWatches; ++i) {
    results.push_back(std::make_unique<WatchResult>());
    t->WatchEventsAsync(last, 10, milliseconds(60000), results.back()->Callback());
  }
  std::this_thread::sleep_for(milliseconds(50));
  for (auto& r : results) CHECK(r->calls() == 0);  // nothing committed yet: all still waiting.

  const auto submitted_at = std::chrono::steady_clock::now();
  const v1::Job job = MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(1).Build());
  for (auto& r : results) {
    REQUIRE(r->WaitFor(milliseconds(5000)));
    auto events = r->result();
    REQUIRE_MESSAGE(events.ok(), events.status().ToString());
    REQUIRE(!events->empty());
    CHECK(events->front().seq() == last + 1);
    CHECK(events->front().job_id() == job.id());
    CHECK(r->calls() == 1);
    CHECK(r->thread() != std::this_thread::get_id());
  }
  CHECK(std::chrono::steady_clock::now() - submitted_at < milliseconds(5000));
}

TEST_CASE("WatchEventsAsync: events committed before the call finish it at once") {
  auto t = OpenCluster(OneNode(8));
  MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(1).Build());
  WatchResult r;
  t->WatchEventsAsync(0, 1, milliseconds(60000), r.Callback());
  REQUIRE(r.WaitFor(milliseconds(5000)));
  REQUIRE(r.result().ok());
  CHECK(r.result()->size() == 1);  // max_events is honoured.
}

TEST_CASE("WatchEventsAsync: a watch with nothing to see ends empty after its wait") {
  auto t = OpenCluster(OneNode(8));
  const uint64_t last = t->GetStats().last_event_seq();
  WatchResult r;
  const auto start = std::chrono::steady_clock::now();
  t->WatchEventsAsync(last, 10, milliseconds(150), r.Callback());
  REQUIRE(r.WaitFor(milliseconds(5000)));
  CHECK(std::chrono::steady_clock::now() - start >= milliseconds(150));
  REQUIRE(r.result().ok());
  CHECK(r.result()->empty());
}

TEST_CASE("WatchEventsAsync: CancelEventWatch ends a watch early; a finished id is ignored") {
  auto t = OpenCluster(OneNode(8));
  const uint64_t last = t->GetStats().last_event_seq();
  WatchResult r;
  const uint64_t id = t->WatchEventsAsync(last, 10, milliseconds(60000), r.Callback());
  t->CancelEventWatch(id);
  REQUIRE(r.WaitFor(milliseconds(5000)));
  REQUIRE(r.result().ok());
  CHECK(r.result()->empty());
  t->CancelEventWatch(id);
  MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(1).Build());
  std::this_thread::sleep_for(milliseconds(50));
  CHECK(r.calls() == 1);
}

TEST_CASE("WatchEventsAsync: bad arguments reach the callback as INVALID_ARGUMENT") {
  auto t = OpenCluster(OneNode(8));
  WatchResult r;
  t->WatchEventsAsync(0, 0, milliseconds(0), r.Callback());
  REQUIRE(r.WaitFor(milliseconds(5000)));
  CHECK(r.result().status().code() == StatusCode::kInvalidArgument);
  CHECK(r.result().status().message().find("max_events") != std::string::npos);
}

TEST_CASE("WatchEventsAsync: closing the scheduler answers the watches still open") {
  auto t = OpenCluster(OneNode(8));
  const uint64_t last = t->GetStats().last_event_seq();
  WatchResult r;
  t->WatchEventsAsync(last, 10, milliseconds(60000), r.Callback());
  t.scheduler.reset();
  CHECK(r.calls() == 1);
}

}  // namespace
}  // namespace tessera
