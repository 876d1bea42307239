// GroupCommit: the store's single writer. Callers enqueue write operations from any thread; one
// thread runs them in order, as many as are waiting (up to a batch limit) inside one SQLite
// transaction, so that concurrent writers share one fsync.
//
// Writes are of two kinds (WriteKind). A request (a submit, a queue change) that fails leaves no
// trace and does not fail its neighbours. The batch first runs without savepoints; if a request
// fails after it changed rows, the writer rolls the batch back and runs it again with each
// request in its own SAVEPOINT. So an operation may run more than once: it must depend only on
// what it captured and on the transaction (`done` runs exactly once). A transition (the engine's
// own state changes) skips the savepoint (it cannot fail except as the whole store fails) and may
// defer job-status updates to the end of the batch. `done` runs on the writer thread after the
// commit, with OK only when the operation's changes are durable. If the store itself fails (disk
// full, I/O error), SQLite may roll back the whole transaction: then every operation of the
// batch fails with that error and nothing of the batch is applied.
//
// Order: each kind runs in the order enqueued, and a batch takes the waiting transitions before
// the waiting requests. A placement is launched only once its transition is durable, so while
// one waits its GPUs are held and idle; when clients submit faster than the store commits, the
// requests queue up and a transition behind them would wait for all of them. Taking
// transitions first keeps their wait to about one batch, and the requests are what waits (the
// clients' backpressure). No transition depends on a request still waiting: the engine learns of
// a request only after it has committed.
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

enum class WriteKind {
  kRequest,     // from an API caller; may fail alone, leaving no trace (a savepoint if needed).
  kTransition,  // the engine's own state change; fails only with the store; goes first.
};

struct GroupCommitStats {
  int64_t commits = 0;
  int64_t committed_writes = 0;
  int64_t failed_writes = 0;
};

class GroupCommit {
 public:
  // `on_commit(next_event_seq)` runs on the writer thread after each successful commit.
  // `last_event_time_us`: the time of the store's last event (WriteTransaction keeps event
  // times from going back).
  GroupCommit(Database& db, int max_batch, uint64_t next_event_seq, int64_t last_event_time_us,
              std::function<void(uint64_t)> on_commit);
  ~GroupCommit();  // drains the queue, then stops.

  void Enqueue(WriteFn fn, WriteDone done, WriteKind kind = WriteKind::kRequest);
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
    WriteKind kind = WriteKind::kRequest;
  };
  // Operations waiting and counted, per kind (each kind keeps its order, so Flush compares
  // counts kind by kind).
  struct Lane {
    std::deque<Op> waiting;
    uint64_t enqueued = 0;
    uint64_t completed = 0;
  };
  Lane& LaneOf(WriteKind kind) { return kind == WriteKind::kTransition ? transitions_ : requests_; }
  size_t WaitingLocked() const { return transitions_.waiting.size() + requests_.waiting.size(); }
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
  uint64_t next_event_seq_;     // writer thread only.
  int64_t last_event_time_us_;  // writer thread only.
  std::function<void(uint64_t)> on_commit_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  Lane transitions_;
  Lane requests_;
  bool stopping_ = false;
  GroupCommitStats stats_;
  LatencyHistogram commit_latency_;
  std::thread thread_;
};

}  // namespace tessera::store
