// EventSubscription: events pushed to a callback instead of polled. A subscription follows the
// event log from a sequence number, hands the events that pass its filter (some jobs, a queue
// and its subtree, some kinds) to `on_events` in log order, and goes on until it is cancelled
// or the scheduler closes; then `on_end` runs once with the reason.
//
//   tessera::EventFilter filter;
//   filter.queue = "physics";                          // physics and every queue under it
//   filter.kinds = {tessera::v1::JOB_STATE_CHANGED};
//   auto subscription = tessera::EventSubscription::Start(
//       *scheduler, /*after_seq=*/0, filter,
//       [&](const std::vector<tessera::v1::Event>& events) { inbox.Push(events); },
//       [&](const tessera::Status& why) { inbox.Close(why); });
//
// It is built on Scheduler::WatchEventsAsync and holds no thread of its own: each batch of
// committed events reaches it as soon as it is committed. To resume after a restart, start again
// from the last seq the host processed (last_seq() is the last one the subscription read, passed
// or not).
//
// Thread safety: the callbacks run on a thread of the library, one at a time for a
// subscription, never two at once. They must return quickly and must not call the scheduler or
// this subscription (hand the events to a thread of your own). Cancel, last_seq and the
// destructor may be called from any other thread; Cancel and the destructor wait for a callback
// under way, so the callbacks' captures may be freed once they return.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/scheduler.h"
#include "tessera/status.h"
#include "tessera/v1/event.pb.h"

namespace tessera {

// Which events a subscription passes on: all of its non-empty parts must match.
struct EventFilter {
  // Events of these jobs only; empty: any job's events, and those of no job (queues, nodes).
  std::vector<JobId> jobs;
  // Events of this queue and its subtree ("org" passes org, org/a and org/a/b, not organic);
  // empty: any queue. Node events name no queue, so a queue filter leaves them out.
  std::string queue;
  // Events of these kinds only; empty: every kind.
  std::vector<v1::EventKind> kinds;

  TESSERA_EXPORT bool Matches(const v1::Event& event) const;
};

class TESSERA_EXPORT EventSubscription {
 public:
  using OnEvents = std::function<void(const std::vector<v1::Event>& events)>;
  using OnEnd = std::function<void(const Status& why)>;

  // Starts following the events with seq > `after_seq`. `on_events` gets each batch of matching
  // events (never an empty one); `on_end` runs once, after the last `on_events`: with OK after
  // Cancel, with UNAVAILABLE ("scheduler is shutting down") once the scheduler closes, or with
  // the error a read of the log failed with. `scheduler` must outlive the subscription or be
  // closed before it is destroyed.
  static std::unique_ptr<EventSubscription> Start(Scheduler& scheduler, uint64_t after_seq,
                                                  EventFilter filter, OnEvents on_events,
                                                  OnEnd on_end);

  // Cancels (see Cancel) and waits for on_end.
  ~EventSubscription();
  EventSubscription(const EventSubscription&) = delete;
  EventSubscription& operator=(const EventSubscription&) = delete;

  // Stops delivering: no on_events starts after Cancel returns, and on_end runs (with OK) soon,
  // unless the subscription had ended already. Idempotent.
  void Cancel();

  // The seq of the last event read, whether the filter passed it or not.
  uint64_t last_seq() const;

 private:
  struct State;
  explicit EventSubscription(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace tessera
