// GET /v1/events: a long poll that holds no thread while it waits. An EventPoll asks the
// library for the events after its cursor (Scheduler::WatchEventsAsync); a window that holds
// only other tenants' events moves the cursor and asks again, until the tenant has events or
// wait_ms has passed. The client going away (or SIGTERM) cancels it.
#include <algorithm>
#include <chrono>
#include <mutex>

#include "router.h"
#include "tenant_view.h"
#include "tessera/v1/api.pb.h"

namespace tesserad {

namespace {

// Longest an event long poll waits, whatever the client asks.
constexpr std::chrono::milliseconds kMaxEventWait{60000};

using Clock = std::chrono::steady_clock;

class EventPoll : public std::enable_shared_from_this<EventPoll> {
 public:
  EventPoll(tessera::Scheduler& scheduler, const std::atomic<bool>& stopping,
            std::shared_ptr<const HttpRequest> request, Principal principal, uint64_t after_seq,
            int max, Clock::time_point deadline, std::shared_ptr<void> slot, Responder respond)
      : scheduler_(scheduler),
        stopping_(stopping),
        request_(std::move(request)),
        principal_(std::move(principal)),
        cursor_(after_seq),
        max_(max),
        deadline_(deadline),
        slot_(std::move(slot)),
        respond_(std::move(respond)) {}

  // Asks the library for the next window of events.
  void Watch() {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    if (stopping_.load()) left = std::chrono::milliseconds(0);
    std::lock_guard lock(mu_);
    if (cancelled_) left = std::chrono::milliseconds(0);
    watch_id_ = scheduler_.WatchEventsAsync(
        cursor_, max_, std::max(left, std::chrono::milliseconds(0)),
        [self = shared_from_this()](tessera::StatusOr<std::vector<tessera::v1::Event>> events) {
          self->OnEvents(std::move(events));
        });
  }

  // Ends the wait now; the client gets what there is (usually no events).
  void Cancel() {
    uint64_t id = 0;
    {
      std::lock_guard lock(mu_);
      cancelled_ = true;
      id = watch_id_;
    }
    if (id != 0) scheduler_.CancelEventWatch(id);
  }

 private:
  // On the library's watch thread: must not block.
  void OnEvents(tessera::StatusOr<std::vector<tessera::v1::Event>> events) {
    if (!events.ok()) {
      return respond_([request = request_, status = events.status()]() -> ApiResponse {
        return ErrorFor(*request, status);
      });
    }
    for (auto& event : *events) {
      cursor_ = event.seq();
      if (principal_.admin) {
        *response_.add_events() = std::move(event);
      } else if (!event.queue().empty() && principal_.Owns(event.queue())) {
        event.set_reason(WithoutOtherJobIds(event.reason(), event.job_id()));
        *response_.add_events() = std::move(event);
      }
    }
    bool cancelled = false;
    {
      std::lock_guard lock(mu_);
      cancelled = cancelled_;
    }
    if (response_.events_size() == 0 && !cancelled && !stopping_.load() &&
        Clock::now() < deadline_) {
      return Watch();
    }
    // The cursor moves past other tenants' events too, so that a tenant whose window held only
    // those does not ask for them again.
    response_.set_next_after_seq(cursor_);
    respond_([request = request_, response = std::move(response_)]() -> ApiResponse {
      return Reply(*request, response);
    });
  }

  tessera::Scheduler& scheduler_;
  const std::atomic<bool>& stopping_;
  const std::shared_ptr<const HttpRequest> request_;
  const Principal principal_;
  uint64_t cursor_;  // watch callbacks only, which never overlap.
  const int max_;
  const Clock::time_point deadline_;
  const std::shared_ptr<void> slot_;  // the token's long poll slot, given back with the poll.
  const Responder respond_;
  tessera::v1::WatchEventsResponse response_;
  std::mutex mu_;
  bool cancelled_ = false;  // guarded by mu_.
  uint64_t watch_id_ = 0;   // guarded by mu_.
};

}  // namespace

Canceller Router::WatchEventsAsync(std::shared_ptr<const HttpRequest> request, const Query& query,
                                   LongPollSlots& slots, Responder respond) {
  const auto refuse = [&](HttpResponse response) -> Canceller {
    respond([response = std::move(response)] { return ApiResponse(response); });
    return nullptr;
  };
  auto after = QueryInt<uint64_t>(query, "after_seq", 0);
  if (!after.ok()) return refuse(ErrorFor(request_, after.status()));
  auto max = QueryInt<int>(query, "max", 100);
  if (!max.ok()) return refuse(ErrorFor(request_, max.status()));
  auto wait_ms = QueryInt<int64_t>(query, "wait_ms", 0);
  if (!wait_ms.ok()) return refuse(ErrorFor(request_, wait_ms.status()));
  if (*max < 1 || *max > 1000) {
    return refuse(ErrorFor(request_, tessera::InvalidFieldError("max", "must be in 1..1000, got " +
                                                                           std::to_string(*max))));
  }
  if (*wait_ms < 0) {
    return refuse(ErrorFor(request_, tessera::InvalidFieldError("wait_ms", "must be >= 0")));
  }
  // Only polls that wait count against the token's bound; a plain read is answered at once.
  std::shared_ptr<void> slot;
  if (*wait_ms > 0) {
    slot = slots.TryAcquire(principal_.name);
    if (slot == nullptr) {
      HttpResponse response = ErrorResponse(
          429, "TOO_MANY_REQUESTS",
          "token \"" + principal_.name + "\" already holds " +
              std::to_string(slots.max_per_token()) +
              " event long polls (server.max_long_polls_per_token); retry when one returns");
      response.version(request_.version());
      response.keep_alive(request_.keep_alive());
      response.set(boost::beast::http::field::retry_after, "1");
      return refuse(std::move(response));
    }
  }
  const auto deadline = Clock::now() + std::min(std::chrono::milliseconds(*wait_ms), kMaxEventWait);
  auto poll =
      std::make_shared<EventPoll>(scheduler_, stopping_, std::move(request), principal_, *after,
                                  *max, deadline, std::move(slot), std::move(respond));
  poll->Watch();
  return [weak = std::weak_ptr<EventPoll>(poll)] {
    if (auto poll = weak.lock()) poll->Cancel();
  };
}

}  // namespace tesserad
