// Retention: finished jobs past Options::retention's bounds are deleted with their specs and
// events, in batches of bounded size, each one write of the store's writer (never the decision
// strand). The jobs go in the order they finished (the partial index jobs_finished_by_time), so
// the time bound and the count bound both take a prefix of that order, and their union is the
// longer prefix.
#include <algorithm>
#include <vector>

#include "store/write_transaction.h"

namespace tessera::store {
namespace {

const CachedSql kOldestFinished(
    "SELECT id, update_time_us FROM jobs INDEXED BY jobs_finished_by_time WHERE finished = 1 "
    "ORDER BY update_time_us, id LIMIT ?");
const CachedSql kCountFinished(
    "SELECT COUNT(*) FROM jobs INDEXED BY jobs_finished_by_time WHERE finished = 1");
// Before events are deleted: the log's last event, which the next open continues from.
const CachedSql kRememberLogEnd(
    "INSERT OR REPLACE INTO event_log_end (id, seq, time_us) "
    "SELECT 1, seq, time_us FROM events ORDER BY seq DESC LIMIT 1");
const CachedSql kDeleteEvents("DELETE FROM events INDEXED BY events_by_job WHERE job_id = ?");
const CachedSql kDeleteSpec("DELETE FROM job_specs WHERE id = ?");
const CachedSql kDeleteJob("DELETE FROM jobs WHERE id = ? AND finished = 1");

}  // namespace

StatusOr<int64_t> WriteTransaction::DeleteFinishedJobs(int64_t finished_before_us,
                                                       int64_t keep_finished, int limit) {
  if (limit <= 0) return int64_t{0};
  int64_t excess = 0;  // finished jobs beyond the count bound.
  if (keep_finished >= 0) {
    TESSERA_ASSIGN_OR_RETURN(StatementRef count, db_.Prepare(kCountFinished));
    TESSERA_ASSIGN_OR_RETURN(bool row, count->Step());
    if (row) excess = std::max<int64_t>(0, count->ColumnInt(0) - keep_finished);
  }

  std::vector<int64_t> doomed;
  {
    TESSERA_ASSIGN_OR_RETURN(StatementRef oldest, db_.Prepare(kOldestFinished));
    oldest->BindInt(1, limit);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(bool row, oldest->Step());
      if (!row) break;
      const bool past_time = oldest->ColumnInt(1) < finished_before_us;
      const bool past_count = static_cast<int64_t>(doomed.size()) < excess;
      if (!past_time && !past_count) break;  // every later job finished later still.
      doomed.push_back(oldest->ColumnInt(0));
    }
  }

  if (doomed.empty()) return int64_t{0};
  {
    TESSERA_ASSIGN_OR_RETURN(StatementRef end, db_.Prepare(kRememberLogEnd));
    TESSERA_RETURN_IF_ERROR(end->Run());
  }
  for (int64_t id : doomed) {
    {
      TESSERA_ASSIGN_OR_RETURN(StatementRef events, db_.Prepare(kDeleteEvents));
      events->BindInt(1, id);
      TESSERA_RETURN_IF_ERROR(events->Run());
    }
    {
      TESSERA_ASSIGN_OR_RETURN(StatementRef spec, db_.Prepare(kDeleteSpec));
      spec->BindInt(1, id);
      TESSERA_RETURN_IF_ERROR(spec->Run());
    }
    TESSERA_ASSIGN_OR_RETURN(StatementRef job, db_.Prepare(kDeleteJob));
    job->BindInt(1, id);
    TESSERA_RETURN_IF_ERROR(job->Run());
  }
  return static_cast<int64_t>(doomed.size());
}

}  // namespace tessera::store
