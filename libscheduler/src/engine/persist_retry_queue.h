// PersistRetryQueue: the job updates the store refused (disk full, an I/O error), kept in order
// until they are written. While it holds any the store is degraded: decisions pause, and every
// new update queues behind the refused ones, so nothing overtakes an older write and nothing
// the engine did is lost. After a delay the engine takes them all back and writes each again
// (with the job's status as it is by then); any the store refuses again come back here.
//
// It also answers for the jobs it holds: a request about one (a cancel) gets the store's last
// error rather than a status the store has not recorded.
//
// Thread safety: the engine's, one decision strand.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "engine/job_update.h"
#include "tessera/status.h"

namespace tessera {

class PersistRetryQueue {
 public:
  struct Entry {
    JobUpdate update;
    std::function<void(const Status&)> durable;  // what runs once it is durable (may be empty).
  };

  // True from the first refusal until TakeAll: updates must queue here, decisions wait.
  bool degraded() const { return degraded_; }

  // The store refused `update` with `status`. Returns true when the caller must arm a retry
  // (none is armed since the last TakeAll).
  [[nodiscard]] bool Refused(const Status& status, JobUpdate update,
                             std::function<void(const Status&)> durable);
  // Queues an update behind the refused ones; only while degraded().
  void Enqueue(JobUpdate update, std::function<void(const Status&)> durable);

  // Everything held, oldest first, for a retry: the queue is empty and no longer degraded.
  std::vector<Entry> TakeAll();

  // Whether an update of job `id` waits here, and the error a request about it gets meanwhile
  // (the store's last error code, or UNAVAILABLE; the message names the job and `what`).
  bool Holds(uint64_t id) const;
  Status UnrecordedError(uint64_t id, std::string_view what) const;

  size_t size() const { return entries_.size(); }

 private:
  std::vector<Entry> entries_;
  bool degraded_ = false;
  bool retry_armed_ = false;
  Status last_error_;
};

}  // namespace tessera
