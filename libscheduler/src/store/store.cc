#include "store/store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <filesystem>
#include <random>
#include <thread>

#include "store/schema.h"
#include "store/store_check.h"

namespace tessera::store {
namespace {

std::string TemporaryStorePath() {
  static std::atomic<int> counter{0};
  std::random_device random;
  return (std::filesystem::temp_directory_path() /
          ("tessera-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
           std::to_string(random()) + ".db"))
      .string();
}

Status ParseJobRow(Statement& s, int first_column, v1::Job* job) {
  job->set_id(static_cast<uint64_t>(s.ColumnInt(first_column)));
  job->set_idempotency_key(std::string(s.ColumnText(first_column + 1)));
  const std::string_view spec = s.ColumnBlob(first_column + 2);
  const std::string_view status = s.ColumnBlob(first_column + 3);
  if (!job->mutable_spec()->ParseFromArray(spec.data(), static_cast<int>(spec.size())) ||
      !job->mutable_status()->ParseFromArray(status.data(), static_cast<int>(status.size()))) {
    return FailedPreconditionError("store: job " + std::to_string(job->id()) +
                                   " has a corrupt record");
  }
  return Status::Ok();
}

// What every connection sets first; reading the schema makes a file that is not a database
// fail here, with a clear status.
Status Configure(Database& db, const StoreOptions& options) {
  Status status = db.Exec("PRAGMA busy_timeout = " + std::to_string(options.busy_timeout.count()));
  if (status.ok()) status = db.Exec("SELECT count(*) FROM sqlite_master");
  if (!status.ok()) return status.WithContext("opening store '" + db.path() + "'");
  return Status::Ok();
}

// The writer's settings: WAL, fsync per commit (or not), cache, size limit.
Status ConfigureWriter(Database& db, const StoreOptions& options) {
  StatusOr<std::unique_ptr<Statement>> mode = db.PrepareUncached("PRAGMA journal_mode = WAL");
  if (!mode.ok()) return mode.status();
  StatusOr<bool> row = (*mode)->Step();
  if (!row.ok()) return row.status().WithContext("enabling WAL on '" + db.path() + "'");
  if (!*row || (*mode)->ColumnText(0) != "wal") {
    return UnavailableError("store '" + db.path() + "': cannot enable WAL journal mode");
  }
  TESSERA_RETURN_IF_ERROR(
      db.Exec(options.durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF"));
  TESSERA_RETURN_IF_ERROR(db.Exec("PRAGMA cache_size = -65536"));
  TESSERA_RETURN_IF_ERROR(db.Exec("PRAGMA wal_autocheckpoint = 16384"));
  TESSERA_RETURN_IF_ERROR(db.Exec("PRAGMA temp_store = MEMORY"));
  if (options.max_size_mib > 0) {
    // The page size is 4 KiB unless an older file says otherwise; ask rather than assume.
    StatusOr<std::unique_ptr<Statement>> size = db.PrepareUncached("PRAGMA page_size");
    if (!size.ok()) return size.status();
    StatusOr<bool> size_row = (*size)->Step();
    if (!size_row.ok()) return size_row.status();
    const int64_t page_size = (*size)->ColumnInt(0);
    const int64_t pages = options.max_size_mib * 1024 * 1024 / page_size;
    TESSERA_RETURN_IF_ERROR(db.Exec("PRAGMA max_page_count = " + std::to_string(pages)));
  }
  return Status::Ok();
}

// A new store, whole (schema included), at `path`; StoreLock then gives it its real name. It is
// made with a rollback journal, so that once Migrate commits everything is in the one file
// (a WAL left behind by a failed checkpoint would not follow it); Open then turns on WAL.
Status CreateStoreFile(const std::string& path, const StoreOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path));
  TESSERA_RETURN_IF_ERROR(Configure(*db, options));
  TESSERA_RETURN_IF_ERROR(
      db->Exec(options.durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = OFF"));
  return Migrate(*db);
}

}  // namespace

// A reader connection borrowed from the pool, returned when the lease ends.
class Store::ReaderLease {
 public:
  ReaderLease(Store* store, std::unique_ptr<Database> db) : store_(store), db_(std::move(db)) {}
  ReaderLease(ReaderLease&& o) noexcept = default;
  ~ReaderLease() {
    if (db_) store_->ReturnReader(std::move(db_));
  }
  Database& db() { return *db_; }

 private:
  Store* store_;
  std::unique_ptr<Database> db_;
};

StatusOr<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  const bool temporary = options.path.empty();
  std::unique_ptr<Store> store(
      new Store(temporary ? TemporaryStorePath() : options.path, temporary));
  store->options_ = options;
  if (temporary) store->options_.durable = false;
  const StoreOptions& o = store->options_;

  TESSERA_ASSIGN_OR_RETURN(store->lock_,
                           StoreLock::AcquireOrCreate(store->path_, [&o](const std::string& fresh) {
                             return CreateStoreFile(fresh, o);
                           }));
  TESSERA_RETURN_IF_ERROR(CheckNotEmpty(store->path_));
  TESSERA_ASSIGN_OR_RETURN(store->writer_db_, Database::Open(store->path_, &store->errors_));
  Database& db = *store->writer_db_;
  TESSERA_RETURN_IF_ERROR(Configure(db, o));
  TESSERA_RETURN_IF_ERROR(CheckIsStore(db));
  TESSERA_RETURN_IF_ERROR(CheckIntegrity(db, o.check_at_open));
  TESSERA_RETURN_IF_ERROR(ConfigureWriter(db, o));
  TESSERA_RETURN_IF_ERROR(Migrate(db));

  // The sequence continues after the last event, or after the last one retention deleted.
  int64_t last_event_seq = 0;
  int64_t last_event_time_us = 0;
  for (const char* sql : {"SELECT seq, time_us FROM events ORDER BY seq DESC LIMIT 1",
                          "SELECT seq, time_us FROM event_log_end"}) {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Statement> s, db.PrepareUncached(sql));
    TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
    if (row && s->ColumnInt(0) > last_event_seq) {
      last_event_seq = s->ColumnInt(0);
      last_event_time_us = s->ColumnInt(1);
    }
  }
  store->next_event_seq_ = static_cast<uint64_t>(last_event_seq) + 1;
  Store* raw = store.get();
  store->writer_ = std::make_unique<GroupCommit>(db, o.max_batch, store->next_event_seq_.load(),
                                                 last_event_time_us,
                                                 [raw](uint64_t next) { raw->OnCommit(next); });
  return store;
}

Store::~Store() {
  writer_.reset();  // drains queued writes.
  idle_readers_.clear();
  writer_db_.reset();
  lock_.reset();
  if (temporary_) {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::filesystem::remove(path_ + suffix, ignored);
    }
  }
}

