// RestoreStore (tessera/restore.h): check a backup, save the current store, copy the backup in
// and rename it over the store, all while holding the locks of the old store and the new one.
#include "tessera/restore.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "store/schema.h"
#include "store/sqlite.h"
#include "store/store_lock.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// Pages copied per step of the SQLite backup: progress about every 4 MiB with 4 KiB pages.
constexpr int kPagesPerStep = 1024;

// The checks a backup must pass before it replaces anything.
Status CheckBackup(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<store::Database> db, store::Database::Open(path));
  const std::string what = "backup '" + path + "'";
  if (Status s = db->Exec("SELECT count(*) FROM sqlite_master"); !s.ok()) {
    return FailedPreconditionError(what + " is not a SQLite database: " + s.message());
  }
  TESSERA_ASSIGN_OR_RETURN(int version, store::SchemaVersion(*db));
  if (version == 0) {
    return FailedPreconditionError(what + " is not a Tessera store (it has no schema version)");
  }
  if (version > store::kSchemaVersion) {
    return FailedPreconditionError(
        what + " has schema version " + std::to_string(version) + ", newer than this build's " +
        std::to_string(store::kSchemaVersion) + "; restore it with a newer Tessera");
  }
  TESSERA_ASSIGN_OR_RETURN(auto check, db->PrepareUncached("PRAGMA integrity_check(1)"));
  TESSERA_ASSIGN_OR_RETURN(bool row, check->Step());
  const std::string verdict = row ? std::string(check->ColumnText(0)) : "no answer";
  if (verdict != "ok") {
    return FailedPreconditionError(what + " fails SQLite's integrity check: " + verdict);
  }
  return Status::Ok();
}

// Copies the database at `from` (with its WAL) to a new file `to` with SQLite's backup API.
Status CopyDatabase(const std::string& from, const std::string& to, const std::string& phase,
                    const RestoreOptions& options) {
  std::error_code ignored;
  fs::remove(to, ignored);
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<store::Database> source, store::Database::Open(from));
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<store::Database> dest, store::Database::Open(to));
  sqlite3_backup* backup = sqlite3_backup_init(dest->raw(), "main", source->raw(), "main");
  if (backup == nullptr) {
    return dest->Error(sqlite3_errcode(dest->raw()), phase + ": copying '" + from + "'");
  }
  int rc = SQLITE_OK;
  while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
    if (rc != SQLITE_OK) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rc = sqlite3_backup_step(backup, kPagesPerStep);
    if (options.progress) {
      const int64_t total = sqlite3_backup_pagecount(backup);
      options.progress({phase, total - sqlite3_backup_remaining(backup), total});
    }
  }
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    dest.reset();
    fs::remove(to, ignored);
    return store::SqliteStatus(rc, sqlite3_errstr(rc), phase + ": copying '" + from + "'");
  }
  return Status::Ok();
}

// Makes a rename in `dir` durable.
void SyncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

Status RestoreStore(const std::string& backup_path, const std::string& store_path,
                    const RestoreOptions& options) {
  if (backup_path.empty()) return InvalidArgumentError("backup: path must not be empty");
  if (store_path.empty()) return InvalidArgumentError("store: path must not be empty");
  std::error_code ec;
  if (!fs::is_regular_file(backup_path, ec)) {
    return NotFoundError("backup '" + backup_path + "' does not exist or is not a file");
  }
  if (backup_path == store_path || fs::equivalent(backup_path, store_path, ec)) {
    return InvalidArgumentError("backup: must differ from the store '" + store_path + "'");
  }
  // The lock is on the file, so a store that does not exist yet is locked in the form of the
  // copy that will take its name.
  std::unique_ptr<store::StoreLock> current_lock;
  if (auto lock = store::StoreLock::Acquire(store_path); lock.ok()) {
    current_lock = std::move(*lock);
  } else if (lock.status().code() != StatusCode::kNotFound) {
    return lock.status();
  }
  TESSERA_RETURN_IF_ERROR(CheckBackup(backup_path));

  // The current store is saved under a temporary name first and takes the .pre-restore name
  // only at the end: the backup may be the previous .pre-restore (undoing a restore).
  const std::string saved = store_path + ".pre-restore";
  const std::string saving = saved + ".partial";
  const bool save_current = current_lock && !options.discard_current;
  if (save_current) {
    TESSERA_RETURN_IF_ERROR(CopyDatabase(store_path, saving, "saving the current store", options));
  }
  const std::string partial = store_path + ".restore-partial";
  Status copied = CopyDatabase(backup_path, partial, "restoring", options);
  StatusOr<std::unique_ptr<store::StoreLock>> restored_lock =
      copied.ok() ? store::StoreLock::Acquire(partial) : copied;
  if (!restored_lock.ok()) {
    fs::remove(saving, ec);
    fs::remove(partial, ec);
    return restored_lock.status();
  }

  // The old store's WAL must go before the new file takes its name: SQLite would replay it onto
  // the restored pages. A crash between the two leaves the old main file without its WAL, which
  // the saved copy holds in full.
  for (const char* suffix : {"-wal", "-shm"}) {
    fs::remove(store_path + suffix, ec);
    if (ec) {
      return UnavailableError("store: cannot remove '" + store_path + suffix +
                              "': " + ec.message());
    }
  }
  if (current_lock) {
    fs::rename(partial, store_path, ec);
    if (ec) {
      return UnavailableError("store: cannot rename '" + partial + "' to '" + store_path +
                              "': " + ec.message());
    }
  } else if (Status linked = store::StoreLock::LinkNew(partial, store_path); !linked.ok()) {
    fs::remove(partial, ec);
    if (linked.code() == StatusCode::kAlreadyExists) {
      return UnavailableError("store '" + store_path +
                              "' was created while restoring; stop its scheduler and restore "
                              "again");
    }
    return linked;
  }
  if (save_current) {
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(saved + suffix, ec);
    fs::rename(saving, saved, ec);
    if (ec) {
      return UnavailableError("store restored, but the previous store stays in '" + saving +
                              "': " + ec.message());
    }
  }
  SyncDirectory(fs::path(store_path).parent_path());
  return Status::Ok();
}

}  // namespace tessera
