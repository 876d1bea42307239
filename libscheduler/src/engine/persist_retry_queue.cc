#include "engine/persist_retry_queue.h"

#include <string>

namespace tessera {

bool PersistRetryQueue::Refused(const Status& status, JobUpdate update,
                                std::function<void(const Status&)> durable) {
  degraded_ = true;
  last_error_ = status;
  entries_.push_back({std::move(update), std::move(durable)});
  if (retry_armed_) return false;
  retry_armed_ = true;
  return true;
}

void PersistRetryQueue::Enqueue(JobUpdate update, std::function<void(const Status&)> durable) {
  entries_.push_back({std::move(update), std::move(durable)});
}

std::vector<PersistRetryQueue::Entry> PersistRetryQueue::TakeAll() {
  retry_armed_ = false;
  degraded_ = false;
  std::vector<Entry> taken = std::move(entries_);
  entries_.clear();
  return taken;
}

bool PersistRetryQueue::Holds(uint64_t id) const {
  for (const Entry& e : entries_) {
    if (e.update.job_id == id) return true;
  }
  return false;
}

Status PersistRetryQueue::UnrecordedError(uint64_t id, std::string_view what) const {
  const StatusCode code = last_error_.ok() ? StatusCode::kUnavailable : last_error_.code();
  return Status(code, "job " + std::to_string(id) + ": " + std::string(what) +
                          ", but the store has not recorded it yet: " + last_error_.message());
}

}  // namespace tessera