Status Store::Check(StoreCheck level) {
  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  return CheckIntegrity(reader.db(), level);
}

StatusOr<std::unique_ptr<Database>> Store::OpenReader() {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path_, &errors_));
  TESSERA_RETURN_IF_ERROR(Configure(*db, options_));
  TESSERA_RETURN_IF_ERROR(db->Exec("PRAGMA query_only = 1"));
  return db;
}

StatusOr<Store::ReaderLease> Store::LeaseReader() {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    if (!idle_readers_.empty()) {
      std::unique_ptr<Database> db = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return ReaderLease(this, std::move(db));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, OpenReader());
  return ReaderLease(this, std::move(db));
}

void Store::ReturnReader(std::unique_ptr<Database> db) {
  std::lock_guard<std::mutex> lock(readers_mu_);
  if (idle_readers_.size() < 8) idle_readers_.push_back(std::move(db));
}

void Store::OnCommit(uint64_t next_event_seq) {
  std::function<void(uint64_t)> listener;
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    next_event_seq_ = next_event_seq;
    listener = commit_listener_;
  }
  events_cv_.notify_all();
  if (listener) listener(next_event_seq - 1);
}

void Store::StopEventWaits() {
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    event_waits_stopped_ = true;
  }
  events_cv_.notify_all();
}

void Store::SetCommitListener(std::function<void(uint64_t)> listener) {
  std::lock_guard<std::mutex> lock(events_mu_);
  commit_listener_ = std::move(listener);
}

Status Store::LoadQueues(std::vector<v1::QueueSpec>* queues) {
  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  TESSERA_ASSIGN_OR_RETURN(StatementRef s,
                           reader.db().Prepare("SELECT name, spec FROM queues ORDER BY name"));
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) return Status::Ok();
    v1::QueueSpec spec;
    const std::string_view blob = s->ColumnBlob(1);
    if (!spec.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
      return reader.db().CountError(FailedPreconditionError(
          "store: queue '" + std::string(s->ColumnText(0)) + "' has a corrupt record"));
    }
    queues->push_back(std::move(spec));
  }
}

Status Store::LoadNodeFlags(std::vector<NodeFlags>* flags) {
  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  TESSERA_ASSIGN_OR_RETURN(StatementRef s,
                           reader.db().Prepare("SELECT name, cordoned, draining FROM nodes"));
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) return Status::Ok();
    flags->push_back({std::string(s->ColumnText(0)), s->ColumnInt(1) != 0, s->ColumnInt(2) != 0});
  }
}

