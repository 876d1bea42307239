// html_report: a self-contained HTML page (inline SVG, no scripts, nothing fetched) about one or
// more replays of the same trace, side by side: the headline figures in a table, then per
// replay GPU utilisation over time, each queue's share of the cluster's GPUs over time (stacked),
// and the wait-time CDF of each queue (docs/replay.md, "HTML report").
//
// The curves come from the jobs' start and end times, averaged over 200 equal intervals of the
// replay, so they are exact averages, not point samples. They show each job's last attempt
// only (ReplayedJob keeps no earlier ones).
//
// Thread safety: pure functions.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "replay_run.h"
#include "trace_input.h"

namespace tessera::replay {

struct ReportRun {
  std::string label;       // e.g. the config file's name.
  const RunOutcome* run;   // not owned.
  nlohmann::json summary;  // SummaryJson of the run.
};

void WriteHtmlReport(std::ostream& out, const std::string& title, const Trace& trace,
                     const std::vector<ReportRun>& runs);

}  // namespace tessera::replay
