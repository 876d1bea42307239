// EventWatches: the long polls of Scheduler::WatchEventsAsync, waiting without a thread each.
// Every watch is a record and a timer on one internal thread; a commit that adds events (the
// store's commit listener) or the timer running out finishes it: the events after its cursor are
// read (without waiting) and handed to its callback on that thread. Thousands of watches cost a
// map entry each, not a blocked thread.
//
// Thread safety: Start, Reject, Cancel and OnCommit may be called from any thread; every watch
// is touched only on the internal thread, so callbacks run there, one at a time.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "store/store.h"
#include "tessera/status.h"
#include "tessera/v1/event.pb.h"

namespace tessera {

class EventWatches {
 public:
  using Done = std::function<void(StatusOr<std::vector<v1::Event>>)>;

  // `store` must outlive this; its commit listener is set here and removed in the destructor.
  explicit EventWatches(store::Store& store);
  // Finishes every open watch with the events there are, then stops the thread.
  ~EventWatches();
  EventWatches(const EventWatches&) = delete;
  EventWatches& operator=(const EventWatches&) = delete;

  // Opens a watch for events with seq > `after_seq` (at most `max_events`) that finishes at the
  // first commit of one, or after `wait` with none. Arguments are checked by the caller.
  uint64_t Start(uint64_t after_seq, int max_events, std::chrono::milliseconds wait, Done done);
  // Runs `done` with `error` on the internal thread, as a watch that failed at once.
  void Reject(Status error, Done done);
  // Finishes watch `id` now with the events there are (usually none); ignored when it has
  // finished already.
  void Cancel(uint64_t id);

  // The scheduler is closing: every open watch finishes now, and every watch started later
  // finishes at once, each with what the store answers then (UNAVAILABLE once its event waits
  // are stopped).
  void FinishAll();

  // How many watches are open (for tests and metrics).
  size_t open() const { return open_.load(); }

 private:
  struct Watch {
    uint64_t after_seq;
    int max_events;
    Done done;
    std::unique_ptr<boost::asio::steady_timer> timer;
  };

  void OnCommit(uint64_t last_event_seq);  // writer thread.
  void Finish(uint64_t id);                // internal thread.

  store::Store& store_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::map<uint64_t, Watch> watches_;  // internal thread only.
  bool finishing_all_ = false;         // internal thread only; FinishAll has run.
  std::atomic<uint64_t> next_id_{1};
  std::atomic<size_t> open_{0};
  std::thread thread_;
};

}  // namespace tessera
