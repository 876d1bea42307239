// FailedShapes: what found no room in the cluster during one backfill pass, so that later jobs
// that need at least as much are counted as misses without a placement search.
//
// Placement is monotone in what a job asks: a job that needs as many tasks, as long a time
// limit (a shorter limit may still fit on reserved nodes), the same GPUs and no less cpu or
// memory than one that failed will fail too, as long as no capacity was freed in between. On a
// full cluster most backfill candidates fail, and each failure was a search; churned jobs ask
// for cpu and memory at random, so exact twins alone would be rare. Only failures for want of
// room count: a job refused by its own queue's quota says nothing about other queues' jobs.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/job_record.h"

namespace tessera {

class FailedShapes {
 public:
  // Remembers `job`'s shape (started with at least `min_tasks` tasks); at most kMaxKept.
  void Add(const JobRecord& job, int min_tasks);
  // True when `job` asks exactly what a remembered failure asked.
  bool HasTwinOf(const JobRecord& job, int min_tasks) const;
  // True when `job` needs at least what a remembered failure needed, so it cannot fit either.
  bool Covers(const JobRecord& job, int min_tasks) const;

 private:
  static constexpr size_t kMaxKept = 64;
  struct Failed {
    TaskShape shape;
    int min_tasks = 0;
    int64_t limit_us = 0;    // 0: none, i.e. longest.
    bool same_node = false;  // all tasks on one node: harder to place than the same tasks spread.
  };
  bool Matches(const Failed& f, const JobRecord& job, int min_tasks, bool twins_only) const;

  std::vector<Failed> failed_;
};

}  // namespace tessera
