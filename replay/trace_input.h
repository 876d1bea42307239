// trace_input: what every trace reader of tessera-replay shares. A reader turns a file (JSONL,
// CSV through a column map, SWF, an openb pod list: docs/replay.md) into a Trace: job arrivals in
// order, with offsets from the first arrival, ready for ReplayTrace (trace_replay.h), plus the
// leaf queues they name and an account of the rows it refused.
//
// Bad rows are never dropped silently: each is counted, and the first few are kept with their
// line number and the reason, so the report can say "3 bad rows; line 7: duration_s: not a
// number 'abc'". A reader fails as a whole (a Status) only when the file cannot be read at all
// or its header is unusable.
//
// Thread safety: values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/status.h"
#include "tessera/v1/job.pb.h"
#include "trace_replay.h"

namespace tessera::replay {

// How many bad rows a Trace keeps with their line and reason; the rest are only counted.
inline constexpr size_t kBadRowsKept = 20;

struct BadRow {
  int64_t line = 0;  // 1-based line number in the file.
  std::string reason;
};

struct Trace {
  std::vector<ReplayJob> jobs;      // sorted by arrival; file order among equal arrivals.
  std::vector<std::string> queues;  // leaf queues the jobs name, in order of first use.
  int64_t rows = 0;                 // data rows read (good and bad; not comments or headers).
  int64_t bad_rows = 0;
  std::vector<BadRow> first_bad;  // the first kBadRowsKept bad rows.
  int64_t out_of_order = 0;       // rows that arrive before the row above them (sorted here).
  double first_submit_s = 0;      // the earliest arrival, in the file's own seconds.
  // What a reader changed or skipped on the way, by name, for the report (e.g. openb's
  // "skipped_unscheduled"); reader-specific, documented with each format.
  std::map<std::string, int64_t> notes;
};

// Collects rows in file order and makes the Trace: Add a good row's arrival (in the file's
// seconds, any origin) and spec, or Bad a refused row; Finish sorts by arrival and makes offsets
// from the first.
class TraceBuilder {
 public:
  void Add(double submit_s, v1::JobSpec spec);
  void Bad(int64_t line, std::string reason);
  void CountRow() { ++trace_.rows; }
  void Note(const std::string& name, int64_t count = 1) { trace_.notes[name] += count; }
  Trace Finish();

 private:
  struct Row {
    double submit_s;
    v1::JobSpec spec;
  };
  std::vector<Row> rows_;
  Trace trace_;
};

// Seconds in a trace: a plain number ("12", "12.5", "-3") or an ISO 8601 date and time in UTC
// or with an offset ("2023-11-14T10:00:00Z", "2023-11-14 10:00:00.250",
// "2023-11-14T12:00:00+02:00"; no zone means UTC), read as seconds since the Unix epoch. Errors:
// INVALID_ARGUMENT naming the text.
StatusOr<double> ParseTraceSeconds(const std::string& text);

// A number of `field`: the whole text must parse. Errors: INVALID_ARGUMENT "<field>: ...".
StatusOr<double> ParseNumber(const std::string& text, const std::string& field);
StatusOr<int64_t> ParseInteger(const std::string& text, const std::string& field);

// One queue path segment made valid: characters other than letters, digits, '.', '_' and '-'
// become '-', a leading character that is not a letter or digit gets "q" in front, at most 63
// characters are kept, and an empty name becomes "unknown". Distinct names may meet in one
// segment ("a b" and "a-b"); the replay then puts both in one queue.
std::string SanitizeQueueSegment(const std::string& raw);

// `parent` + "/" + segment, or the segment alone when `parent` is empty.
std::string JoinQueue(const std::string& parent, const std::string& segment);

// The simulated run time of a job from seconds: at least 1 ms (0 would mean "runs until
// cancelled"). Errors: INVALID_ARGUMENT when `seconds` is not > 0.
Status SetDurationSeconds(double seconds, v1::JobSpec* spec);

// The readers, one per format (docs/replay.md says what each reads).

// Native: one JSON object per line, {"submit": <seconds or ISO 8601>, "duration_s": <seconds>,
// "job": <a tessera.v1.JobSpec in protobuf JSON>}. Blank lines and lines starting with '#' are
// skipped. A job without a queue goes to `default_queue`.
StatusOr<Trace> ReadJsonlTrace(const std::string& path, const std::string& default_queue);

// CSV with a header line. `columns` maps a trace field to the header name that holds it
// ("submit=timestamp,duration_s=duration,gpus=num_gpus,queue=cluster"); fields not mapped are
// looked for under their own name. Fields: submit, duration_s (required), gpus, gpu_milli,
// cpu_milli, memory_mib, tasks, priority_class, queue, user, name. The queue of a row is
// `queue_parent`/<queue>/<user>, each segment sanitised, leaving out what is not given ("all"
// when neither is). Errors: INVALID_ARGUMENT for a bad map, or a header lacking a mapped column.
struct CsvColumns {
  std::map<std::string, std::string> column_of;  // field -> header name.
};
StatusOr<CsvColumns> ParseCsvColumns(const std::string& spec);
StatusOr<Trace> ReadCsvTrace(const std::string& path, const CsvColumns& columns,
                             const std::string& queue_parent);

// SWF, the Standard Workload Format of the Parallel Workloads Archive: 18 whitespace-separated
// fields per job, ';' comment lines. Each job asks for `gpus_per_processor` GPUs per allocated
// processor (0: processors become cpu cores), runs for its run time, and goes to queue
// `queue_parent`/u<user id> (or q<queue number> with by_queue). See swf_trace.cc.
struct SwfOptions {
  int gpus_per_processor = 1;               // >= 0
  bool by_queue = false;                    // queue per SWF queue number instead of per user.
  int64_t memory_mib_per_processor = 1024;  // when the trace gives no memory.
};
StatusOr<Trace> ReadSwfTrace(const std::string& path, const SwfOptions& options,
                             const std::string& queue_parent);

}  // namespace tessera::replay
