// The trace readers of tessera-replay (replay/trace_input.h): each format on a small fixture
// written here, the bad rows each one refuses (counted, by line), and the shared parsing rules.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "support/temp_dir.h"
#include "trace_format.h"
#include "trace_input.h"

namespace tessera::replay {
namespace {

std::string Write(const testing::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.File(name);
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("trace seconds: numbers and ISO 8601 in UTC or with an offset") {
  CHECK(*ParseTraceSeconds("12.5") == doctest::Approx(12.5));
  CHECK(*ParseTraceSeconds("1970-01-01T00:01:00Z") == doctest::Approx(60));
  CHECK(*ParseTraceSeconds("2023-11-14T22:13:20Z") == doctest::Approx(1700000000));
  CHECK(*ParseTraceSeconds("2023-11-14 22:13:20.250") == doctest::Approx(1700000000.25));
  CHECK(*ParseTraceSeconds("2023-11-15T00:13:20+02:00") == doctest::Approx(1700000000));
  CHECK(*ParseTraceSeconds("2023-11-14") == doctest::Approx(1699920000));
  CHECK_FALSE(ParseTraceSeconds("yesterday").ok());
  CHECK_FALSE(ParseTraceSeconds("2023-13-01T00:00:00Z").ok());
  CHECK_FALSE(ParseTraceSeconds("2023-11-14T22:13:20Zjunk").ok());
}

TEST_CASE("queue segments are made valid") {
  CHECK(SanitizeQueueSegment("vision") == "vision");
  CHECK(SanitizeQueueSegment("team a/b") == "team-a-b");
  CHECK(SanitizeQueueSegment("_hidden") == "q_hidden");
  CHECK(SanitizeQueueSegment("") == "unknown");
  CHECK(SanitizeQueueSegment(std::string(100, 'x')).size() == 63);
  CHECK(JoinQueue("", "a") == "a");
  CHECK(JoinQueue("trace", "a") == "trace/a");
}

TEST_CASE("jsonl: JobSpec JSON with submit and duration; bad rows by line") {
  testing::TempDir dir;
  const std::string path = Write(
      dir, "t.jsonl",
      "# a comment\n"
      "{\"submit\": 10, \"duration_s\": 60, \"job\": {\"queue\": \"a\", \"task\": {\"gpuCount\": "
      "2}}}\n"
      "\n"
      "{\"submit\": \"1970-01-01T00:00:05Z\", \"job\": {\"simulation\": {\"durationMs\": 1500}}}\n"
      "{\"submit\": 1, \"duration_s\": 0}\n"
      "not json\n"
      "{\"submit\": 1, \"duration_s\": 5, \"jobb\": {}}\n"
      "{\"submit\": 1, \"duration_s\": 5, \"job\": {\"gpu\": 1}}\n"
      "{\"duration_s\": 5}\n"
      "{\"submit\": 1}\n"
      "{\"submit\": 1, \"duration_s\": 5, \"job\": {\"queue\": \"a b/c\"}}\n");
  StatusOr<Trace> trace = ReadJsonlTrace(path, "default");
  REQUIRE(trace.ok());
  CHECK(trace->rows == 9);
  REQUIRE(trace->jobs.size() == 2);
  CHECK(trace->bad_rows == 7);
  REQUIRE(trace->first_bad.size() == 7);
  CHECK(trace->first_bad[0].line == 5);
  CHECK(trace->first_bad[0].reason.find("duration_s") != std::string::npos);
  CHECK(trace->first_bad[1].line == 6);
  CHECK(trace->first_bad[2].line == 7);
  CHECK(trace->first_bad[2].reason.find("jobb") != std::string::npos);
  CHECK(trace->first_bad[3].line == 8);  // unknown JobSpec field
  CHECK(trace->first_bad[4].line == 9);
  CHECK(trace->first_bad[4].reason.find("submit") != std::string::npos);
  CHECK(trace->first_bad[5].line == 10);
  CHECK(trace->first_bad[6].line == 11);
  CHECK(trace->first_bad[6].reason.find("not a queue path") != std::string::npos);
  // Sorted by arrival, offsets from the first (t = 5).
  CHECK(trace->out_of_order == 1);
  CHECK(trace->first_submit_s == doctest::Approx(5));
  CHECK(trace->jobs[0].submit_offset_us == 0);
  CHECK(trace->jobs[0].spec.queue() == "default");
  CHECK(trace->jobs[0].spec.simulation().duration_ms() == 1500);
  CHECK(trace->jobs[1].submit_offset_us == 5'000'000);
  CHECK(trace->jobs[1].spec.queue() == "a");
  CHECK(trace->jobs[1].spec.task().gpu_count() == 2);
  CHECK(trace->jobs[1].spec.simulation().duration_ms() == 60'000);
  CHECK(trace->queues == std::vector<std::string>{"default", "a"});
}

TEST_CASE("csv: a column map, ISO submit times, queues made under the parent") {
  testing::TempDir dir;
  const std::string path = Write(dir, "t.csv",
                                 "timestamp,duration,num_gpus,cluster,owner,cpu,mem,share,n,klass\n"
                                 "2023-11-14T00:00:10Z,100,2,Team A,alice,4000,8192,,3,high\n"
                                 "2023-11-14T00:00:00Z,50,0,vision,,,,250,,\n"
                                 "2023-11-14T00:00:20Z,abc,1,x,,,,,,\n"
                                 "2023-11-14T00:00:20Z,10,-1,x,,,,,,\n"
                                 "\"2023-11-14T00:00:30Z\",10,1,\"quoted, name\",,,,,,\n"
                                 "2023-11-14T00:00:30Z,10\n"
                                 "soon,10,1,x,,,,,,\n");
  StatusOr<CsvColumns> columns = ParseCsvColumns(
      "submit=timestamp,duration_s=duration,gpus=num_gpus,queue=cluster,user=owner,"
      "cpu_milli=cpu,memory_mib=mem,gpu_milli=share,tasks=n,priority_class=klass");
  REQUIRE(columns.ok());
  StatusOr<Trace> trace = ReadCsvTrace(path, *columns, "trace");
  REQUIRE(trace.ok());
  CHECK(trace->rows == 7);
  REQUIRE(trace->jobs.size() == 3);
  CHECK(trace->bad_rows == 4);
  REQUIRE(trace->first_bad.size() == 4);
  CHECK(trace->first_bad[0].line == 4);
  CHECK(trace->first_bad[0].reason.find("duration_s") != std::string::npos);
  CHECK(trace->first_bad[1].line == 5);
  CHECK(trace->first_bad[1].reason.find("gpus") != std::string::npos);
  CHECK(trace->first_bad[2].line == 7);
  CHECK(trace->first_bad[3].line == 8);
  CHECK(trace->first_bad[3].reason.find("soon") != std::string::npos);

  const v1::JobSpec& share = trace->jobs[0].spec;  // t = 0
  CHECK(trace->jobs[0].submit_offset_us == 0);
  CHECK(share.queue() == "trace/vision");
  CHECK(share.task().gpu_count() == 1);
  CHECK(share.task().gpu_milli() == 250);
  CHECK(share.task().cpu_milli() == 1000);  // the default
  CHECK(share.task().memory_mib() == 1024);
  const v1::JobSpec& gang = trace->jobs[1].spec;  // t = 10
  CHECK(trace->jobs[1].submit_offset_us == 10'000'000);
  CHECK(gang.queue() == "trace/Team-A/alice");
  CHECK(gang.tasks() == 3);
  CHECK(gang.task().gpu_count() == 2);
  CHECK(gang.task().cpu_milli() == 4000);
  CHECK(gang.task().memory_mib() == 8192);
  CHECK(gang.priority_class() == "high");
  CHECK(gang.simulation().duration_ms() == 100'000);
  CHECK(trace->jobs[2].spec.queue() == "trace/quoted--name");
}

TEST_CASE("csv: header problems and bad column maps are errors naming the field") {
  testing::TempDir dir;
  const std::string path = Write(dir, "t.csv", "submit,duration_s,gpus\n0,10,1\n");
  StatusOr<Trace> plain = ReadCsvTrace(path, CsvColumns{}, "");
  REQUIRE(plain.ok());
  REQUIRE(plain->jobs.size() == 1);
  CHECK(plain->jobs[0].spec.queue() == "all");

  StatusOr<CsvColumns> missing = ParseCsvColumns("gpus=num_gpus");
  REQUIRE(missing.ok());
  StatusOr<Trace> no_column = ReadCsvTrace(path, *missing, "");
  REQUIRE_FALSE(no_column.ok());
  CHECK(no_column.status().message().find("num_gpus") != std::string::npos);

  StatusOr<CsvColumns> unknown = ParseCsvColumns("gpu=num_gpus");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("unknown field 'gpu'") != std::string::npos);
  CHECK_FALSE(ParseCsvColumns("submit").ok());
  CHECK_FALSE(ParseCsvColumns("submit=a,submit=b").ok());

  const std::string no_duration = Write(dir, "n.csv", "submit,gpus\n0,1\n");
  StatusOr<Trace> refused = ReadCsvTrace(no_duration, CsvColumns{}, "");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("duration_s") != std::string::npos);
}

TEST_CASE("swf: 18 fields, ';' comments, a task per processor, bad rows by line") {
  testing::TempDir dir;
  const std::string path = Write(dir, "t.swf",
                                 "; Version: 2.2\n"
                                 "; MaxProcs: 16\n"
                                 "1 0 5 100 4 -1 -1 4 200 2048 1 7 1 -1 2 -1 -1 -1\n"
                                 "2 30 0 0 -1 -1 1024 2 -1 -1 1 8 1 -1 3 -1 -1 -1\n"
                                 "3 40 0 -1 2 -1 -1 2 -1 -1 0 7 1 -1 2 -1 -1 -1\n"
                                 "4 50 0 10 2 -1\n"
                                 "5 60 0 10 -1 -1 -1 -1 -1 -1 1 7 1 -1 2 -1 -1 -1\n");
  SwfOptions options;
  options.gpus_per_processor = 1;
  StatusOr<Trace> trace = ReadSwfTrace(path, options, "hpc");
  REQUIRE(trace.ok());
  CHECK(trace->rows == 5);
  REQUIRE(trace->jobs.size() == 2);
  CHECK(trace->bad_rows == 3);
  REQUIRE(trace->first_bad.size() == 3);
  CHECK(trace->first_bad[0].line == 5);  // run time -1
  CHECK(trace->first_bad[0].reason.find("run time") != std::string::npos);
  CHECK(trace->first_bad[1].line == 6);  // 6 fields
  CHECK(trace->first_bad[2].line == 7);  // no processor count
  const v1::JobSpec& a = trace->jobs[0].spec;
  CHECK(a.name() == "swf-1");
  CHECK(a.tasks() == 4);
  CHECK(a.task().gpu_count() == 1);
  CHECK(a.task().memory_mib() == 2);  // 2048 KB requested per processor
  CHECK(a.time_limit_s() == 200);
  CHECK(a.simulation().duration_ms() == 100'000);
  CHECK(a.queue() == "hpc/u7");
  const v1::JobSpec& b = trace->jobs[1].spec;
  CHECK(trace->jobs[1].submit_offset_us == 30'000'000);
  CHECK(b.tasks() == 2);                     // requested, as allocated is unknown
  CHECK(b.simulation().duration_ms() == 1);  // run time 0: under half a second
  CHECK(b.task().memory_mib() == 1);         // 1024 KB used
  CHECK(b.queue() == "hpc/u8");

  options.by_queue = true;
  options.gpus_per_processor = 0;
  StatusOr<Trace> by_queue = ReadSwfTrace(path, options, "");
  REQUIRE(by_queue.ok());
  CHECK(by_queue->jobs[0].spec.queue() == "q2");
  CHECK(by_queue->jobs[0].spec.task().gpu_count() == 0);
}

TEST_CASE("openb: a pod list becomes one-task jobs per QoS queue") {
  testing::TempDir dir;
  const std::string path =
      Write(dir, "openb_pod_list_tiny.csv",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
            "deletion_time,scheduled_time\n"
            "p1,4000,8192,1,500,,LS,Running,100,200,110\n"
            "p2,2000,0,2,1000,V100M16,BE,Succeeded,50,150,60\n"
            "p3,1000,1024,1,1000,,LS,Pending,120,300,\n");
  TraceRequest request;
  request.path = path;
  request.queue_parent = "openb";
  REQUIRE(*TraceFormatOf(request) == "openb");
  StatusOr<Trace> trace = ReadTrace(request);
  REQUIRE(trace.ok());
  CHECK(trace->rows == 3);
  REQUIRE(trace->jobs.size() == 2);
  CHECK(trace->notes.at("skipped_unscheduled") == 1);
  CHECK(trace->notes.at("requests_raised") == 1);
  CHECK(trace->jobs[0].spec.name() == "p2");
  CHECK(trace->jobs[0].spec.queue() == "openb/BE");
  CHECK(trace->jobs[0].spec.task().memory_mib() == 1);
  CHECK(trace->jobs[0].spec.simulation().duration_ms() == 90'000);
  CHECK(trace->jobs[1].spec.queue() == "openb/LS");
  CHECK(trace->jobs[1].spec.task().gpu_milli() == 500);
  CHECK(trace->jobs[1].submit_offset_us == 50'000'000);
}

TEST_CASE("bad rows: every one is counted, the first kBadRowsKept kept with their line") {
  testing::TempDir dir;
  std::string text = "submit,duration_s\n";
  for (int i = 0; i < 30; ++i) text += "x,1\n";
  text += "0,1\n";
  const std::string path = Write(dir, "bad.csv", text);
  StatusOr<Trace> trace = ReadCsvTrace(path, CsvColumns{}, "");
  REQUIRE(trace.ok());
  CHECK(trace->rows == 31);
  CHECK(trace->bad_rows == 30);
  CHECK(trace->jobs.size() == 1);
  REQUIRE(trace->first_bad.size() == kBadRowsKept);
  CHECK(trace->first_bad.front().line == 2);
  CHECK(trace->first_bad.back().line == static_cast<int64_t>(kBadRowsKept) + 1);
}

TEST_CASE("format from the file name, --jobs and --time-scale") {
  TraceRequest request;
  request.path = "a/b.jsonl";
  CHECK(*TraceFormatOf(request) == "jsonl");
  request.path = "b.swf";
  CHECK(*TraceFormatOf(request) == "swf");
  request.path = "b.csv";
  CHECK(*TraceFormatOf(request) == "csv");
  request.path = "b.txt";
  CHECK_FALSE(TraceFormatOf(request).ok());
  request.format = "parquet";
  CHECK_FALSE(TraceFormatOf(request).ok());

  testing::TempDir dir;
  request.format = "";
  request.path = Write(dir, "t.csv", "submit,duration_s\n0,1\n10,1\n20,1\n");
  request.max_jobs = 2;
  request.time_scale = 10;
  StatusOr<Trace> trace = ReadTrace(request);
  REQUIRE(trace.ok());
  REQUIRE(trace->jobs.size() == 2);
  CHECK(trace->jobs[1].submit_offset_us == 1'000'000);
  CHECK(trace->notes.at("left_out_by_jobs_limit") == 1);
}

}  // namespace
}  // namespace tessera::replay
