// WriteTransaction: the only way to change the store. Write operations receive one on the
// writer thread, inside the batch transaction; every statement is prepared and cached.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/sqlite.h"
#include "tessera/status.h"
#include "tessera/v1/event.pb.h"
#include "tessera/v1/job.pb.h"
#include "tessera/v1/queue.pb.h"

namespace tessera::store {

class WriteTransaction {
 public:
  // `next_event_seq` is the sequence number the next event gets; `last_event_time_us` the time
  // of the last event committed, below which no event's time goes.
  WriteTransaction(Database& db, uint64_t next_event_seq, int64_t last_event_time_us = 0)
      : db_(db), next_event_seq_(next_event_seq), last_event_time_us_(last_event_time_us) {}

  // --- Jobs.
  StatusOr<std::optional<uint64_t>> FindJobByIdempotencyKey(const std::string& key);
  // Errors: NOT_FOUND.
  StatusOr<v1::Job> ReadJob(uint64_t id);
  // Inserts `job` (its id is assigned and returned). `priority` is the resolved class value.
  StatusOr<uint64_t> InsertJob(const v1::Job& job, int32_t priority, int64_t now_us);
  // The same with the spec and status already serialized (by the caller's thread, so the
  // writer only binds bytes). They are not copied: they must outlive the call.
  StatusOr<uint64_t> InsertJob(const v1::Job& job, int32_t priority, int64_t now_us,
                               std::string_view spec_bytes, std::string_view status_bytes);
  // Replaces the status (and state column) of an existing job. Errors: NOT_FOUND.
  Status UpdateJobStatus(uint64_t id, const v1::JobStatus& status, int64_t now_us);
  // The same, with the status already serialized (so the caller's thread pays for it), written
  // once at the end of the batch: when one batch carries several updates of a job (admitted,
  // starting, running), only the last reaches the table. For operations that do not run in
  // their own savepoint (see GroupCommit). `status` is not copied: it must stay valid until the
  // batch commits (bytes the operation captured do).
  void DeferJobStatus(uint64_t id, v1::JobState state, std::string_view status, int64_t now_us);
  // Writes the deferred statuses, in id order. Called by the writer before it commits.
  Status FlushDeferred();

  // --- Events. Assigns and returns the next sequence number (gap-free: the writer rewinds it
  // when an operation or a commit fails) and sets it in `event`. An event's time is raised to
  // that of the event before it when it is earlier (writers on several threads take their
  // times before the writer orders them, and a wall clock may step back), so that times never
  // go back along the log; the time column holds it and readers put it back.
  StatusOr<uint64_t> AppendEvent(v1::Event& event);
  // The same for an event serialized by the caller, without its seq (readers fill it in).
  StatusOr<uint64_t> AppendSerializedEvent(int64_t time_us, uint64_t job_id,
                                           std::string_view payload);
  // Appends serialized events in order, several rows per statement (a churning cluster writes
  // five events per job). On error none of them is appended.
  struct EventRow {
    int64_t time_us = 0;
    uint64_t job_id = 0;  // 0: none.
    std::string_view payload;
  };
  Status AppendSerializedEvents(const std::vector<EventRow>& rows);

  // --- Retention (store/retention.cc).
  // Deletes finished jobs, oldest finished first, with their specs and events: those that
  // finished before `finished_before_us` and, beyond them, the oldest until at most
  // `keep_finished` finished jobs remain (-1: no count bound). At most `limit` jobs; returns
  // how many were deleted. Live jobs and events of no job (nodes, queues) are never touched.
  // The log's last event is remembered first (table event_log_end), so that the next open
  // continues the sequence after it even when it was one of those deleted.
  StatusOr<int64_t> DeleteFinishedJobs(int64_t finished_before_us, int64_t keep_finished,
                                       int limit);

  // --- Queues.
  StatusOr<bool> QueueExists(const std::string& name);
  StatusOr<bool> QueueHasChildren(const std::string& name);
  // Both at once, in one statement (every submit asks). The answer is remembered for the rest
  // of the transaction, until a queue is written or ForgetQueueShapes is called: a batch of
  // submits mostly names a few queues.
  struct QueueShape {
    bool exists = false;
    bool has_children = false;
    int64_t max_pending_jobs = 0;  // the queue's QueueSpec::max_pending_jobs.
    // Its QueueSpec::idle_gpus: whether set, and if so whether on and allowing exemption.
    bool has_idle_gpus = false;
    bool idle_gpus_on = false;
    bool idle_gpu_exemption_allowed = false;
  };
  StatusOr<QueueShape> GetQueueShape(const std::string& name);
  // Whoever rolls back part of the transaction (to a savepoint) calls this: what was read
  // after the savepoint may be undone.
  void ForgetQueueShapes() { queue_shapes_.clear(); }
  StatusOr<int64_t> CountUnfinishedJobs(const std::string& queue);
  // The PENDING jobs of leaf `queue`, counted up to `up_to` (the cost grows with the count).
  StatusOr<int64_t> CountPendingJobs(const std::string& queue, int64_t up_to);
  // The PENDING jobs of every leaf below parent queue `parent`, counted up to `up_to`.
  StatusOr<int64_t> CountPendingJobsUnder(const std::string& parent, int64_t up_to);
  Status PutQueue(const v1::QueueSpec& spec);
  Status DeleteQueue(const std::string& name);

  // --- Node flags set by operators.
  Status PutNodeFlags(const std::string& name, bool cordoned, bool draining);
  // Replaces the burst spend account of record.queue().
  Status PutBurstAccount(const v1::BurstAccountRecord& record);

  uint64_t next_event_seq() const { return next_event_seq_; }
  int64_t last_event_time_us() const { return last_event_time_us_; }
  void RewindEventSeq(uint64_t next) { next_event_seq_ = next; }

 private:
  struct Deferred {
    uint64_t id = 0;
    v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
    std::string_view status;
    int64_t now_us = 0;
  };
  Status WriteJobStatus(uint64_t id, v1::JobState state, std::string_view status, int64_t now_us);
  Database& db_;
  uint64_t next_event_seq_;
  int64_t last_event_time_us_;
  std::vector<Deferred> deferred_;                                // in the order deferred.
  std::vector<std::pair<std::string, QueueShape>> queue_shapes_;  // read in this transaction.
};

}  // namespace tessera::store
