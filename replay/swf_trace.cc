// SWF, the Standard Workload Format of the Parallel Workloads Archive (version 2.2,
// https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): one job per line, 18
// whitespace-separated numeric fields, -1 where a value is unknown; lines starting with ';' are
// header comments. The fields, 1-based, and what the replay makes of them:
//
//    1 job number              the job's name ("swf-<n>")
//    2 submit time (s)         arrival
//    3 wait time               ignored (the replay decides the waits)
//    4 run time (s)            duration; -1 makes the row bad; 0 ("under 0.5 s") runs 1 ms
//    5 allocated processors    tasks (one per processor); -1: field 8 instead
//    6 average CPU time used   ignored
//    7 used memory (KB/proc)   memory per task when field 10 is -1
//    8 requested processors    tasks when field 5 is -1; both -1 makes the row bad
//    9 requested time (s)      time_limit_s (backfill uses it), when > 0
//   10 requested memory (KB/proc)  memory per task
//   11 status                  ignored (a cancelled job that ran still used its time)
//   12 user id                 queue <parent>/u<id> (unknown: u-unknown)
//   13 group id                ignored
//   14 executable number       ignored
//   15 queue number            queue <parent>/q<n> with SwfOptions::by_queue
//   16 partition number        ignored
//   17 preceding job number    ignored (no dependencies: every job arrives at its submit time)
//   18 think time              ignored
//
// An SWF processor becomes one task with gpus_per_processor GPUs and one core (1000 milli-cpu);
// with gpus_per_processor 0 the tasks are CPU-only. The tasks of a job start together (a gang),
// as the processors of a parallel job do.
#include <fstream>
#include <sstream>

#include "trace_input.h"

namespace tessera::replay {
namespace {

constexpr int kSwfFields = 18;

Status ReadRow(const std::vector<std::string>& f, const SwfOptions& options,
               const std::string& queue_parent, double* submit_s, v1::JobSpec* spec) {
  if (f.size() != kSwfFields) {
    return InvalidArgumentError(std::to_string(f.size()) + " fields, SWF has 18");
  }
  std::vector<double> v(kSwfFields);
  static const char* kNames[kSwfFields] = {"job number",
                                           "submit time",
                                           "wait time",
                                           "run time",
                                           "allocated processors",
                                           "average cpu time",
                                           "used memory",
                                           "requested processors",
                                           "requested time",
                                           "requested memory",
                                           "status",
                                           "user id",
                                           "group id",
                                           "executable number",
                                           "queue number",
                                           "partition number",
                                           "preceding job",
                                           "think time"};
  for (int i = 0; i < kSwfFields; ++i) {
    TESSERA_ASSIGN_OR_RETURN(v[i], ParseNumber(f[i], std::string("field ") + std::to_string(i + 1) +
                                                         " (" + kNames[i] + ")"));
  }
  *submit_s = v[1];
  if (v[1] < 0) return InvalidArgumentError("field 2 (submit time): unknown (-1)");
  if (v[3] < 0) return InvalidArgumentError("field 4 (run time): unknown (-1)");
  spec->mutable_simulation()->set_duration_ms(
      std::max<int64_t>(1, static_cast<int64_t>(v[3] * 1e3 + 0.5)));
  const double processors = v[4] > 0 ? v[4] : v[7];
  if (!(processors > 0)) {
    return InvalidArgumentError("fields 5 and 8 (processors): neither is known");
  }
  if (processors != static_cast<double>(static_cast<int32_t>(processors))) {
    return InvalidArgumentError("processors: not a whole number " + f[v[4] > 0 ? 4 : 7]);
  }
  spec->set_name("swf-" + f[0]);
  spec->set_tasks(static_cast<int32_t>(processors));
  v1::TaskResources* task = spec->mutable_task();
  task->set_cpu_milli(1000);
  const double memory_kb = v[9] > 0 ? v[9] : v[6];
  task->set_memory_mib(memory_kb > 0 ? std::max<int64_t>(1, static_cast<int64_t>(memory_kb / 1024))
                                     : options.memory_mib_per_processor);
  if (options.gpus_per_processor > 0) {
    task->set_gpu_count(options.gpus_per_processor);
  }
  if (v[8] > 0) spec->set_time_limit_s(static_cast<int64_t>(v[8] + 0.5));
  std::string segment;
  if (options.by_queue) {
    segment = v[14] >= 0 ? "q" + f[14] : "q-unknown";
  } else {
    segment = v[11] >= 0 ? "u" + f[11] : "u-unknown";
  }
  spec->set_queue(JoinQueue(queue_parent, SanitizeQueueSegment(segment)));
  return Status::Ok();
}

}  // namespace

StatusOr<Trace> ReadSwfTrace(const std::string& path, const SwfOptions& options,
                             const std::string& queue_parent) {
  if (options.gpus_per_processor < 0) {
    return InvalidArgumentError("--swf-gpus-per-processor: must be >= 0");
  }
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot open trace '" + path + "'");
  TraceBuilder builder;
  std::string line;
  int64_t number = 0;
  std::vector<std::string> fields;
  while (std::getline(in, line)) {
    ++number;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == ';') continue;
    builder.CountRow();
    fields.clear();
    std::istringstream words(line);
    for (std::string word; words >> word;) fields.push_back(word);
    double submit_s = 0;
    v1::JobSpec spec;
    if (Status status = ReadRow(fields, options, queue_parent, &submit_s, &spec); !status.ok()) {
      builder.Bad(number, status.message());
      continue;
    }
    builder.Add(submit_s, std::move(spec));
  }
  return builder.Finish();
}

}  // namespace tessera::replay
