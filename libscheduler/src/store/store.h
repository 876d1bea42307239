// Store: Tessera's durable state in one SQLite file (WAL mode): jobs (spec and status as
// protobuf blobs plus indexed columns), queues, operator flags on nodes, and the event log.
//
// Writes go through GroupCommit (one writer thread, batched commits, done-callbacks after the
// commit). Reads use a small pool of separate connections and see committed data only, so they
// never wait for the writer. Opening locks the file (StoreLock), checks it (store_check.h) and
// applies migrations; a store in use, damaged, empty or newer is refused with a Status.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/group_commit.h"
#include "store/sqlite.h"
#include "store/store_lock.h"
#include "tessera/options.h"
#include "tessera/status.h"
#include "tessera/v1/event.pb.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/queue.pb.h"

namespace tessera::store {

struct NodeFlags {
  std::string name;
  bool cordoned = false;
  bool draining = false;
};

class Store {
 public:
  // Errors: see Scheduler::Open.
  static StatusOr<std::unique_ptr<Store>> Open(const StoreOptions& options);
  ~Store();  // waits for queued writes, then closes.

  // --- Loading at start-up.
  Status LoadQueues(std::vector<v1::QueueSpec>* queues);
  Status LoadNodeFlags(std::vector<NodeFlags>* flags);
  Status LoadBurstAccounts(std::vector<v1::BurstAccountRecord>* accounts);
  // Calls `visit` for every job not in a terminal state, in id order.
  Status LoadLiveJobs(const std::function<void(v1::Job&& job)>& visit);

  // --- Writing.
  // `kind`: see GroupCommit (a request may fail alone; transitions go first).
  void Write(WriteFn fn, WriteDone done, WriteKind kind = WriteKind::kRequest);
  // Write and wait for the outcome.
  Status WriteAndWait(WriteFn fn);
  void Flush() { writer_->Flush(); }
  bool Idle() const { return writer_->Idle(); }
  uint64_t WritesEnqueued() const { return writer_->enqueued(); }

  // --- Reading committed state.
  // Errors: NOT_FOUND.
  StatusOr<v1::Job> GetJob(uint64_t id);
  // The job whose idempotency_key column is `stored_key` (scope included). Errors: NOT_FOUND.
  StatusOr<v1::Job> GetJobByIdempotencyKey(const std::string& stored_key);
  // Errors: INVALID_ARGUMENT for a bad page size or token.
  StatusOr<v1::ListJobsResponse> ListJobs(const v1::ListJobsRequest& request);
  // Events after `after_seq`, waiting up to `wait` for the first. Errors: UNAVAILABLE once
  // StopEventWaits has run (a wait under way ends then).
  StatusOr<std::vector<v1::Event>> ReadEvents(uint64_t after_seq, int max_events,
                                              std::chrono::milliseconds wait);
  // Ends every ReadEvents wait now, and any later one at once, with UNAVAILABLE: the owner is
  // closing, and a caller blocked in a long wait must not hold it up.
  void StopEventWaits();
  uint64_t LastEventSeq() const { return next_event_seq_.load() - 1; }
  // Runs `listener` with LastEventSeq() after every commit, on the writer thread: it must not
  // block. Replaces the previous listener; an empty function removes it.
  void SetCommitListener(std::function<void(uint64_t last_event_seq)> listener);

  // Copies the store to `path` with SQLite's online backup API.
  Status Backup(const std::string& path);
  // SQLite's check of the committed store, on a reader connection (writes go on meanwhile).
  // Errors: see CheckIntegrity.
  Status Check(StoreCheck level);
  // Errors the store met since Open: SQLite failures (I/O, disk full, corruption, lock
  // timeouts) on any connection, and records that do not parse.
  int64_t errors() const { return errors_.load(std::memory_order_relaxed); }

  GroupCommitStats write_stats() const { return writer_->stats(); }
  const LatencyHistogram& commit_latency() const { return writer_->commit_latency(); }
  const std::string& path() const { return path_; }

 private:
  class ReaderLease;

  Store(std::string path, bool temporary) : path_(std::move(path)), temporary_(temporary) {}
  StatusOr<std::unique_ptr<Database>> OpenReader();
  StatusOr<ReaderLease> LeaseReader();
  void ReturnReader(std::unique_ptr<Database> db);
  void OnCommit(uint64_t next_event_seq);

  std::string path_;
  bool temporary_;
  ErrorCounter errors_{0};  // before the connections that count into it.
  StoreOptions options_;
  std::unique_ptr<StoreLock> lock_;
  std::unique_ptr<Database> writer_db_;
  std::unique_ptr<GroupCommit> writer_;

  std::mutex readers_mu_;
  std::vector<std::unique_ptr<Database>> idle_readers_;

  std::atomic<uint64_t> next_event_seq_{1};
  std::mutex events_mu_;
  std::condition_variable events_cv_;
  std::function<void(uint64_t)> commit_listener_;  // guarded by events_mu_.
  bool event_waits_stopped_ = false;               // guarded by events_mu_.
};

}  // namespace tessera::store
