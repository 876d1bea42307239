// openb_workload: an openb pod list (openb_pod_csv.h) turned into timed job arrivals for a
// virtual-time replay (trace_replay.h). Every pod becomes a one-task job, submitted at its
// creation_time to the leaf queue of its tenant (by default its QoS class), that runs for its
// real runtime in the trace (deletion_time - scheduled_time). The scheduler then decides when
// and where each starts, so waits and completion times are the scheduler's, not the trace's; the
// trace's own waits (scheduled_time - creation_time) are kept for comparison.
//
// Pods the trace never scheduled (pod_phase Pending, no scheduled_time: 897 of 8152 in default)
// are skipped by default and counted: the trace shows how long their owners waited before giving
// up, not how long they would have run. unscheduled = "run" submits them anyway with runtime
// deletion_time - creation_time. Pods without a deletion_time have no runtime and are skipped
// and counted.
//
// Requests the API refuses are raised to its minimum and counted (requests_raised): one pod in
// default asks for 0 MiB of memory, which becomes 1 MiB.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "openb_pod_csv.h"
#include "tessera/status.h"
#include "trace_replay.h"

namespace tessera::replay {

struct OpenbWorkloadOptions {
  int64_t jobs = 0;                  // take only the first N rows; 0 = all.
  std::string queues = "qos";        // qos: a leaf queue per QoS class; single: one queue "all".
  std::string unscheduled = "skip";  // pods the trace never scheduled: skip | run.
  double time_scale = 1;             // divide arrival times by this (runtimes unchanged).
  // Prefix of every queue name ("" = top level); e.g. "openb/" puts them under queue openb.
  std::string queue_prefix;
};

// The pods turned into jobs, and what was left out or changed on the way.
struct OpenbWorkload {
  std::vector<ReplayJob> jobs;      // sorted by arrival; file order among equal arrivals.
  std::vector<std::string> queues;  // leaf queues to create, in order.
  int64_t trace_rows = 0;
  int64_t selected = 0;             // the first `jobs` rows (all when 0).
  int64_t skipped_unscheduled = 0;  // never scheduled in the trace.
  int64_t skipped_no_deletion = 0;  // no deletion_time, so no runtime.
  int64_t requests_raised = 0;      // cpu or memory of 0 raised to 1.
  int64_t out_of_order = 0;         // rows created before the row above them (sorted here).
  // The trace's own waits (scheduled - creation) of the submitted pods it scheduled.
  std::vector<double> trace_wait_s;
};

// Errors: INVALID_ARGUMENT when the list lacks the time columns (the multigpu*.csv files do),
// or for an unknown `queues` or `unscheduled` mode.
StatusOr<OpenbWorkload> MakeOpenbWorkload(const std::vector<OpenbPod>& pods,
                                          const OpenbWorkloadOptions& options);

}  // namespace tessera::replay
