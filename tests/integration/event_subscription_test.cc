// EventSubscription: matching events pushed in log order, filtered by job, queue subtree and
// kind; Cancel and Close end it once, with OK and UNAVAILABLE.
#include "tessera/event_subscription.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;
using std::chrono::milliseconds;

// What a subscription delivered, for the test thread to wait on.
class Inbox {
 public:
  EventSubscription::OnEvents Events() {
    return [this](const std::vector<v1::Event>& events) {
      std::lock_guard<std::mutex> lock(mu_);
      for (const v1::Event& e : events) events_.push_back(e);
      ++batches_;
      cv_.notify_all();
    };
  }
  EventSubscription::OnEnd End() {
    return [this](const Status& why) {
      std::lock_guard<std::mutex> lock(mu_);
      ++ends_;
      end_ = why;
      cv_.notify_all();
    };
  }
  // Waits until an event of `job` reaches `state`.
  bool WaitForState(uint64_t job, v1::JobState state, milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] {
      for (const v1::Event& e : events_) {
        if (e.job_id() == job && e.to_state() == state) return true;
      }
      return false;
    });
  }
  bool WaitForEnd(milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return ends_ > 0; });
  }
  std::vector<v1::Event> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  int ends() {
    std::lock_guard<std::mutex> lock(mu_);
    return ends_;
  }
  Status end() {
    std::lock_guard<std::mutex> lock(mu_);
    return end_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1::Event> events_;
  int batches_ = 0;
  int ends_ = 0;
  Status end_;
};

constexpr milliseconds kWithin{10000};

v1::Job RunShortJob(TestScheduler& t, const std::string& queue) {
  v1::Job job = MustSubmit(t.scheduler.get(),
                           JobSpecBuilder(queue).Gpus(1).SimulatedDurationMs(1000).Build());
  t->WaitIdle();
  t.clock->AdvanceUs(2'000'000);
  t->WaitIdle();
  return job;
}

TEST_CASE("event subscription: a queue subtree and a kind, in log order") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("org"));
  CreateQueue(s, QueueSpec("org/a"));
  CreateQueue(s, QueueSpec("organic"));
  Inbox inbox;
  EventFilter filter;
  filter.queue = "org";
  filter.kinds = {v1::JOB_STATE_CHANGED};
  auto subscription = EventSubscription::Start(*s, 0, filter, inbox.Events(), inbox.End());
  const v1::Job outside = RunShortJob(t, "organic");
  const v1::Job inside = RunShortJob(t, "org/a");
  REQUIRE(inbox.WaitForState(inside.id(), v1::SUCCEEDED, kWithin));
  uint64_t previous = 0;
  for (const v1::Event& e : inbox.events()) {
    CHECK(e.queue() == "org/a");
    CHECK(e.kind() == v1::JOB_STATE_CHANGED);
    CHECK(e.job_id() == inside.id());
    CHECK(e.seq() > previous);
    previous = e.seq();
  }
  CHECK(subscription->last_seq() >= previous);
  CHECK(outside.id() != inside.id());
  subscription->Cancel();
  REQUIRE(inbox.WaitForEnd(kWithin));
  CHECK(inbox.end().ok());
  // Nothing after Cancel returned, and on_end once.
  const size_t delivered = inbox.events().size();
  RunShortJob(t, "org/a");
  subscription.reset();
  CHECK(inbox.events().size() == delivered);
  CHECK(inbox.ends() == 1);
}

TEST_CASE("event subscription: one job's events from a given seq; Close ends it UNAVAILABLE") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  const v1::Job earlier = RunShortJob(t, "default");
  const uint64_t after = s->WatchEvents(0, 10000, milliseconds(0))->back().seq();
  v1::Job watched =
      MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1000).Build());
  Inbox inbox;
  EventFilter filter;
  filter.jobs = {watched.id(), earlier.id()};
  auto subscription = EventSubscription::Start(*s, after, filter, inbox.Events(), inbox.End());
  t->WaitIdle();
  t.clock->AdvanceUs(2'000'000);
  t->WaitIdle();
  REQUIRE(inbox.WaitForState(watched.id(), v1::SUCCEEDED, kWithin));
  for (const v1::Event& e : inbox.events()) {
    CHECK(e.job_id() == watched.id());  // the earlier job's events came before `after`.
    CHECK(e.seq() > after);
  }
  t.scheduler->Close();
  REQUIRE(inbox.WaitForEnd(kWithin));
  CHECK(inbox.end().code() == StatusCode::kUnavailable);
  subscription.reset();
  CHECK(inbox.ends() == 1);
}

TEST_CASE("event subscription: the filter's parts") {
  v1::Event e;
  e.set_job_id(7);
  e.set_queue("org/a");
  e.set_kind(v1::JOB_STATE_CHANGED);
  CHECK(EventFilter().Matches(e));
  EventFilter by_queue;
  by_queue.queue = "org";
  CHECK(by_queue.Matches(e));
  by_queue.queue = "org/a";
  CHECK(by_queue.Matches(e));
  by_queue.queue = "or";
  CHECK_FALSE(by_queue.Matches(e));
  e.set_queue("organic");
  by_queue.queue = "org";
  CHECK_FALSE(by_queue.Matches(e));
  EventFilter by_job;
  by_job.jobs = {8};
  CHECK_FALSE(by_job.Matches(e));
  EventFilter by_kind;
  by_kind.kinds = {v1::NODE_UPDATED};
  CHECK_FALSE(by_kind.Matches(e));
}

}  // namespace
}  // namespace tessera
