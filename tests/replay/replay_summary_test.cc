// A replay end to end on a trace small enough to work out by hand: the real scheduler in
// virtual time (replay/replay_run.h), and the summary numbers (replay/replay_report.h).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "finish_time_fairness.h"
#include "html_report.h"
#include "replay_config.h"
#include "replay_report.h"
#include "replay_run.h"
#include "support/temp_dir.h"
#include "trace_input.h"

namespace tessera::replay {
namespace {

std::string Write(const testing::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.File(name);
  std::ofstream(path) << text;
  return path;
}

// Two nodes of one GPU each, one queue, no preemption.
constexpr const char* kConfig =
    "preemption:\n  enabled: false\n"
    "default_queue: ''\n"
    "simulated_cluster:\n  groups:\n"
    "    - {name_prefix: n, count: 2, cpu_milli: 8000, memory_mib: 16384, gpus: 1,"
    " gpu_model: T4, gpu_memory_mib: 16384}\n";

TEST_CASE("summary: 3 jobs on 2 GPUs, worked out by hand") {
  testing::TempDir dir;
  ReplayConfigRequest request;
  request.config_path = Write(dir, "tesserad.yaml", kConfig);
  StatusOr<ReplayConfig> config = LoadReplayConfig(request);
  REQUIRE(config.ok());
  // A and B start at 0 on the two GPUs. C arrives at 10 and waits for B, which ends at 50; C
  // then runs 50..80. A ends at 100.
  const std::string trace_path =
      Write(dir, "t.jsonl",
            "{\"submit\": 0, \"duration_s\": 100, \"job\": {\"name\": \"A\", \"queue\": \"q\","
            " \"task\": {\"cpuMilli\": 1000, \"memoryMib\": 1024, \"gpuCount\": 1}}}\n"
            "{\"submit\": 0, \"duration_s\": 50, \"job\": {\"name\": \"B\", \"queue\": \"q\","
            " \"task\": {\"cpuMilli\": 1000, \"memoryMib\": 1024, \"gpuCount\": 1}}}\n"
            "{\"submit\": 10, \"duration_s\": 30, \"job\": {\"name\": \"C\", \"queue\": \"q\","
            " \"task\": {\"cpuMilli\": 1000, \"memoryMib\": 1024, \"gpuCount\": 1}}}\n");
  StatusOr<Trace> trace = ReadJsonlTrace(trace_path, "default");
  REQUIRE(trace.ok());
  REQUIRE(trace->jobs.size() == 3);
  StatusOr<RunOutcome> run = RunReplay(*config, *trace, RunSettings{});
  REQUIRE(run.ok());
  CHECK(run->gpus == 2);
  CHECK(run->queues_created == std::vector<std::string>{"q"});
  CHECK(run->result.submit_failures == 0);

  const nlohmann::json s = SummaryJson(*trace, *run);
  CHECK(s["jobs"] == 3);
  CHECK(s["finished"] == 3);
  // JCT: A 100, B 50, C 80 - 10 = 70. Nearest rank over [50, 70, 100].
  CHECK(s["avg_jct_s"].get<double>() == doctest::Approx(220.0 / 3));
  CHECK(s["p50_jct_s"].get<double>() == doctest::Approx(70));
  CHECK(s["p95_jct_s"].get<double>() == doctest::Approx(100));
  CHECK(s["p99_jct_s"].get<double>() == doctest::Approx(100));
  // Waits: 0, 0, 40.
  CHECK(s["avg_wait_s"].get<double>() == doctest::Approx(40.0 / 3));
  CHECK(s["p95_wait_s"].get<double>() == doctest::Approx(40));
  CHECK(s["waited_jobs"] == 1);
  CHECK(s["makespan_s"].get<double>() == doctest::Approx(100));
  // 100 + 50 + 30 GPU-seconds of 2 GPUs x 100 s.
  CHECK(s["gpu_util_pct"].get<double>() == doctest::Approx(90));
  CHECK(s["preemptions"] == 0);
  CHECK(s["lost_gpu_hours"].get<double>() == doctest::Approx(0));
  CHECK(s["jain_fairness"].get<double>() == doctest::Approx(1));  // one queue
  // Fair shares at arrival: A and B arrive together and get one GPU each (rho 1); C arrives
  // with both still active, share 2/3 GPU for a 1-GPU job: T_fair = 30 x 1.5 = 45, rho 70/45.
  CHECK(s["max_finish_time_fairness"].get<double>() == doctest::Approx(70.0 / 45));
  CHECK(s["avg_finish_time_fairness"].get<double>() == doctest::Approx((2 + 70.0 / 45) / 3));
  REQUIRE(s["queues"].contains("q"));
  CHECK(s["queues"]["q"]["avg_jct_s"].get<double>() == doctest::Approx(220.0 / 3));
  CHECK(s["queues"]["q"]["gpu_util_pct"].get<double>() == doctest::Approx(90));
  CHECK(s["cluster"]["gpus"] == 2);
  CHECK(s["simulated_s"].get<double>() == doctest::Approx(100));

  // The HTML report: the table holds the summary's figures; three plots per replay, side by side.
  std::ostringstream html;
  WriteHtmlReport(html, "three jobs", *trace,
                  {ReportRun{"first", &*run, s}, ReportRun{"second", &*run, s}});
  const std::string page = html.str();
  size_t svgs = 0;
  for (size_t at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) {
    ++svgs;
  }
  CHECK(svgs == 6);
  CHECK(page.find("<td>73.3333</td>") != std::string::npos);  // avg_jct_s, %.6g
  CHECK(page.find("Wait-time CDF per queue") != std::string::npos);
  CHECK(page.find("<script") == std::string::npos);  // self-contained, nothing to run

  std::ostringstream csv;
  WriteJobsCsv(csv, *trace, *run);
  const std::string text = csv.str();
  CHECK(text.rfind("index,id,name,queue,state,submit_s,start_s,end_s,wait_s,jct_s,", 0) == 0);
  CHECK(text.find("\"C\",q,SUCCEEDED,10.000,50.000,80.000,40.000,70.000,30.000,1000,1,0,1.5556") !=
        std::string::npos);
}

TEST_CASE("summary: per-queue figures and Jain's index over weighted shares") {
  testing::TempDir dir;
  ReplayConfigRequest request;
  request.config_path = Write(dir, "tesserad.yaml",
                              std::string(kConfig) +
                                  "queues:\n  - {name: a, weight: 1}\n"
                                  "  - {name: b, weight: 1}\n");
  StatusOr<ReplayConfig> config = LoadReplayConfig(request);
  REQUIRE(config.ok());
  // a holds one GPU for 100 s, b one for 50 s: shares 0.5 and 0.25 of 2 GPUs x 100 s.
  const std::string trace_path = Write(
      dir, "t.jsonl",
      "{\"submit\": 0, \"duration_s\": 100, \"job\": {\"queue\": \"a\", \"task\": {\"cpuMilli\":"
      " 1000, \"memoryMib\": 1024, \"gpuCount\": 1}}}\n"
      "{\"submit\": 0, \"duration_s\": 50, \"job\": {\"queue\": \"b\", \"task\": {\"cpuMilli\":"
      " 1000, \"memoryMib\": 1024, \"gpuCount\": 1}}}\n");
  StatusOr<Trace> trace = ReadJsonlTrace(trace_path, "default");
  REQUIRE(trace.ok());
  StatusOr<RunOutcome> run = RunReplay(*config, *trace, RunSettings{});
  REQUIRE(run.ok());
  CHECK(run->queues_created.empty());  // both declared by the config
  const nlohmann::json s = SummaryJson(*trace, *run);
  CHECK(s["queues"]["a"]["gpu_util_pct"].get<double>() == doctest::Approx(50));
  CHECK(s["queues"]["b"]["gpu_util_pct"].get<double>() == doctest::Approx(25));
  CHECK(s["queues"]["b"]["avg_jct_s"].get<double>() == doctest::Approx(50));
  // (0.5 + 0.25)^2 / (2 x (0.25 + 0.0625)) = 0.9
  CHECK(s["jain_fairness"].get<double>() == doctest::Approx(0.9));
}

TEST_CASE("summary: a preemption, its lost work, and utilisation that counts every attempt") {
  testing::TempDir dir;
  ReplayConfigRequest request;
  request.config_path = Write(dir, "tesserad.yaml",
                              "default_queue: ''\n"
                              "simulated_cluster:\n  groups:\n"
                              "    - {name_prefix: n, count: 1, cpu_milli: 8000, memory_mib: 16384,"
                              " gpus: 1, gpu_model: T4, gpu_memory_mib: 16384}\n");
  StatusOr<ReplayConfig> config = LoadReplayConfig(request);
  REQUIRE(config.ok());
  // One GPU. A (low, preemptible) runs from 0; B (high) arrives at 10 and preempts A once A has
  // run preemption.min_runtime_s (60 s, the default): B runs 60..80, A starts over 80..180
  // (no checkpoint, so its 60 s are lost).
  const std::string trace_path =
      Write(dir, "t.jsonl",
            "{\"submit\": 0, \"duration_s\": 100, \"job\": {\"name\": \"A\", \"queue\": \"q\","
            " \"priorityClass\": \"low\", \"task\": {\"cpuMilli\": 1000, \"memoryMib\": 1024,"
            " \"gpuCount\": 1}}}\n"
            "{\"submit\": 10, \"duration_s\": 20, \"job\": {\"name\": \"B\", \"queue\": \"q\","
            " \"priorityClass\": \"high\", \"task\": {\"cpuMilli\": 1000, \"memoryMib\": 1024,"
            " \"gpuCount\": 1}}}\n");
  StatusOr<Trace> trace = ReadJsonlTrace(trace_path, "default");
  REQUIRE(trace.ok());
  StatusOr<RunOutcome> run = RunReplay(*config, *trace, RunSettings{});
  REQUIRE(run.ok());
  const nlohmann::json s = SummaryJson(*trace, *run);
  CHECK(s["preemptions"] == 1);
  CHECK(s["requeued"] == 1);
  CHECK(s["lost_gpu_hours"].get<double>() == doctest::Approx(60.0 / 3600));
  // JCT: A 180, B 70. Waits (to the last attempt's start): A 80, B 50.
  CHECK(s["avg_jct_s"].get<double>() == doctest::Approx(125));
  CHECK(s["avg_wait_s"].get<double>() == doctest::Approx(65));
  CHECK(s["makespan_s"].get<double>() == doctest::Approx(180));
  // The GPU was held all 180 s: 60 by A's lost attempt, 20 by B, 100 by A again.
  CHECK(s["gpu_util_pct"].get<double>() == doctest::Approx(100));
  // rho: A alone at 0, T_fair 100, 180/100; B shares with A at 10, half a GPU for a 1-GPU
  // job, T_fair 40, 70/40.
  CHECK(s["max_finish_time_fairness"].get<double>() == doctest::Approx(1.8));
  CHECK(s["avg_finish_time_fairness"].get<double>() == doctest::Approx((1.8 + 1.75) / 2));
}

TEST_CASE("trace queues are created on the fly with their parents; refused submits counted") {
  testing::TempDir dir;
  ReplayConfigRequest request;
  request.config_path = Write(dir, "tesserad.yaml", kConfig);
  StatusOr<ReplayConfig> config = LoadReplayConfig(request);
  REQUIRE(config.ok());
  const std::string trace_path =
      Write(dir, "t.jsonl",
            "{\"submit\": 0, \"duration_s\": 1, \"job\": {\"queue\": \"org/team/alice\","
            " \"task\": {\"cpuMilli\": 1000, \"memoryMib\": 1024}}}\n"
            "{\"submit\": 0, \"duration_s\": 1, \"job\": {\"queue\": \"org/team/bob\","
            " \"priorityClass\": \"no-such-class\", \"task\": {\"cpuMilli\": 1000,"
            " \"memoryMib\": 1024}}}\n");
  StatusOr<Trace> trace = ReadJsonlTrace(trace_path, "default");
  REQUIRE(trace.ok());
  StatusOr<RunOutcome> run = RunReplay(*config, *trace, RunSettings{});
  REQUIRE(run.ok());
  CHECK(run->queues_created ==
        std::vector<std::string>{"org", "org/team", "org/team/alice", "org/team/bob"});
  CHECK(run->result.submit_failures == 1);
  INFO(run->result.first_submit_error);
  CHECK(run->result.first_submit_error.find("no-such-class") != std::string::npos);
}

}  // namespace
}  // namespace tessera::replay
