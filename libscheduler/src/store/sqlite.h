// A thin RAII layer over the SQLite C API: a Database connection with a cache of prepared
// statements, and Statement for binding, stepping and reading columns. Every SQLite error
// becomes a Status whose code says what the caller can do about it (see SqliteStatus), and is
// counted in the connection's error counter when it has one.
//
// Thread safety: a Database and its statements belong to one thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tessera::store {

// Maps an SQLite result code to a Status: FULL -> RESOURCE_EXHAUSTED, BUSY/LOCKED/IOERR/
// CANTOPEN/READONLY -> UNAVAILABLE, CORRUPT/NOTADB -> FAILED_PRECONDITION, others -> INTERNAL.
Status SqliteStatus(int rc, std::string_view detail, std::string_view context);

// Errors the store met (SQLite failures, corrupt records), counted across its connections.
using ErrorCounter = std::atomic<int64_t>;

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt, ErrorCounter* errors)
      : db_(db), stmt_(stmt), errors_(errors) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameter indices start at 1, as in SQLite.
  void BindInt(int index, int64_t value);
  void BindText(int index, std::string_view value);
  void BindBlob(int index, std::string_view value);
  // Binds without copying: `value` must stay valid until the statement is reset (for a
  // StatementRef, until it goes out of scope).
  void BindBlobNoCopy(int index, std::string_view value);
  void BindNull(int index);

  // Advances to the next row: true for a row, false when done.
  StatusOr<bool> Step();
  // Steps to completion, ignoring rows.
  Status Run();

  int64_t ColumnInt(int column) const;
  std::string_view ColumnText(int column) const;
  std::string_view ColumnBlob(int column) const;
  bool ColumnIsNull(int column) const;

  // Ready for reuse: resets and clears bindings.
  void Reset();

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  ErrorCounter* errors_;  // not owned; may be null.
};

// A cached statement borrowed for one use; resets it when it goes out of scope.
class StatementRef {
 public:
  explicit StatementRef(Statement* s) : s_(s) {}
  ~StatementRef() {
    if (s_) s_->Reset();
  }
  StatementRef(StatementRef&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  StatementRef(const StatementRef&) = delete;
  Statement* operator->() { return s_; }
  Statement& operator*() { return *s_; }

 private:
  Statement* s_;
};

// SQL text fixed at compile time, numbered once per process, so that a connection finds its
// prepared statement by index instead of hashing the text on every use. Define one per
// statement as a namespace-scope constant.
class CachedSql {
 public:
  explicit CachedSql(const char* text);
  const char* text() const { return text_; }
  size_t slot() const { return slot_; }

 private:
  const char* text_;
  size_t slot_;
};

class Database {
 public:
  // Opens or creates `path` read-write. `errors`, when set, counts every SQLite error of the
  // connection and must outlive it.
  // Errors: UNAVAILABLE when it cannot be opened.
  static StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                  ErrorCounter* errors = nullptr);
  ~Database();

  // Runs SQL without parameters (schema, pragmas).
  Status Exec(std::string_view sql);
  // Runs one parameterless statement through the statement cache (transaction control on hot
  // paths: BEGIN, SAVEPOINT, RELEASE, COMMIT).
  Status ExecCached(const std::string& sql);
  Status ExecCached(const CachedSql& sql);
  // A prepared statement for `sql`, prepared once per connection and cached.
  StatusOr<StatementRef> Prepare(const std::string& sql);
  StatusOr<StatementRef> Prepare(const CachedSql& sql);
  // A one-off statement for SQL composed at run time (only placeholders vary, never values).
  StatusOr<std::unique_ptr<Statement>> PrepareUncached(const std::string& sql);

  int64_t LastInsertRowId() const;
  int Changes() const;
  // Rows inserted, updated or deleted by all statements since the connection opened.
  int64_t TotalChanges() const;
  bool InTransaction() const;
  const std::string& path() const { return path_; }
  sqlite3* raw() { return db_; }

  Status Error(int rc, std::string_view context) const;
  // Counts an error found above SQLite (a record that does not parse) and returns `status`.
  Status CountError(Status status) const;

 private:
  Database(sqlite3* db, std::string path, ErrorCounter* errors)
      : db_(db), path_(std::move(path)), errors_(errors) {}

  sqlite3* db_;
  std::string path_;
  ErrorCounter* errors_;  // not owned; may be null.
  std::unordered_map<std::string, std::unique_ptr<Statement>> cache_;
  std::vector<std::unique_ptr<Statement>> by_slot_;  // CachedSql statements, by slot.
};

}  // namespace tessera::store
