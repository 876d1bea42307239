#include "store/schema.h"

#include <string>
#include <vector>

namespace tessera::store {
namespace {

// Migration i takes the store from version i to i + 1. Append; never edit a released one.
const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> migrations = {
      // 0 -> 1: jobs, queues, nodes, events. A job's spec never changes and lives apart
      // from its status, so the frequent status updates rewrite small rows on dense pages.
      R"sql(
      CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        idempotency_key TEXT,
        queue TEXT NOT NULL,
        state INTEGER NOT NULL,
        priority INTEGER NOT NULL,
        submit_time_us INTEGER NOT NULL,
        update_time_us INTEGER NOT NULL,
        status BLOB NOT NULL
      );
      CREATE TABLE job_specs (
        id INTEGER PRIMARY KEY,
        spec BLOB NOT NULL
      );
      CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs(idempotency_key)
        WHERE idempotency_key IS NOT NULL;
      CREATE INDEX jobs_live ON jobs(id) WHERE state NOT BETWEEN 6 AND 8;
      CREATE INDEX jobs_by_queue ON jobs(queue, id);
      CREATE TABLE queues (
        name TEXT PRIMARY KEY,
        spec BLOB NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE nodes (
        name TEXT PRIMARY KEY,
        cordoned INTEGER NOT NULL,
        draining INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        time_us INTEGER NOT NULL,
        job_id INTEGER,
        payload BLOB NOT NULL
      );
      )sql",
      // 1 -> 2: whether a job has finished gets a column of its own, and jobs_live is defined
      // by it. With the index defined by state, every status update (several per job) removed
      // and re-inserted the job's index entry; now only the update that finishes a job
      // touches the index.
      R"sql(
      ALTER TABLE jobs ADD COLUMN finished INTEGER NOT NULL DEFAULT 0;
      UPDATE jobs SET finished = 1 WHERE state BETWEEN 6 AND 8;
      DROP INDEX jobs_live;
      CREATE INDEX jobs_live ON jobs(id) WHERE finished = 0;
      )sql",
      // 2 -> 3: the pending jobs of each queue, counted against a queue's max_pending_jobs.
      // Only a job entering or leaving PENDING touches it, not its other status updates.
      R"sql(
      CREATE INDEX jobs_pending_by_queue ON jobs(queue) WHERE state = 1;
      )sql",
      // 3 -> 4: retention (store/retention.cc). Finished jobs in the order they finished (a
      // job's row enters the index with its finishing update and changes no more), and the
      // events of each job, so that deleting a job's events does not scan the log. The log's
      // last event as it was before retention deleted events: the next open continues the
      // sequence and the times from it, even when that event itself was deleted.
      R"sql(
      CREATE INDEX jobs_finished_by_time ON jobs(update_time_us, id) WHERE finished = 1;
      CREATE INDEX events_by_job ON events(job_id) WHERE job_id IS NOT NULL;
      CREATE TABLE event_log_end (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        seq INTEGER NOT NULL,
        time_us INTEGER NOT NULL
      );
      )sql",
      // 4 -> 5: burst spend by account (elastic/spend_ledger.h), one BurstAccountRecord each.
      R"sql(
      CREATE TABLE burst_accounts (
        queue TEXT PRIMARY KEY,
        record BLOB NOT NULL
      ) WITHOUT ROWID;
      )sql",
  };
  return migrations;
}

}  // namespace

StatusOr<int> SchemaVersion(Database& db) {
  StatusOr<std::unique_ptr<Statement>> stmt = db.PrepareUncached("PRAGMA user_version");
  if (!stmt.ok()) return stmt.status();
  StatusOr<bool> row = (*stmt)->Step();
  if (!row.ok()) return row.status();
  return static_cast<int>((*stmt)->ColumnInt(0));
}

Status Migrate(Database& db) {
  StatusOr<int> version = SchemaVersion(db);
  if (!version.ok()) return version.status();
  if (*version > kSchemaVersion) {
    return FailedPreconditionError("store '" + db.path() + "' has schema version " +
                                   std::to_string(*version) + ", newer than this build's " +
                                   std::to_string(kSchemaVersion) +
                                   "; use a newer Tessera or restore a backup");
  }
  if (*version == kSchemaVersion) return Status::Ok();
  TESSERA_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  for (int v = *version; v < kSchemaVersion; ++v) {
    Status status = db.Exec(Migrations()[v]);
    if (!status.ok()) {
      (void)db.Exec("ROLLBACK");
      return status.WithContext("migrating store to version " + std::to_string(v + 1));
    }
  }
  Status status = db.Exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  if (status.ok()) status = db.Exec("COMMIT");
  if (!status.ok()) (void)db.Exec("ROLLBACK");
  return status;
}

}  // namespace tessera::store
