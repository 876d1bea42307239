#include "api/event_watches.h"

#include <pthread.h>

#include <boost/asio/post.hpp>
#include <utility>

namespace tessera {

EventWatches::EventWatches(store::Store& store)
    : store_(store), work_(boost::asio::make_work_guard(io_)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "tessera-watch");
    io_.run();
  });
  store_.SetCommitListener([this](uint64_t last_event_seq) { OnCommit(last_event_seq); });
}

EventWatches::~EventWatches() {
  store_.SetCommitListener(nullptr);
  boost::asio::post(io_, [this] {
    while (!watches_.empty()) Finish(watches_.begin()->first);
  });
  work_.reset();
  thread_.join();
}

uint64_t EventWatches::Start(uint64_t after_seq, int max_events, std::chrono::milliseconds wait,
                             Done done) {
  const uint64_t id = next_id_.fetch_add(1);
  open_.fetch_add(1);
  boost::asio::post(io_, [this, id, after_seq, max_events, wait, done = std::move(done)]() mutable {
    Watch& watch = watches_[id];
    watch.after_seq = after_seq;
    watch.max_events = max_events;
    watch.done = std::move(done);
    // Events committed before the watch reached this thread finish it at once.
    if (finishing_all_ || store_.LastEventSeq() > after_seq || wait.count() <= 0) {
      return Finish(id);
    }
    watch.timer = std::make_unique<boost::asio::steady_timer>(io_, wait);
    watch.timer->async_wait([this, id](const boost::system::error_code& ec) {
      if (!ec) Finish(id);
    });
  });
  return id;
}

void EventWatches::FinishAll() {
  boost::asio::post(io_, [this] {
    finishing_all_ = true;
    while (!watches_.empty()) Finish(watches_.begin()->first);
  });
}

void EventWatches::Reject(Status error, Done done) {
  boost::asio::post(io_, [error = std::move(error), done = std::move(done)] { done(error); });
}

void EventWatches::Cancel(uint64_t id) {
  boost::asio::post(io_, [this, id] { Finish(id); });
}

void EventWatches::OnCommit(uint64_t last_event_seq) {
  boost::asio::post(io_, [this, last_event_seq] {
    std::vector<uint64_t> due;
    for (const auto& [id, watch] : watches_) {
      if (watch.after_seq < last_event_seq) due.push_back(id);
    }
    for (uint64_t id : due) Finish(id);
  });
}

void EventWatches::Finish(uint64_t id) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  Watch watch = std::move(it->second);
  watches_.erase(it);
  open_.fetch_sub(1);
  if (watch.timer) watch.timer->cancel();
  watch.done(store_.ReadEvents(watch.after_seq, watch.max_events, std::chrono::milliseconds(0)));
}

}  // namespace tessera
