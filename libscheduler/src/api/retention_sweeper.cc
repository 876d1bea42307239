#include "api/retention_sweeper.h"

#include <pthread.h>

#include <limits>

#include "common/log.h"

namespace tessera {

RetentionSweeper::RetentionSweeper(const RetentionOptions& options, store::Store& store,
                                   const Clock& clock, LogOptions log)
    : options_(options), store_(store), clock_(clock), log_(std::move(log)) {
  thread_ = std::thread([this] { Loop(); });
}

void RetentionSweeper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  std::lock_guard<std::mutex> lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

int64_t RetentionSweeper::deleted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deleted_;
}

void RetentionSweeper::Loop() {
  pthread_setname_np(pthread_self(), "tessera-retain");
  // At once, so that a store reopened with a tighter bound shrinks without waiting; then every
  // interval.
  std::unique_lock<std::mutex> lock(mu_);
  do {
    lock.unlock();
    Sweep();
    lock.lock();
  } while (!wake_.wait_for(lock, options_.sweep_interval, [&] { return stopping_; }));
}

bool RetentionSweeper::Sweep() {
  const int64_t ttl_us = static_cast<int64_t>(options_.finished_job_ttl.count()) * 1'000'000;
  // No time bound: nothing finished before the earliest time.
  const int64_t finished_before_us =
      ttl_us > 0 ? clock_.NowUs() - ttl_us : std::numeric_limits<int64_t>::min();
  const int64_t keep = options_.max_finished_jobs > 0 ? options_.max_finished_jobs : -1;
  const int batch = options_.sweep_batch;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return true;
    }
    int64_t deleted = 0;
    Status status = store_.WriteAndWait([&](store::WriteTransaction& t) -> Status {
      TESSERA_ASSIGN_OR_RETURN(deleted, t.DeleteFinishedJobs(finished_before_us, keep, batch));
      return Status::Ok();
    });
    if (!status.ok()) {
      LogWarning(log_, "retention: deleting finished jobs failed, trying again in {} ms: {}",
                 options_.sweep_interval.count(), status.ToString());
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      deleted_ += deleted;
    }
    if (deleted > 0) LogDebug(log_, "retention: deleted {} finished job(s)", deleted);
    if (deleted < batch) return true;
  }
}

}  // namespace tessera