Status Store::LoadBurstAccounts(std::vector<v1::BurstAccountRecord>* accounts) {
  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  TESSERA_ASSIGN_OR_RETURN(StatementRef s,
                           reader.db().Prepare("SELECT record FROM burst_accounts"));
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) return Status::Ok();
    v1::BurstAccountRecord record;
    const std::string_view bytes = s->ColumnBlob(0);
    if (!record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return InternalError("store: a burst_accounts row does not parse");
    }
    accounts->push_back(std::move(record));
  }
}

Status Store::LoadLiveJobs(const std::function<void(v1::Job&& job)>& visit) {
  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  TESSERA_ASSIGN_OR_RETURN(
      StatementRef s,
      reader.db().Prepare(std::string("SELECT j.id, j.idempotency_key, s.spec, j.status "
                                      "FROM jobs j INDEXED BY jobs_live "
                                      "JOIN job_specs s ON s.id = j.id WHERE j.") +
                          kUnfinishedJobSql + " ORDER BY j.id"));
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) return Status::Ok();
    v1::Job job;
    TESSERA_RETURN_IF_ERROR(reader.db().CountError(ParseJobRow(*s, 0, &job)));
    visit(std::move(job));
  }
}

void Store::Write(WriteFn fn, WriteDone done, WriteKind kind) {
  writer_->Enqueue(std::move(fn), std::move(done), kind);
}

Status Store::WriteAndWait(WriteFn fn) {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  Status result;
  Write(std::move(fn), [&](const Status& status) {
    std::lock_guard<std::mutex> lock(mu);
    result = status;
    finished = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return finished; });
  return result;
}

StatusOr<v1::Job> Store::GetJob(uint64_t id) {
  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  TESSERA_ASSIGN_OR_RETURN(
      StatementRef s,
      reader.db().Prepare("SELECT j.id, j.idempotency_key, s.spec, j.status FROM jobs j "
                          "JOIN job_specs s ON s.id = j.id WHERE j.id = ?"));
  s->BindInt(1, static_cast<int64_t>(id));
  TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return NotFoundError("job " + std::to_string(id) + " does not exist");
  v1::Job job;
  TESSERA_RETURN_IF_ERROR(reader.db().CountError(ParseJobRow(*s, 0, &job)));
  return job;
}

StatusOr<v1::Job> Store::GetJobByIdempotencyKey(const std::string& stored_key) {
  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  TESSERA_ASSIGN_OR_RETURN(
      StatementRef s,
      reader.db().Prepare("SELECT j.id, j.idempotency_key, s.spec, j.status FROM jobs j "
                          "JOIN job_specs s ON s.id = j.id WHERE j.idempotency_key = ?"));
  s->BindText(1, stored_key);
  TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
  if (!row) return NotFoundError("no job has this idempotency key");
  v1::Job job;
  TESSERA_RETURN_IF_ERROR(reader.db().CountError(ParseJobRow(*s, 0, &job)));
  return job;
}

StatusOr<v1::ListJobsResponse> Store::ListJobs(const v1::ListJobsRequest& request) {
  constexpr int kDefaultPageSize = 100;
  constexpr int kMaxPageSize = 1000;
  constexpr int kMaxRowsScanned = 20000;  // bounds the work when a label filter matches rarely.
  if (request.page_size() < 0 || request.page_size() > kMaxPageSize) {
    return InvalidFieldError("page_size", "must be between 0 and " + std::to_string(kMaxPageSize) +
                                              ", got " + std::to_string(request.page_size()));
  }
  const int page_size = request.page_size() == 0 ? kDefaultPageSize : request.page_size();
  uint64_t after = 0;
  if (!request.page_token().empty()) {
    const std::string& token = request.page_token();
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), after);
    if (ec != std::errc() || end != token.data() + token.size()) {
      return InvalidFieldError("page_token", "'" + token + "' is not a token returned by ListJobs");
    }
  }

  std::string sql =
      "SELECT j.id, j.idempotency_key, s.spec, j.status FROM jobs j "
      "JOIN job_specs s ON s.id = j.id WHERE j.id > ?";
  const std::string& queue = request.queue();
  const bool subtree = !queue.empty() && queue.back() == '/';
  if (subtree) {
    sql += " AND (j.queue = ? OR (j.queue >= ? AND j.queue < ?))";
  } else if (!queue.empty()) {
    sql += " AND j.queue = ?";
  }
  if (request.states_size() > 0) {
    sql += " AND j.state IN (";
    for (int i = 0; i < request.states_size(); ++i) sql += i ? ", ?" : "?";
    sql += ")";
  }
  sql += " ORDER BY j.id";

  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Statement> s, reader.db().PrepareUncached(sql));
  int index = 1;
  s->BindInt(index++, static_cast<int64_t>(after));
  if (subtree) {
    const std::string prefix = queue.substr(0, queue.size() - 1);
    s->BindText(index++, prefix);
    s->BindText(index++, prefix + "/");
    s->BindText(index++, prefix + "0");
  } else if (!queue.empty()) {
    s->BindText(index++, queue);
  }
  for (int state : request.states()) s->BindInt(index++, state);

  v1::ListJobsResponse response;
  int scanned = 0;
  uint64_t last_id = after;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) return response;  // no more rows: no next page.
    v1::Job job;
    TESSERA_RETURN_IF_ERROR(reader.db().CountError(ParseJobRow(*s, 0, &job)));
    last_id = job.id();
    ++scanned;
    bool labels_match = true;
    for (const auto& [key, value] : request.labels()) {
      auto it = job.spec().labels().find(key);
      if (it == job.spec().labels().end() || it->second != value) {
        labels_match = false;
        break;
      }
    }
    if (labels_match) *response.add_jobs() = std::move(job);
    if (response.jobs_size() >= page_size || scanned >= kMaxRowsScanned) break;
  }
  // Stopped early: there may be more. A later page that turns out empty is fine.
  TESSERA_ASSIGN_OR_RETURN(bool more, s->Step());
  if (more) response.set_next_page_token(std::to_string(last_id));
  return response;
}

