#include "store/group_commit.h"

#include <pthread.h>

#include <chrono>
#include <vector>

namespace tessera::store {
namespace {

const CachedSql kBegin("BEGIN IMMEDIATE");
const CachedSql kSavepoint("SAVEPOINT op");
const CachedSql kRelease("RELEASE op");
const CachedSql kRollbackTo("ROLLBACK TO op");
const CachedSql kCommit("COMMIT");

}  // namespace

GroupCommit::GroupCommit(Database& db, int max_batch, uint64_t next_event_seq,
                         int64_t last_event_time_us, std::function<void(uint64_t)> on_commit)
    : db_(db),
      max_batch_(static_cast<size_t>(max_batch > 0 ? max_batch : 1)),
      next_event_seq_(next_event_seq),
      last_event_time_us_(last_event_time_us),
      on_commit_(std::move(on_commit)),
      thread_([this] { Run(); }) {}

GroupCommit::~GroupCommit() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void GroupCommit::Enqueue(WriteFn fn, WriteDone done, WriteKind kind) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Lane& lane = LaneOf(kind);
    lane.waiting.push_back({std::move(fn), std::move(done), kind});
    ++lane.enqueued;
  }
  wake_.notify_one();
}

void GroupCommit::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t transitions = transitions_.enqueued;
  const uint64_t requests = requests_.enqueued;
  finished_.wait(lock, [&] {
    return transitions_.completed >= transitions && requests_.completed >= requests;
  });
}

bool GroupCommit::Idle() const {
  std::lock_guard<std::mutex> lock(mu_);
  return transitions_.completed == transitions_.enqueued &&
         requests_.completed == requests_.enqueued;
}

uint64_t GroupCommit::enqueued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return transitions_.enqueued + requests_.enqueued;
}

GroupCommitStats GroupCommit::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void GroupCommit::Run() {
  pthread_setname_np(pthread_self(), "tessera-store");
  size_t last_batch = 0;
  while (true) {
    std::deque<Op> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || WaitingLocked() > 0; });
      if (WaitingLocked() == 0) return;  // stopping and drained.
      // Writers that wait for each commit before sending the next write arrive a few
      // microseconds apart after each commit. When fewer are queued than the last batch held,
      // wait briefly for the rest, so they share one fsync instead of needing two.
      if (WaitingLocked() < last_batch && !stopping_) {
        wake_.wait_for(lock, kGatherWait,
                       [&] { return stopping_ || WaitingLocked() >= last_batch; });
      }
      for (Lane* lane : {&transitions_, &requests_}) {
        while (!lane->waiting.empty() && batch.size() < max_batch_) {
          batch.push_back(std::move(lane->waiting.front()));
          lane->waiting.pop_front();
        }
      }
    }
    last_batch = batch.size();
    RunBatch(batch);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const Op& op : batch) ++LaneOf(op.kind).completed;
    }
    finished_.notify_all();
  }
}

void GroupCommit::RunBatch(std::deque<Op>& batch) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Status> results(batch.size());
  const uint64_t seq_at_start = next_event_seq_;
  // First without savepoints; only if a request fails after changing something is the
  // batch rolled back and run again with one savepoint per write.
  Status batch_status;
  if (!TryBatch(batch, /*savepoints=*/false, results, batch_status)) {
    next_event_seq_ = seq_at_start;
    for (Status& r : results) r = Status::Ok();
    TryBatch(batch, /*savepoints=*/true, results, batch_status);
  }
  commit_latency_.Record(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
  int64_t ok = 0;
  for (const Status& r : results) ok += r.ok() ? 1 : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (batch_status.ok()) ++stats_.commits;
    stats_.committed_writes += ok;
    stats_.failed_writes += static_cast<int64_t>(results.size()) - ok;
  }
  if (batch_status.ok() && on_commit_) on_commit_(next_event_seq_);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].done) batch[i].done(results[i]);
  }
}

bool GroupCommit::TryBatch(std::deque<Op>& batch, bool savepoints, std::vector<Status>& results,
                           Status& batch_status) {
  const uint64_t seq_at_start = next_event_seq_;
  WriteTransaction txn(db_, next_event_seq_, last_event_time_us_);

  batch_status = db_.ExecCached(kBegin);
  for (size_t i = 0; i < batch.size() && batch_status.ok(); ++i) {
    if (batch[i].kind == WriteKind::kTransition) {
      batch_status = batch[i].fn(txn);
      if (batch_status.ok() && !db_.InTransaction()) {
        batch_status = InternalError("store: transaction lost");
      }
      continue;
    }
    const uint64_t seq_before = txn.next_event_seq();
    if (!savepoints) {
      // Most writes succeed, and most that fail do so on a check before they change anything
      // (an unknown queue, a reused key): neither needs a savepoint to leave no trace.
      const int64_t changes_before = db_.TotalChanges();
      Status op_status = batch[i].fn(txn);
      if (!db_.InTransaction()) {
        batch_status = op_status.ok() ? InternalError("store: transaction lost") : op_status;
        break;
      }
      if (op_status.ok()) continue;
      if (db_.TotalChanges() != changes_before) {
        // It failed after changing rows: only a savepoint can undo its part alone.
        (void)db_.Exec("ROLLBACK");
        return false;
      }
      results[i] = op_status;
      txn.RewindEventSeq(seq_before);
      continue;
    }
    batch_status = db_.ExecCached(kSavepoint);
    if (!batch_status.ok()) break;
    Status op_status = batch[i].fn(txn);
    if (!db_.InTransaction()) {
      // SQLite rolled back the whole transaction (it may on FULL, IOERR, BUSY, NOMEM):
      // nothing of this batch survives, so every operation in it fails.
      batch_status = op_status.ok() ? InternalError("store: transaction lost") : op_status;
      break;
    }
    if (op_status.ok()) {
      batch_status = db_.ExecCached(kRelease);
    } else {
      results[i] = op_status;
      txn.RewindEventSeq(seq_before);
      txn.ForgetQueueShapes();
      batch_status = db_.ExecCached(kRollbackTo);
      if (batch_status.ok()) batch_status = db_.ExecCached(kRelease);
    }
  }
  if (batch_status.ok()) batch_status = txn.FlushDeferred();
  if (batch_status.ok()) batch_status = db_.ExecCached(kCommit);
  if (!batch_status.ok()) {
    if (db_.InTransaction()) (void)db_.Exec("ROLLBACK");
    for (Status& r : results) r = batch_status;
    next_event_seq_ = seq_at_start;
  } else {
    next_event_seq_ = txn.next_event_seq();
    last_event_time_us_ = txn.last_event_time_us();
  }
  return true;
}

}  // namespace tessera::store
