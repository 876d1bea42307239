// The store's schema and its migrations. PRAGMA user_version holds the schema version; Migrate
// applies every later migration in one transaction, so a store is never half-migrated.
#pragma once

#include "store/sqlite.h"
#include "tessera/status.h"

namespace tessera::store {

inline constexpr int kSchemaVersion = 1;

// Job states stored in the jobs.state column are the v1::JobState numbers. These are the
// terminal ones, which the partial index of live jobs leaves out.
inline constexpr const char* kTerminalStatesSql = "(6, 7, 8)";

// Brings `db` to kSchemaVersion.
// Errors: FAILED_PRECONDITION when the store is newer than this build or corrupt; the
// SQLite-derived codes otherwise.
Status Migrate(Database& db);

}  // namespace tessera::store
