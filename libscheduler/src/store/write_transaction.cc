#include "store/write_transaction.h"

#include <algorithm>

#include "store/schema.h"

namespace tessera::store {
namespace {

// The statements every submit and every engine write runs.
const CachedSql kFindByKey("SELECT id FROM jobs WHERE idempotency_key = ?");
const CachedSql kInsertJob(
    "INSERT INTO jobs (idempotency_key, queue, state, priority, submit_time_us, "
    "update_time_us, status, finished) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
const CachedSql kInsertSpec("INSERT INTO job_specs (id, spec) VALUES (?, ?)");
// Two statements, so that the updates of an unfinished job do not name `finished` and SQLite
// leaves the partial index jobs_live alone; only the finishing update changes it.
const CachedSql kUpdateStatus(
    "UPDATE jobs SET state = ?, status = ?, update_time_us = ? WHERE id = ?");
const CachedSql kFinishStatus(
    "UPDATE jobs SET state = ?, status = ?, update_time_us = ?, finished = 1 WHERE id = ?");
const CachedSql kInsertEvent(
    "INSERT INTO events (seq, time_us, job_id, payload) VALUES (?, ?, ?, ?)");
const CachedSql kQueueExists("SELECT 1 FROM queues WHERE name = ?");
// Children are named "<name>/..."; '0' is the character after '/'.
const CachedSql kQueueShape(
    "SELECT (SELECT spec FROM queues WHERE name = ?1), "
    "EXISTS (SELECT 1 FROM queues WHERE name > ?2 AND name < ?3)");
const CachedSql kCountPending(
    "SELECT COUNT(*) FROM (SELECT 1 FROM jobs INDEXED BY jobs_pending_by_queue "
    "WHERE queue = ? AND state = 1 LIMIT ?)");
// Jobs live in leaves only: a subtree's are those whose queue starts with "parent/", the names
// between "parent/" and "parent0" ('0' follows '/').
const CachedSql kCountPendingUnder(
    "SELECT COUNT(*) FROM (SELECT 1 FROM jobs INDEXED BY jobs_pending_by_queue "
    "WHERE queue > ? AND queue < ? AND state = 1 LIMIT ?)");

// Event rows per multi-row INSERT: enough to take most of the per-statement cost off each row.
constexpr size_t kEventsPerInsert = 16;

const CachedSql& InsertEventsSql() {
  static const std::string text = [] {
    std::string sql = "INSERT INTO events (seq, time_us, job_id, payload) VALUES ";
    for (size_t i = 0; i < kEventsPerInsert; ++i) sql += i == 0 ? "(?, ?, ?, ?)" : ", (?, ?, ?, ?)";
    return sql;
  }();
  static const CachedSql sql(text.c_str());
  return sql;
}
const CachedSql kQueueHasChildren("SELECT 1 FROM queues WHERE name > ? AND name < ? LIMIT 1");

}  // namespace

StatusOr<std::optional<uint64_t>> WriteTransaction::FindJobByIdempotencyKey(
    const std::string& key) {
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(kFindByKey));
  s->BindText(1, key);
  TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return std::optional<uint64_t>();
  return std::optional<uint64_t>(static_cast<uint64_t>(s->ColumnInt(0)));
}

StatusOr<v1::Job> WriteTransaction::ReadJob(uint64_t id) {
  TESSERA_ASSIGN_OR_RETURN(StatementRef s,
                           db_.Prepare("SELECT j.idempotency_key, s.spec, j.status FROM jobs j "
                                       "JOIN job_specs s ON s.id = j.id WHERE j.id = ?"));
  s->BindInt(1, static_cast<int64_t>(id));
  TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return NotFoundError("job " + std::to_string(id) + " does not exist");
  v1::Job job;
  job.set_id(id);
  job.set_idempotency_key(std::string(s->ColumnText(0)));
  const std::string_view spec = s->ColumnBlob(1);
  const std::string_view status = s->ColumnBlob(2);
  if (!job.mutable_spec()->ParseFromArray(spec.data(), static_cast<int>(spec.size())) ||
      !job.mutable_status()->ParseFromArray(status.data(), static_cast<int>(status.size()))) {
    return db_.CountError(
        FailedPreconditionError("store: job " + std::to_string(id) + " has a corrupt record"));
  }
  return job;
}

StatusOr<uint64_t> WriteTransaction::InsertJob(const v1::Job& job, int32_t priority,
                                               int64_t now_us) {
  return InsertJob(job, priority, now_us, job.spec().SerializeAsString(),
                   job.status().SerializeAsString());
}

StatusOr<uint64_t> WriteTransaction::InsertJob(const v1::Job& job, int32_t priority, int64_t now_us,
                                               std::string_view spec_bytes,
                                               std::string_view status_bytes) {
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(kInsertJob));
  if (job.idempotency_key().empty()) {
    s->BindNull(1);
  } else {
    s->BindText(1, job.idempotency_key());
  }
  s->BindText(2, job.spec().queue());
  s->BindInt(3, job.status().state());
  s->BindInt(4, priority);
  s->BindInt(5, job.status().submit_time_us());
  s->BindInt(6, now_us);
  s->BindBlobNoCopy(7, status_bytes);
  s->BindInt(8, IsFinishedState(job.status().state()) ? 1 : 0);
  TESSERA_RETURN_IF_ERROR(s->Run());
  const int64_t id = db_.LastInsertRowId();
  TESSERA_ASSIGN_OR_RETURN(StatementRef spec, db_.Prepare(kInsertSpec));
  spec->BindInt(1, id);
  spec->BindBlobNoCopy(2, spec_bytes);
  TESSERA_RETURN_IF_ERROR(spec->Run());
  return static_cast<uint64_t>(id);
}

