// EventSubscription: a chain of WatchEventsAsync long polls, each started from the previous
// one's callback with the cursor moved past what it read. The state is shared with the pending
// poll's callback, so a poll that answers after the subscription object is gone finds it
// cancelled and ends the chain.
#include "tessera/event_subscription.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace tessera {
namespace {

// Long enough that an idle subscription costs a poll now and then; a commit ends a poll early.
constexpr std::chrono::milliseconds kPollWait{30000};
constexpr int kEventsPerPoll = 1000;

}  // namespace

bool EventFilter::Matches(const v1::Event& event) const {
  if (!jobs.empty() && std::find(jobs.begin(), jobs.end(), event.job_id()) == jobs.end()) {
    return false;
  }
  if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), event.kind()) == kinds.end()) {
    return false;
  }
  if (!queue.empty()) {
    const std::string& q = event.queue();
    const bool in_subtree =
        q == queue || (q.size() > queue.size() && q.compare(0, queue.size(), queue) == 0 &&
                       q[queue.size()] == '/');
    if (!in_subtree) return false;
  }
  return true;
}

struct EventSubscription::State {
  Scheduler& scheduler;
  const EventFilter filter;
  const OnEvents on_events;
  const OnEnd on_end;

  std::mutex mu;
  std::condition_variable ended_cv;
  uint64_t after_seq;      // guarded by mu.
  uint64_t watch_id = 0;   // the poll in flight; guarded by mu.
  bool cancelled = false;  // guarded by mu.
  bool ended = false;      // on_end has run; guarded by mu.

  State(Scheduler& s, uint64_t after, EventFilter f, OnEvents events, OnEnd end)
      : scheduler(s),
        filter(std::move(f)),
        on_events(std::move(events)),
        on_end(std::move(end)),
        after_seq(after) {}

  // Starts the next poll (the lock is not held: the callback may run at once on another
  // thread).
  static void Poll(const std::shared_ptr<State>& self, uint64_t after) {
    const uint64_t id = self->scheduler.WatchEventsAsync(
        after, kEventsPerPoll, kPollWait,
        [self](StatusOr<std::vector<v1::Event>> events) { OnPoll(self, std::move(events)); });
    bool cancel = false;
    {
      std::lock_guard<std::mutex> lock(self->mu);
      // Ids grow: when this poll has answered and the next one has stored its id already, that
      // one is the poll in flight.
      self->watch_id = std::max(self->watch_id, id);
      cancel = self->cancelled && !self->ended;
    }
    // Cancel ran before the id was stored, so it could not end this poll: end it here.
    if (cancel) self->scheduler.CancelEventWatch(id);
  }

  static void OnPoll(const std::shared_ptr<State>& self, StatusOr<std::vector<v1::Event>> events) {
    uint64_t next = 0;
    {
      std::unique_lock<std::mutex> lock(self->mu);
      if (self->cancelled) return self->End(lock, Status::Ok());
      if (!events.ok()) return self->End(lock, events.status());
      std::vector<v1::Event> passed;
      for (v1::Event& event : *events) {
        self->after_seq = event.seq();
        if (self->filter.Matches(event)) passed.push_back(std::move(event));
      }
      // Delivered under the lock, so that Cancel waits for a delivery under way.
      if (!passed.empty()) self->on_events(passed);
      if (self->cancelled) return self->End(lock, Status::Ok());
      next = self->after_seq;
    }
    Poll(self, next);
  }

  void End(std::unique_lock<std::mutex>& lock, const Status& why) {
    if (ended) return;
    ended = true;
    if (on_end) on_end(why);
    lock.unlock();
    ended_cv.notify_all();
  }
};

std::unique_ptr<EventSubscription> EventSubscription::Start(Scheduler& scheduler,
                                                            uint64_t after_seq, EventFilter filter,
                                                            OnEvents on_events, OnEnd on_end) {
  auto state = std::make_shared<State>(scheduler, after_seq, std::move(filter),
                                       std::move(on_events), std::move(on_end));
  State::Poll(state, after_seq);
  return std::unique_ptr<EventSubscription>(new EventSubscription(std::move(state)));
}

EventSubscription::~EventSubscription() {
  Cancel();
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->ended_cv.wait(lock, [&] { return state_->ended; });
}

void EventSubscription::Cancel() {
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mu);  // waits for a delivery under way.
    if (state_->cancelled || state_->ended) return;
    state_->cancelled = true;
    id = state_->watch_id;
  }
  // Its callback runs soon, finds the subscription cancelled and ends it.
  state_->scheduler.CancelEventWatch(id);
}

uint64_t EventSubscription::last_seq() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->after_seq;
}

}  // namespace tessera
