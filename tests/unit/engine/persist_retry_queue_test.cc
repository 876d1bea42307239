// PersistRetryQueue: refused updates are kept in order with everything queued behind them, one
// retry is armed per degraded spell, and requests about a held job get the store's error.
#include "engine/persist_retry_queue.h"

#include <doctest/doctest.h>

namespace tessera {
namespace {

JobUpdate UpdateOf(uint64_t job) {
  JobUpdate update;
  update.job_id = job;
  return update;
}

TEST_CASE("persist retry queue: one retry armed per spell, everything kept in order") {
  PersistRetryQueue queue;
  CHECK_FALSE(queue.degraded());
  std::vector<int> ran;
  CHECK(queue.Refused(ResourceExhaustedError("disk full"), UpdateOf(1),
                      [&](const Status&) { ran.push_back(1); }));
  CHECK(queue.degraded());
  queue.Enqueue(UpdateOf(2), [&](const Status&) { ran.push_back(2); });
  // A second refusal while a retry is armed arms none.
  CHECK_FALSE(queue.Refused(ResourceExhaustedError("disk full"), UpdateOf(3), nullptr));
  REQUIRE(queue.size() == 3);

  std::vector<PersistRetryQueue::Entry> taken = queue.TakeAll();
  CHECK_FALSE(queue.degraded());
  CHECK(queue.size() == 0);
  REQUIRE(taken.size() == 3);
  CHECK(taken[0].update.job_id == 1);
  CHECK(taken[1].update.job_id == 2);
  CHECK(taken[2].update.job_id == 3);
  taken[0].durable(Status::Ok());
  taken[1].durable(Status::Ok());
  CHECK(ran == std::vector<int>{1, 2});
  CHECK_FALSE(taken[2].durable);
  // Refused again after the retry: a new spell, a new retry.
  CHECK(queue.Refused(UnavailableError("I/O error"), std::move(taken[2].update), nullptr));
}

TEST_CASE("persist retry queue: a held job's requests get the store's last error") {
  PersistRetryQueue queue;
  CHECK_FALSE(queue.Holds(7));
  (void)queue.Refused(ResourceExhaustedError("database or disk is full"), UpdateOf(7), nullptr);
  CHECK(queue.Holds(7));
  CHECK_FALSE(queue.Holds(8));
  const Status error = queue.UnrecordedError(7, "cancelled");
  CHECK(error.code() == StatusCode::kResourceExhausted);
  CHECK(error.message() ==
        "job 7: cancelled, but the store has not recorded it yet: database or disk is full");
  (void)queue.TakeAll();
  CHECK_FALSE(queue.Holds(7));
}

TEST_CASE("persist retry queue: without a store error the code is UNAVAILABLE") {
  PersistRetryQueue queue;
  CHECK(queue.UnrecordedError(1, "ended").code() == StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera
