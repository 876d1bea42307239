#include "store/store_check.h"

#include <filesystem>

#include "store/schema.h"

namespace tessera::store {
namespace {

// Problems listed in a refusal; SQLite finds them all, the message needs a few.
constexpr int kProblemsReported = 5;

}  // namespace

Status CheckNotEmpty(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > 0) return Status::Ok();
  return FailedPreconditionError("store '" + path +
                                 "' is an empty file (0 bytes), not a store: it was truncated "
                                 "or copied incompletely; restore a backup, or remove the file "
                                 "to start a new, empty store");
}

Status CheckIsStore(Database& db) {
  const std::string what = "store '" + db.path() + "'";
  if (Status s = db.Exec("SELECT count(*) FROM sqlite_master"); !s.ok()) {
    return s.WithContext("opening " + what);
  }
  TESSERA_ASSIGN_OR_RETURN(int version, SchemaVersion(db));
  if (version == 0) {
    return FailedPreconditionError(what +
                                   " is not a Tessera store (a SQLite database without a schema "
                                   "version); point store.path at another file");
  }
  return Status::Ok();
}

Status CheckIntegrity(Database& db, StoreCheck level) {
  if (level == StoreCheck::kNone) return Status::Ok();
  const bool full = level == StoreCheck::kFull;
  const std::string check = full ? "integrity check" : "quick check";
  const std::string what = "store '" + db.path() + "' fails SQLite's " + check;
  TESSERA_ASSIGN_OR_RETURN(
      std::unique_ptr<Statement> s,
      db.PrepareUncached(std::string(full ? "PRAGMA integrity_check(" : "PRAGMA quick_check(") +
                         std::to_string(kProblemsReported) + ")"));
  std::string problems;
  while (true) {
    StatusOr<bool> row = s->Step();
    if (!row.ok()) {
      // SQLite gives up on some damage instead of listing it.
      if (row.status().code() == StatusCode::kFailedPrecondition) {
        return FailedPreconditionError(what + ": " + row.status().message() +
                                       "; restore a backup (tessctl restore)");
      }
      return row.status().WithContext("checking store '" + db.path() + "'");
    }
    if (!*row) break;
    const std::string_view line = s->ColumnText(0);
    if (line == "ok") return Status::Ok();
    problems += problems.empty() ? "" : "; ";
    problems += line;
  }
  return db.CountError(
      FailedPreconditionError(what + ": " + problems + "; restore a backup (tessctl restore)"));
}

}  // namespace tessera::store
