// replay_report: what tessera-replay prints about a replay: the JSON summary on stdout (every
// field defined in docs/replay.md, "Output") and the per-job CSV of --jobs-csv.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay_run.h"
#include "trace_input.h"

namespace tessera::replay {

// The headline figures of one set of jobs (the whole replay, or one queue): the metrics of
// SummarizeReplay plus finish-time fairness over the finished jobs among them.
nlohmann::json MetricsJson(const ReplayMetrics& metrics, const std::vector<double>& rho);

// The whole summary: what was read (trace, bad rows), the cluster, the headline figures, the
// scheduler's counters, replay speed, and "queues": the same figures per leaf queue that got
// jobs. `lost_gpu_hours` is the scheduler's own count of GPU work preemption threw away
// (SchedulerStats.lost_gpu_seconds); it is not broken down per queue.
nlohmann::json SummaryJson(const Trace& trace, const RunOutcome& run);

// One line per job of the trace, in arrival order, with a header:
//   index,id,name,queue,state,submit_s,start_s,end_s,wait_s,jct_s,duration_s,gpu_milli,
//   attempts,preemptions,rho
// Times are seconds of virtual time since the first arrival; empty where not reached (start_s
// of a job that never started, rho of one that did not finish). Names are quoted.
void WriteJobsCsv(std::ostream& out, const Trace& trace, const RunOutcome& run);

}  // namespace tessera::replay
