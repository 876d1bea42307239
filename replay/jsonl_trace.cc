// The native trace format of tessera-replay: one JSON object per line,
//
//   {"submit": 0, "duration_s": 3600, "job": {"queue": "research/vision", "task": {"gpuCount": 2}}}
//
//   submit      seconds (any origin) or an ISO 8601 string; required.
//   duration_s  how long the job runs once started, > 0; required unless the job sets
//               simulation.durationMs, which it then overrides.
//   job         a tessera.v1.JobSpec in protobuf's JSON mapping (camelCase or the proto
//               names), exactly what tessctl submit and POST /v1/jobs accept; optional ({}).
//
// Any other key, a JobSpec field that does not exist, or a value of the wrong type makes the
// row bad (counted, reported by line). Blank lines and lines starting with '#' are skipped.
#include <fstream>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "trace_input.h"

namespace tessera::replay {
namespace {

using Json = nlohmann::json;

// One line to a row; the error says what is wrong with it.
Status ReadRow(const std::string& line, const std::string& default_queue, double* submit_s,
               v1::JobSpec* spec) {
  const Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (row.is_discarded()) return InvalidArgumentError("not valid JSON");
  if (!row.is_object()) return InvalidArgumentError("not a JSON object");
  for (const auto& [key, value] : row.items()) {
    if (key != "submit" && key != "duration_s" && key != "job") {
      return InvalidArgumentError("unknown key '" + key + "' (known: submit, duration_s, job)");
    }
  }
  if (!row.contains("submit")) return InvalidArgumentError("submit: required");
  const Json& submit = row["submit"];
  if (submit.is_number()) {
    *submit_s = submit.get<double>();
  } else if (submit.is_string()) {
    TESSERA_ASSIGN_OR_RETURN(*submit_s, ParseTraceSeconds(submit.get<std::string>()));
  } else {
    return InvalidArgumentError("submit: must be a number of seconds or an ISO 8601 string");
  }
  if (row.contains("job")) {
    if (!row["job"].is_object()) return InvalidArgumentError("job: must be a JSON object");
    const auto parsed = google::protobuf::util::JsonStringToMessage(row["job"].dump(), spec);
    if (!parsed.ok()) {
      return InvalidArgumentError("job: " + std::string(parsed.message()));
    }
  }
  if (row.contains("duration_s")) {
    if (!row["duration_s"].is_number()) return InvalidArgumentError("duration_s: not a number");
    TESSERA_RETURN_IF_ERROR(SetDurationSeconds(row["duration_s"].get<double>(), spec));
  } else if (spec->simulation().duration_ms() <= 0) {
    return InvalidArgumentError("duration_s: required (or job.simulation.durationMs)");
  }
  if (spec->queue().empty()) spec->set_queue(default_queue);
  // A queue the scheduler could not create makes the row bad here, where its line is known.
  const std::string& queue = spec->queue();
  size_t start = 0;
  while (true) {
    const size_t slash = queue.find('/', start);
    const std::string segment =
        queue.substr(start, slash == std::string::npos ? slash : slash - start);
    if (SanitizeQueueSegment(segment) != segment) {
      return InvalidArgumentError("job.queue: '" + queue +
                                  "' is not a queue path ('/'-separated segments of letters, "
                                  "digits, '.', '_' or '-', each starting with a letter or digit)");
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Trace> ReadJsonlTrace(const std::string& path, const std::string& default_queue) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot open trace '" + path + "'");
  TraceBuilder builder;
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    builder.CountRow();
    double submit_s = 0;
    v1::JobSpec spec;
    if (Status status = ReadRow(line, default_queue, &submit_s, &spec); !status.ok()) {
      builder.Bad(number, status.message());
      continue;
    }
    builder.Add(submit_s, std::move(spec));
  }
  return builder.Finish();
}

}  // namespace tessera::replay
