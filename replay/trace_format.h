// trace_format: picks and runs the reader for a trace file (trace_input.h, openb_workload.h)
// from tessera-replay's flags, and applies what every format shares (--time-scale, --jobs).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "openb_workload.h"
#include "trace_input.h"

namespace tessera::replay {

struct TraceRequest {
  std::string path;
  // jsonl, csv, swf or openb; empty: from the file name (.jsonl/.ndjson: jsonl, .swf: swf,
  // openb_pod_list_*.csv: openb, other .csv: csv).
  std::string format;
  std::string columns;        // csv: the column map.
  std::string queue_parent;   // csv, swf, openb: parent of the queues made from the trace.
  std::string default_queue;  // jsonl: queue of jobs that name none.
  SwfOptions swf;
  std::string openb_queues = "qos";
  std::string openb_unscheduled = "skip";
  std::string openb_data_dir;  // where short openb names are looked up; empty: the default.
  double time_scale = 1;       // arrival offsets divided by this (durations unchanged).
  int64_t max_jobs = 0;        // keep the first N arrivals; 0 = all.
};

// The format `request` names or implies. Errors: INVALID_ARGUMENT for an unknown format or a
// file name that implies none.
StatusOr<std::string> TraceFormatOf(const TraceRequest& request);

// Reads the trace. Errors: NOT_FOUND, INVALID_ARGUMENT as the readers return them.
StatusOr<Trace> ReadTrace(const TraceRequest& request);

}  // namespace tessera::replay