Status WriteTransaction::UpdateJobStatus(uint64_t id, const v1::JobStatus& status, int64_t now_us) {
  return WriteJobStatus(id, status.state(), status.SerializeAsString(), now_us);
}

Status WriteTransaction::WriteJobStatus(uint64_t id, v1::JobState state, std::string_view status,
                                        int64_t now_us) {
  TESSERA_ASSIGN_OR_RETURN(StatementRef s,
                           db_.Prepare(IsFinishedState(state) ? kFinishStatus : kUpdateStatus));
  s->BindInt(1, state);
  s->BindBlobNoCopy(2, status);
  s->BindInt(3, now_us);
  s->BindInt(4, static_cast<int64_t>(id));
  TESSERA_RETURN_IF_ERROR(s->Run());
  if (db_.Changes() == 0) return NotFoundError("job " + std::to_string(id) + " does not exist");
  return Status::Ok();
}

void WriteTransaction::DeferJobStatus(uint64_t id, v1::JobState state, std::string_view status,
                                      int64_t now_us) {
  deferred_.push_back({id, state, status, now_us});
}

Status WriteTransaction::FlushDeferred() {
  // By id, the last deferred status of each job winning: a stable sort keeps each job's updates
  // in the order they came, and rows are then visited in key order.
  std::stable_sort(deferred_.begin(), deferred_.end(),
                   [](const Deferred& a, const Deferred& b) { return a.id < b.id; });
  for (size_t i = 0; i < deferred_.size(); ++i) {
    const Deferred& d = deferred_[i];
    if (i + 1 < deferred_.size() && deferred_[i + 1].id == d.id) continue;  // superseded.
    TESSERA_RETURN_IF_ERROR(WriteJobStatus(d.id, d.state, d.status, d.now_us));
  }
  deferred_.clear();
  return Status::Ok();
}

StatusOr<uint64_t> WriteTransaction::AppendEvent(v1::Event& event) {
  // The payload leaves seq out: the column holds it, and readers put it back.
  const uint64_t seq = next_event_seq_;
  event.clear_seq();
  TESSERA_ASSIGN_OR_RETURN(uint64_t appended, AppendSerializedEvent(event.time_us(), event.job_id(),
                                                                    event.SerializeAsString()));
  event.set_seq(seq);
  event.set_time_us(last_event_time_us_);
  return appended;
}

StatusOr<uint64_t> WriteTransaction::AppendSerializedEvent(int64_t time_us, uint64_t job_id,
                                                           std::string_view payload) {
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(kInsertEvent));
  const uint64_t seq = next_event_seq_;
  time_us = std::max(time_us, last_event_time_us_);
  s->BindInt(1, static_cast<int64_t>(seq));
  s->BindInt(2, time_us);
  if (job_id != 0) {
    s->BindInt(3, static_cast<int64_t>(job_id));
  } else {
    s->BindNull(3);
  }
  s->BindBlobNoCopy(4, payload);
  TESSERA_RETURN_IF_ERROR(s->Run());
  ++next_event_seq_;
  last_event_time_us_ = time_us;
  return seq;
}

Status WriteTransaction::AppendSerializedEvents(const std::vector<EventRow>& rows) {
  size_t next = 0;
  for (; next + kEventsPerInsert <= rows.size(); next += kEventsPerInsert) {
    TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(InsertEventsSql()));
    int64_t time_us = last_event_time_us_;
    for (size_t i = 0; i < kEventsPerInsert; ++i) {
      const EventRow& row = rows[next + i];
      const int first = static_cast<int>(4 * i) + 1;
      time_us = std::max(time_us, row.time_us);
      s->BindInt(first, static_cast<int64_t>(next_event_seq_ + i));
      s->BindInt(first + 1, time_us);
      if (row.job_id != 0) {
        s->BindInt(first + 2, static_cast<int64_t>(row.job_id));
      } else {
        s->BindNull(first + 2);
      }
      s->BindBlobNoCopy(first + 3, row.payload);
    }
    TESSERA_RETURN_IF_ERROR(s->Run());
    next_event_seq_ += kEventsPerInsert;
    last_event_time_us_ = time_us;
  }
  for (; next < rows.size(); ++next) {
    const EventRow& row = rows[next];
    TESSERA_RETURN_IF_ERROR(AppendSerializedEvent(row.time_us, row.job_id, row.payload).status());
  }
  return Status::Ok();
}

