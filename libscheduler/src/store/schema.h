// The store's schema and its migrations. PRAGMA user_version holds the schema version; Migrate
// applies every later migration in one transaction, so a store is never half-migrated.
#pragma once

#include "store/sqlite.h"
#include "tessera/status.h"

namespace tessera::store {

inline constexpr int kSchemaVersion = 5;

// Job states stored in the jobs.state column are the v1::JobState numbers; 6..8 are the
// terminal ones (SUCCEEDED, FAILED, CANCELLED), and a job in one has jobs.finished = 1 (a
// terminal state is never left). This condition selects unfinished jobs, exactly as the partial
// index jobs_live is defined, so queries using it can use the index.
inline constexpr const char* kUnfinishedJobSql = "finished = 0";
inline constexpr bool IsFinishedState(int state) { return state >= 6 && state <= 8; }

// PRAGMA user_version of `db`: 0 for a database no Tessera store has initialised.
StatusOr<int> SchemaVersion(Database& db);

// Brings `db` to kSchemaVersion.
// Errors: FAILED_PRECONDITION when the store is newer than this build or corrupt; the
// SQLite-derived codes otherwise.
Status Migrate(Database& db);

}  // namespace tessera::store
