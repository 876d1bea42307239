// Implementation of the trace format dispatch (trace_format.h).
#include "trace_format.h"

#include <cmath>
#include <filesystem>

namespace tessera::replay {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// An openb pod list as a Trace. ReadOpenbPods refuses a file with a bad row as a whole (naming
// file:line), so an openb Trace has no bad rows; what MakeOpenbWorkload skips or changes is in
// its notes.
StatusOr<Trace> ReadOpenbTrace(const TraceRequest& request) {
  TESSERA_ASSIGN_OR_RETURN(
      std::string path,
      ResolveOpenbFile(request.path, OpenbDataDir(request.openb_data_dir), "openb_pod_list_"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<OpenbPod> pods, ReadOpenbPods(path));
  OpenbWorkloadOptions options;
  options.queues = request.openb_queues;
  options.unscheduled = request.openb_unscheduled;
  options.queue_prefix = request.queue_parent.empty() ? "" : request.queue_parent + "/";
  TESSERA_ASSIGN_OR_RETURN(OpenbWorkload w, MakeOpenbWorkload(pods, options));
  Trace trace;
  trace.rows = w.trace_rows;
  trace.out_of_order = w.out_of_order;
  trace.queues = w.queues;
  trace.jobs = std::move(w.jobs);
  // Offsets from the first arrival, as every format has them.
  if (!trace.jobs.empty()) {
    const int64_t first = trace.jobs.front().submit_offset_us;
    trace.first_submit_s = static_cast<double>(first) / 1e6;
    for (ReplayJob& job : trace.jobs) job.submit_offset_us -= first;
  }
  trace.notes["skipped_unscheduled"] = w.skipped_unscheduled;
  trace.notes["skipped_no_deletion"] = w.skipped_no_deletion;
  trace.notes["requests_raised"] = w.requests_raised;
  return trace;
}

}  // namespace

StatusOr<std::string> TraceFormatOf(const TraceRequest& request) {
  if (!request.format.empty()) {
    for (const char* known : {"jsonl", "csv", "swf", "openb"}) {
      if (request.format == known) return request.format;
    }
    return InvalidArgumentError("--format: unknown format '" + request.format +
                                "'; known: jsonl, csv, swf, openb");
  }
  const std::string name = std::filesystem::path(request.path).filename().string();
  if (EndsWith(name, ".jsonl") || EndsWith(name, ".ndjson")) return std::string("jsonl");
  if (EndsWith(name, ".swf")) return std::string("swf");
  if (name.rfind("openb_pod_list_", 0) == 0) return std::string("openb");
  if (EndsWith(name, ".csv")) return std::string("csv");
  return InvalidArgumentError("cannot tell the format of '" + request.path +
                              "' from its name; give --format jsonl, csv, swf or openb");
}

StatusOr<Trace> ReadTrace(const TraceRequest& request) {
  if (!(request.time_scale > 0)) return InvalidArgumentError("--time-scale: must be > 0");
  if (request.max_jobs < 0) return InvalidArgumentError("--jobs: must be >= 0");
  TESSERA_ASSIGN_OR_RETURN(std::string format, TraceFormatOf(request));
  Trace trace;
  if (format == "jsonl") {
    TESSERA_ASSIGN_OR_RETURN(trace, ReadJsonlTrace(request.path, request.default_queue));
  } else if (format == "csv") {
    TESSERA_ASSIGN_OR_RETURN(CsvColumns columns, ParseCsvColumns(request.columns));
    TESSERA_ASSIGN_OR_RETURN(trace, ReadCsvTrace(request.path, columns, request.queue_parent));
  } else if (format == "swf") {
    TESSERA_ASSIGN_OR_RETURN(trace, ReadSwfTrace(request.path, request.swf, request.queue_parent));
  } else {
    TESSERA_ASSIGN_OR_RETURN(trace, ReadOpenbTrace(request));
  }
  if (request.max_jobs > 0 && static_cast<int64_t>(trace.jobs.size()) > request.max_jobs) {
    trace.notes["left_out_by_jobs_limit"] =
        static_cast<int64_t>(trace.jobs.size()) - request.max_jobs;
    trace.jobs.resize(static_cast<size_t>(request.max_jobs));
  }
  if (request.time_scale != 1) {
    for (ReplayJob& job : trace.jobs) {
      job.submit_offset_us =
          std::llround(static_cast<double>(job.submit_offset_us) / request.time_scale);
    }
  }
  return trace;
}

}  // namespace tessera::replay
