#include "store/sqlite.h"

#include <sqlite3.h>

#include <atomic>

namespace tessera::store {

Status SqliteStatus(int rc, std::string_view detail, std::string_view context) {
  std::string message = std::string(context) + ": " + std::string(detail);
  switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
      return Status::Ok();
    case SQLITE_FULL:
      return ResourceExhaustedError(message + " (disk full or store size limit reached)");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return UnavailableError(message + " (store locked by another connection)");
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return UnavailableError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return FailedPreconditionError(message + " (store file is corrupt or not a Tessera store)");
    default:
      return InternalError(message);
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::BindInt(int index, int64_t value) { sqlite3_bind_int64(stmt_, index, value); }

void Statement::BindText(int index, std::string_view value) {
  sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}

void Statement::BindBlob(int index, std::string_view value) {
  sqlite3_bind_blob(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}

void Statement::BindBlobNoCopy(int index, std::string_view value) {
  sqlite3_bind_blob(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
}

void Statement::BindNull(int index) { sqlite3_bind_null(stmt_, index); }

StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  if (errors_) errors_->fetch_add(1, std::memory_order_relaxed);
  return SqliteStatus(rc, sqlite3_errmsg(db_), "store");
}

Status Statement::Run() {
  while (true) {
    StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
  }
}

int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string_view Statement::ColumnText(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (!text) return {};
  return {text, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}

std::string_view Statement::ColumnBlob(int column) const {
  const auto* blob = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  if (!blob) return {};
  return {blob, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path, ErrorCounter* errors) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    if (errors) errors->fetch_add(1, std::memory_order_relaxed);
    Status status = SqliteStatus(rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc),
                                 "cannot open store '" + path + "'");
    sqlite3_close(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Database>(new Database(db, path, errors));
}

CachedSql::CachedSql(const char* text) : text_(text) {
  static std::atomic<size_t> next_slot{0};
  slot_ = next_slot++;
}

Database::~Database() {
  // Statements must be finalized before the connection closes.
  cache_.clear();
  by_slot_.clear();
  sqlite3_close(db_);
}

Status Database::Error(int rc, std::string_view context) const {
  if (errors_) errors_->fetch_add(1, std::memory_order_relaxed);
  return SqliteStatus(rc, sqlite3_errmsg(db_), context);
}

Status Database::CountError(Status status) const {
  if (errors_ && !status.ok()) errors_->fetch_add(1, std::memory_order_relaxed);
  return status;
}

Status Database::Exec(std::string_view sql) {
  const std::string text(sql);
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return Status::Ok();
  if (errors_) errors_->fetch_add(1, std::memory_order_relaxed);
  Status status = SqliteStatus(rc, error ? error : sqlite3_errstr(rc), "store");
  sqlite3_free(error);
  return status;
}

Status Database::ExecCached(const std::string& sql) {
  StatusOr<StatementRef> s = Prepare(sql);
  if (!s.ok()) return s.status();
  return (*s)->Run();
}

StatusOr<StatementRef> Database::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    StatusOr<std::unique_ptr<Statement>> fresh = PrepareUncached(sql);
    if (!fresh.ok()) return fresh.status();
    it = cache_.emplace(sql, std::move(*fresh)).first;
  }
  return StatementRef(it->second.get());
}

Status Database::ExecCached(const CachedSql& sql) {
  StatusOr<StatementRef> s = Prepare(sql);
  if (!s.ok()) return s.status();
  return (*s)->Run();
}

StatusOr<StatementRef> Database::Prepare(const CachedSql& sql) {
  if (sql.slot() >= by_slot_.size()) by_slot_.resize(sql.slot() + 1);
  std::unique_ptr<Statement>& slot = by_slot_[sql.slot()];
  if (!slot) {
    StatusOr<std::unique_ptr<Statement>> fresh = PrepareUncached(sql.text());
    if (!fresh.ok()) return fresh.status();
    slot = std::move(*fresh);
  }
  return StatementRef(slot.get());
}

StatusOr<std::unique_ptr<Statement>> Database::PrepareUncached(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(rc, "store: preparing statement");
  return std::make_unique<Statement>(db_, stmt, errors_);
}

int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

int Database::Changes() const { return sqlite3_changes(db_); }

int64_t Database::TotalChanges() const { return sqlite3_total_changes64(db_); }

bool Database::InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

}  // namespace tessera::store