StatusOr<bool> WriteTransaction::QueueExists(const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(kQueueExists));
  s->BindText(1, name);
  return s->Step();
}

StatusOr<bool> WriteTransaction::QueueHasChildren(const std::string& name) {
  // Children are named "<name>/..."; '0' is the character after '/'.
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(kQueueHasChildren));
  s->BindText(1, name + "/");
  s->BindText(2, name + "0");
  return s->Step();
}

StatusOr<WriteTransaction::QueueShape> WriteTransaction::GetQueueShape(const std::string& name) {
  for (const auto& [queue, shape] : queue_shapes_) {
    if (queue == name) return shape;
  }
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(kQueueShape));
  s->BindText(1, name);
  s->BindText(2, name + "/");
  s->BindText(3, name + "0");
  TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
  QueueShape shape;
  if (row) {
    shape.exists = !s->ColumnIsNull(0);
    shape.has_children = s->ColumnInt(1) != 0;
    if (shape.exists) {
      const std::string_view blob = s->ColumnBlob(0);
      v1::QueueSpec spec;
      if (!spec.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
        return db_.CountError(
            FailedPreconditionError("store: corrupt queue record '" + name + "'"));
      }
      shape.max_pending_jobs = spec.max_pending_jobs();
      shape.has_idle_gpus = spec.has_idle_gpus();
      shape.idle_gpus_on = spec.idle_gpus().below_pct() > 0;
      shape.idle_gpu_exemption_allowed = spec.idle_gpus().allow_exemption();
    }
  }
  // A handful at most in a batch; a batch naming many queues stops remembering more.
  if (queue_shapes_.size() < 64) queue_shapes_.emplace_back(name, shape);
  return shape;
}

StatusOr<int64_t> WriteTransaction::CountUnfinishedJobs(const std::string& queue) {
  TESSERA_ASSIGN_OR_RETURN(
      StatementRef s, db_.Prepare(std::string("SELECT COUNT(*) FROM jobs WHERE queue = ? AND ") +
                                  kUnfinishedJobSql));
  s->BindText(1, queue);
  TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->ColumnInt(0) : 0;
}

StatusOr<int64_t> WriteTransaction::CountPendingJobs(const std::string& queue, int64_t up_to) {
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(kCountPending));
  s->BindText(1, queue);
  s->BindInt(2, up_to);
  TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->ColumnInt(0) : 0;
}

StatusOr<int64_t> WriteTransaction::CountPendingJobsUnder(const std::string& parent,
                                                          int64_t up_to) {
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare(kCountPendingUnder));
  s->BindText(1, parent + "/");
  s->BindText(2, parent + "0");
  s->BindInt(3, up_to);
  TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->ColumnInt(0) : 0;
}

Status WriteTransaction::PutQueue(const v1::QueueSpec& spec) {
  queue_shapes_.clear();
  TESSERA_ASSIGN_OR_RETURN(StatementRef s,
                           db_.Prepare("INSERT OR REPLACE INTO queues (name, spec) VALUES (?, ?)"));
  s->BindText(1, spec.name());
  s->BindBlob(2, spec.SerializeAsString());
  return s->Run();
}

Status WriteTransaction::DeleteQueue(const std::string& name) {
  queue_shapes_.clear();
  TESSERA_ASSIGN_OR_RETURN(StatementRef s, db_.Prepare("DELETE FROM queues WHERE name = ?"));
  s->BindText(1, name);
  TESSERA_RETURN_IF_ERROR(s->Run());
  if (db_.Changes() == 0) return NotFoundError("queue '" + name + "' does not exist");
  return Status::Ok();
}

Status WriteTransaction::PutBurstAccount(const v1::BurstAccountRecord& record) {
  TESSERA_ASSIGN_OR_RETURN(
      StatementRef s,
      db_.Prepare("INSERT OR REPLACE INTO burst_accounts (queue, record) VALUES (?, ?)"));
  s->BindText(1, record.queue());
  s->BindBlob(2, record.SerializeAsString());
  return s->Run();
}

Status WriteTransaction::PutNodeFlags(const std::string& name, bool cordoned, bool draining) {
  TESSERA_ASSIGN_OR_RETURN(
      StatementRef s,
      db_.Prepare("INSERT OR REPLACE INTO nodes (name, cordoned, draining) VALUES (?, ?, ?)"));
  s->BindText(1, name);
  s->BindInt(2, cordoned ? 1 : 0);
  s->BindInt(3, draining ? 1 : 0);
  return s->Run();
}

}  // namespace tessera::store
