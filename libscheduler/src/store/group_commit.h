// GroupCommit: the store's single writer. Callers enqueue write operations from any thread; one
// thread runs them in order, as many as are waiting (up to a batch limit) inside one SQLite
// transaction, so that concurrent writers share one fsync.
//
// An isolated operation that fails leaves no trace and does not fail its neighbours. The batch
// first runs without savepoints; if an isolated operation fails after it changed rows, the
// writer rolls the batch back and runs it again with each isolated operation in its own
// SAVEPOINT. So an operation may run more than once: it must depend only on what it captured
// and on the transaction (`done` runs exactly once). A non-isolated operation skips the savepoint
// (it cannot fail except as the whole store fails) and may defer job-status updates to the end of
// the batch. `done` runs on the writer thread after the commit, with OK only when the operation's
// changes are durable. If the store itself fails (disk full, I/O error), SQLite may roll back the
// whole transaction: then every operation of the batch fails with that error and nothing of the
// batch is applied.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/latency_histogram.h"
#include "store/sqlite.h"
#include "store/write_transaction.h"

namespace tessera::store {

using WriteFn = std::function<Status(WriteTransaction&)>;
using WriteDone = std::function<void(const Status&)>;

struct GroupCommitStats {
  int64_t commits = 0;
  int64_t committed_writes = 0;
  int64_t failed_writes = 0;
};

class GroupCommit {
 public:
  // `on_commit(next_event_seq)` runs on the writer thread after each successful commit.
  GroupCommit(Database& db, int max_batch, uint64_t next_event_seq,
              std::function<void(uint64_t)> on_commit);
  ~GroupCommit();  // drains the queue, then stops.

  void Enqueue(WriteFn fn, WriteDone done, bool isolated = true);
  // Blocks until every operation enqueued before the call has finished.
  void Flush();
  // True when nothing is queued or running.
  bool Idle() const;
  // Operations enqueued since construction.
  uint64_t enqueued() const;

  GroupCommitStats stats() const;
  const LatencyHistogram& commit_latency() const { return commit_latency_; }

 private:
  struct Op {
    WriteFn fn;
    WriteDone done;
    bool isolated = true;
  };
  // Longest the writer waits for more writes when fewer arrived than last time.
  static constexpr std::chrono::microseconds kGatherWait{100};

  void Run();
  void RunBatch(std::deque<Op>& batch);
  // Runs and commits (or fails) the batch, filling `results` and `batch_status`; with
  // `savepoints` false, returns false (having rolled back) when the batch must run again with
  // them.
  bool TryBatch(std::deque<Op>& batch, bool savepoints, std::vector<Status>& results,
                Status& batch_status);

  Database& db_;
  const size_t max_batch_;
  uint64_t next_event_seq_;  // writer thread only.
  std::function<void(uint64_t)> on_commit_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  std::deque<Op> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool stopping_ = false;
  GroupCommitStats stats_;
  LatencyHistogram commit_latency_;
  std::thread thread_;
};

}  // namespace tessera::store
