#include "router.h"

#include <algorithm>
#include <chrono>

#include "tenant_view.h"
#include "tessera/v1/api.pb.h"

namespace tesserad {

namespace {

// Longest an event long poll waits, whatever the client asks.
constexpr std::chrono::milliseconds kMaxEventWait{60000};

}  // namespace

HttpResponse Router::WatchEvents(const Query& query) {
  auto after = QueryInt<uint64_t>(query, "after_seq", 0);
  if (!after.ok()) return ErrorFor(request_, after.status());
  auto max = QueryInt<int>(query, "max", 100);
  if (!max.ok()) return ErrorFor(request_, max.status());
  auto wait_ms = QueryInt<int64_t>(query, "wait_ms", 0);
  if (!wait_ms.ok()) return ErrorFor(request_, wait_ms.status());
  if (*max < 1 || *max > 1000) {
    return ErrorFor(request_, tessera::InvalidArgumentError("max: must be in 1..1000, got " +
                                                            std::to_string(*max)));
  }
  if (*wait_ms < 0) {
    return ErrorFor(request_, tessera::InvalidArgumentError("wait_ms: must be >= 0"));
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::min(std::chrono::milliseconds(*wait_ms), kMaxEventWait);
  tessera::v1::WatchEventsResponse response;
  uint64_t cursor = *after;
  // Waits in short slices so that SIGTERM need not wait for a long poll to run out.
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto slice = std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(200));
    auto events = scheduler_.WatchEvents(cursor, *max, slice);
    if (!events.ok()) return ErrorFor(request_, events.status());
    for (auto& event : *events) {
      cursor = event.seq();
      if (principal_.admin) {
        *response.add_events() = std::move(event);
      } else if (!event.queue().empty() && principal_.Owns(event.queue())) {
        event.set_reason(WithoutOtherJobIds(event.reason(), event.job_id()));
        *response.add_events() = std::move(event);
      }
    }
    if (response.events_size() > 0 || Clock::now() >= deadline || stopping_.load()) break;
  }
  // The cursor moves past other tenants' events too, so that a tenant whose window held only
  // those does not ask for them again.
  response.set_next_after_seq(cursor);
  return Reply(request_, response);
}

}  // namespace tesserad
