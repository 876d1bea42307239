// RetentionSweeper: applies Options::retention. A thread of its own wakes every sweep_interval
// (real time: it is housekeeping, whatever the scheduler's clock), and deletes the finished jobs
// past the bounds in batches of sweep_batch, one store write each, until a batch comes back
// short. The time bound is read on the scheduler's clock, so a simulation on a ManualClock
// expires jobs in its own time. A failed batch (the store full or failing) is logged and tried
// again at the next wake-up.
//
// Thread safety: Stop may be called from any thread; the sweeper calls the store from its own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "store/store.h"
#include "tessera/clock.h"
#include "tessera/logging.h"
#include "tessera/options.h"

namespace tessera {

class RetentionSweeper {
 public:
  // `store` and `clock` must outlive the sweeper (or Stop).
  RetentionSweeper(const RetentionOptions& options, store::Store& store, const Clock& clock,
                   LogOptions log);
  ~RetentionSweeper() { Stop(); }
  RetentionSweeper(const RetentionSweeper&) = delete;
  RetentionSweeper& operator=(const RetentionSweeper&) = delete;

  // Ends the thread, waiting for a batch under way to commit. Idempotent.
  void Stop();

  // Finished jobs deleted so far.
  int64_t deleted() const;

 private:
  void Loop();
  // One pass: batches until one is short, or Stop. False when a batch failed.
  bool Sweep();

  const RetentionOptions options_;
  store::Store& store_;
  const Clock& clock_;
  const LogOptions log_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_.
  int64_t deleted_ = 0;    // guarded by mu_.
  std::mutex join_mu_;
  std::thread thread_;
};

}  // namespace tessera