StatusOr<std::vector<v1::Event>> Store::ReadEvents(uint64_t after_seq, int max_events,
                                                   std::chrono::milliseconds wait) {
  if (max_events <= 0) return InvalidArgumentError("max_events: must be > 0");
  {
    std::unique_lock<std::mutex> lock(events_mu_);
    if (wait.count() > 0) {
      events_cv_.wait_for(lock, wait, [&] {
        return event_waits_stopped_ || next_event_seq_.load() - 1 > after_seq;
      });
    }
    if (event_waits_stopped_) return UnavailableError("store: closing");
  }
  std::vector<v1::Event> events;
  if (next_event_seq_.load() - 1 <= after_seq) return events;
  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  TESSERA_ASSIGN_OR_RETURN(
      StatementRef s,
      reader.db().Prepare(
          "SELECT seq, time_us, payload FROM events WHERE seq > ? ORDER BY seq LIMIT ?"));
  s->BindInt(1, static_cast<int64_t>(after_seq));
  s->BindInt(2, max_events);
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) return events;
    const std::string_view blob = s->ColumnBlob(2);
    v1::Event event;
    if (!event.ParseFromArray(blob.data(), static_cast<int>(blob.size()))) {
      return reader.db().CountError(FailedPreconditionError("store: corrupt event record"));
    }
    event.set_seq(static_cast<uint64_t>(s->ColumnInt(0)));
    event.set_time_us(s->ColumnInt(1));
    events.push_back(std::move(event));
  }
}

Status Store::Backup(const std::string& path) {
  if (path.empty()) return InvalidFieldError("path", "must not be empty");
  // Also the same file under another name (a symlink, "dir/./store.db"): renaming the copy over
  // the live store would corrupt it.
  std::error_code same_ec;
  if (path == path_ || std::filesystem::equivalent(path, path_, same_ec)) {
    return InvalidFieldError("path", "must differ from the store itself");
  }
  const std::string partial = path + ".partial";
  std::error_code ignored;
  std::filesystem::remove(partial, ignored);

  TESSERA_ASSIGN_OR_RETURN(ReaderLease reader, LeaseReader());
  sqlite3* dest = nullptr;
  int rc =
      sqlite3_open_v2(partial.c_str(), &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    Status status = SqliteStatus(rc, sqlite3_errstr(rc), "backup to '" + path + "'");
    sqlite3_close(dest);
    return status;
  }
  sqlite3_backup* backup = sqlite3_backup_init(dest, "main", reader.db().raw(), "main");
  if (!backup) {
    Status status =
        SqliteStatus(sqlite3_errcode(dest), sqlite3_errmsg(dest), "backup to '" + path + "'");
    sqlite3_close(dest);
    return status;
  }
  // Copy every page in one step, that is in one read transaction: in WAL mode it does not hold
  // up the writer, whereas slices would restart whenever the writer commits between two of them
  // and might never finish while writes go on. Retry while a lock is held.
  do {
    rc = sqlite3_backup_step(backup, -1);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
  sqlite3_backup_finish(backup);
  Status status = rc == SQLITE_DONE
                      ? Status::Ok()
                      : SqliteStatus(rc, sqlite3_errstr(rc), "backup to '" + path + "'");
  if (sqlite3_close(dest) != SQLITE_OK && status.ok()) {
    status = UnavailableError("backup to '" + path + "': closing the copy failed");
  }
  if (status.ok()) {
    std::error_code ec;
    std::filesystem::rename(partial, path, ec);
    if (ec) status = UnavailableError("backup to '" + path + "': " + ec.message());
  }
  if (!status.ok()) std::filesystem::remove(partial, ignored);
  return status;
}

}  // namespace tessera::store
