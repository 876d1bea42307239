// Whether a file is a sound Tessera store, checked before anything is loaded from it (and on
// request, Scheduler::CheckStore): not an empty file, a SQLite database with a Tessera schema
// version, and passing SQLite's quick or full integrity check. A damaged store is refused with a
// message that names the file and the first problems found, rather than failing requests later.
#pragma once

#include <string>

#include "store/sqlite.h"
#include "tessera/options.h"
#include "tessera/status.h"

namespace tessera::store {

// Errors: FAILED_PRECONDITION when the file at `path` exists and is empty: a store never is
// (a new one is made whole before it takes its name), so the file was truncated or copied
// badly, and starting afresh on it would silently lose every job.
Status CheckNotEmpty(const std::string& path);

// Errors: FAILED_PRECONDITION when `db` is not a SQLite database or has no Tessera schema
// version (another program's database).
Status CheckIsStore(Database& db);

// Runs SQLite's quick_check or integrity_check on `db`; kNone checks nothing. A failure counts
// as a store error of `db`.
// Errors: FAILED_PRECONDITION listing the first problems; UNAVAILABLE when it cannot be read.
Status CheckIntegrity(Database& db, StoreCheck level);

}  // namespace tessera::store
