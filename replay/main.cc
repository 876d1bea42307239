// tessera-replay: what-if replay of a job trace through the real scheduler in virtual time, with
// the same YAML config tesserad reads (docs/replay.md). Reads the trace, opens a scheduler on a
// ManualClock and the simulated executor, replays every arrival, and prints one JSON summary on
// stdout; warnings, bad rows and the progress bar go to stderr.
//
// Exit status: 0 when the replay ran; 1 when it failed or some submits were refused (the
// summary still prints) or, with --strict, the trace had bad rows; 2 for bad flags or input.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "decision_log.h"
#include "html_report.h"
#include "replay_config.h"
#include "replay_report.h"
#include "replay_run.h"
#include "trace_format.h"

namespace tessera::replay {
namespace {

// Wall seconds per replayed job measured on this project's 2-core build machine for a
// 100,000-job trace on 1,000 nodes: 81.6 s (docs/replay.md, "Speed"); only the up-front estimate
// uses it.
constexpr double kMeasuredWallSecondsPerJob = 0.8e-3;
// Replays expected to take longer than this get a warning before they start and again when the
// live pace says so.
constexpr double kLongReplayWallS = 600;

std::string Duration(double s) {
  char buffer[64];
  if (s >= 3600) {
    std::snprintf(buffer, sizeof(buffer), "%.1f h", s / 3600);
  } else if (s >= 60) {
    std::snprintf(buffer, sizeof(buffer), "%.1f min", s / 60);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%.1f s", s);
  }
  return buffer;
}

// Draws a one-line bar on stderr (redrawn in place on a terminal) and warns once when the pace
// says the replay will run past kLongReplayWallS.
class ProgressBar {
 public:
  ProgressBar(bool draw, bool terminal) : draw_(draw), terminal_(terminal) {}

  void Update(const ReplayProgress& p) {
    const double done = p.total > 0 ? static_cast<double>(p.submitted) / p.total : 1.0;
    if (!warned_ && p.wall_s >= 2 && done > 0 && done < 1) {
      const double total_wall = p.wall_s / done;
      if (total_wall > kLongReplayWallS) {
        warned_ = true;
        std::fprintf(stderr,
                     "%stessera-replay: warning: at the present pace this replay takes about %s "
                     "of wall time (%zu of %zu jobs in %s); --jobs N replays the first N\n",
                     terminal_ && drawn_ ? "\n" : "", Duration(total_wall).c_str(), p.submitted,
                     p.total, Duration(p.wall_s).c_str());
      }
    }
    if (!draw_) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(done * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kWidth - filled), '.');
    const double simulated_s = static_cast<double>(p.simulated_us) / 1e6;
    std::fprintf(stderr, "%s[%s] %3.0f%% %zu/%zu jobs, %.2f days simulated, %.0fx real time",
                 terminal_ ? "\r" : "", bar.c_str(), done * 100, p.submitted, p.total,
                 simulated_s / 86400, p.wall_s > 0 ? simulated_s / p.wall_s : 0.0);
    if (!terminal_) std::fputc('\n', stderr);
    drawn_ = true;
  }

  void Finish() {
    if (draw_ && terminal_ && drawn_) std::fputc('\n', stderr);
  }

 private:
  bool draw_;
  bool terminal_;
  bool drawn_ = false;
  bool warned_ = false;
};

void ReportBadRows(const std::string& path, const Trace& trace) {
  if (trace.bad_rows == 0) return;
  std::cerr << "tessera-replay: " << path << ": " << trace.bad_rows << " of " << trace.rows
            << " rows refused";
  if (trace.bad_rows > static_cast<int64_t>(trace.first_bad.size())) {
    std::cerr << " (first " << trace.first_bad.size() << " shown)";
  }
  std::cerr << ":\n";
  for (const BadRow& row : trace.first_bad) {
    std::cerr << "  " << path << ":" << row.line << ": " << row.reason << '\n';
  }
}

int Run(int argc, char** argv) {
  CLI::App app{
      "tessera-replay: replay a job trace through the Tessera scheduler in virtual time "
      "with a tesserad config, and summarise what happened (docs/replay.md)"};
  TraceRequest trace_request;
  ReplayConfigRequest config_request;
  std::string jobs_csv;
  std::string html_path;
  std::vector<std::string> compare;
  std::string decision_log_path;
  bool progress = false;
  bool no_progress = false;
  bool strict = false;
  std::string swf_queues = "user";
  app.add_option("trace", trace_request.path,
                 "the trace file (for --format openb also a short name: default, gpuspec33, ...)")
      ->required();
  app.add_option("--format", trace_request.format,
                 "jsonl | csv | swf | openb; default: from the file name");
  app.add_option("--columns", trace_request.columns,
                 "csv: field=column pairs, e.g. submit=timestamp,duration_s=duration,gpus=num_gpus"
                 ",queue=cluster (fields: submit, duration_s, gpus, gpu_milli, cpu_milli, "
                 "memory_mib, tasks, priority_class, queue, user, name)");
  app.add_option("--queue-parent", trace_request.queue_parent,
                 "csv, swf, openb: queue under which the trace's queues are created (created "
                 "too); default: top level");
  app.add_option("--default-queue", trace_request.default_queue,
                 "jsonl: queue of jobs that name none; default: the config's default_queue");
  app.add_option("--swf-gpus-per-processor", trace_request.swf.gpus_per_processor,
                 "swf: GPUs of each task (one task per SWF processor); 0: CPU-only")
      ->capture_default_str();
  app.add_option("--swf-queues", swf_queues,
                 "swf: a queue per user (field 12) or per queue "
                 "number (field 15)")
      ->check(CLI::IsMember({"user", "queue"}))
      ->capture_default_str();
  app.add_option("--openb-queues", trace_request.openb_queues,
                 "openb: qos (a queue per QoS class) or single")
      ->check(CLI::IsMember({"qos", "single"}))
      ->capture_default_str();
  app.add_option("--openb-unscheduled", trace_request.openb_unscheduled,
                 "openb: pods the trace never scheduled: skip or run")
      ->check(CLI::IsMember({"skip", "run"}))
      ->capture_default_str();
  app.add_option("--openb-data", trace_request.openb_data_dir,
                 "openb: folder of the openb files; default: $TESSERA_OPENB_DIR or "
                 "../shared/data/openb beside the sources");
  app.add_option("--time-scale", trace_request.time_scale,
                 "divide arrival times by this (durations unchanged): X times the offered load")
      ->capture_default_str();
  app.add_option("--jobs", trace_request.max_jobs, "replay only the first N arrivals; 0: all")
      ->capture_default_str();
  app.add_option("--config", config_request.config_path,
                 "tesserad.yaml: queues, weights, decay, preemption, placement, priority classes "
                 "and the simulated cluster; default: tesserad's defaults");
  app.add_option("--cluster", config_request.cluster_path,
                 "the cluster instead of the config's: an openb node list (.csv; with --format "
                 "openb also a short name: gpu_node) or a simulated-cluster YAML file");
  app.add_option("--cluster-scale", config_request.cluster_scale,
                 "keep this share of each node group of the cluster (at least one node each)")
      ->capture_default_str();
  app.add_option("--set", config_request.sets,
                 "override one config field, path=value (fair_share.usage_half_life_s=3600, "
                 "preemption.enabled=false, queues[a/b].weight=2); repeatable")
      ->allow_extra_args(false);
  app.add_option("--jobs-csv", jobs_csv, "write one CSV line per job to this file");
  app.add_option("--html", html_path,
                 "write a self-contained HTML report (utilisation, share per queue over time, "
                 "wait CDFs; side by side with --compare)");
  app.add_option("--compare", compare,
                 "replay once per config file, side by side (instead of --config); the summary "
                 "becomes {\"runs\": [...]}");
  app.add_option("--decision-log", decision_log_path,
                 "write every placement to this file (docs/testing.md)");
  app.add_flag("--progress", progress, "draw the progress bar even when stderr is not a terminal");
  app.add_flag("--no-progress", no_progress, "never draw the progress bar");
  app.add_flag("--strict", strict, "exit 1 when the trace has bad rows (they are still reported)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  trace_request.swf.by_queue = swf_queues == "queue";
  if (!compare.empty() && !config_request.config_path.empty()) {
    std::cerr << "tessera-replay: --compare replaces --config; give the configs to --compare\n";
    return 2;
  }
  if (compare.size() == 1) {
    std::cerr << "tessera-replay: --compare needs at least two config files\n";
    return 2;
  }
  if (!compare.empty() && (!jobs_csv.empty() || !decision_log_path.empty())) {
    std::cerr << "tessera-replay: --jobs-csv and --decision-log write one replay's jobs; leave "
                 "them out with --compare\n";
    return 2;
  }
  std::vector<std::string> config_paths = compare;
  if (config_paths.empty()) config_paths.push_back(config_request.config_path);

  // An openb trace brings its own cluster unless told otherwise.
  StatusOr<std::string> format = TraceFormatOf(trace_request);
  if (!format.ok()) {
    std::cerr << "tessera-replay: " << format.status().message() << '\n';
    return 2;
  }
  if (*format == "openb") {
    const std::string data_dir = OpenbDataDir(trace_request.openb_data_dir);
    std::string cluster =
        config_request.cluster_path.empty() ? "gpu_node" : config_request.cluster_path;
    StatusOr<std::string> nodes = ResolveOpenbFile(cluster, data_dir, "openb_node_list_");
    if (nodes.ok()) {
      config_request.cluster_path = *nodes;
    } else if (config_request.cluster_path.empty()) {
      std::cerr << "tessera-replay: " << nodes.status().message() << '\n';
      return 2;
    }
  }

  std::vector<ReplayConfig> configs;
  for (const std::string& path : config_paths) {
    ReplayConfigRequest request = config_request;
    request.config_path = path;
    StatusOr<ReplayConfig> config = LoadReplayConfig(request);
    if (!config.ok()) {
      std::cerr << "tessera-replay: " << (path.empty() ? "" : path + ": ")
                << config.status().message() << '\n';
      return 2;
    }
    configs.push_back(std::move(*config));
  }
  if (trace_request.default_queue.empty()) {
    const std::string& configured = configs.front().options.default_queue;
    trace_request.default_queue = configured.empty() ? "default" : configured;
  }
  StatusOr<Trace> trace = ReadTrace(trace_request);
  if (!trace.ok()) {
    std::cerr << "tessera-replay: " << trace.status().message() << '\n';
    return 2;
  }
  ReportBadRows(trace_request.path, *trace);
  if (trace->jobs.empty()) {
    std::cerr << "tessera-replay: " << trace_request.path << ": no job to replay\n";
    return 2;
  }
  const double estimate_s = static_cast<double>(trace->jobs.size()) *
                            static_cast<double>(configs.size()) * kMeasuredWallSecondsPerJob;
  if (estimate_s > kLongReplayWallS) {
    std::cerr << "tessera-replay: warning: " << trace->jobs.size() << " jobs"
              << (configs.size() > 1 ? " x " + std::to_string(configs.size()) + " configs" : "")
              << "; at the pace measured for 100,000 jobs on 1,000 nodes (0.8 ms each) "
                 "this takes about "
              << Duration(estimate_s) << " of wall time; --jobs N replays a prefix\n";
  }

  const bool terminal = isatty(STDERR_FILENO) != 0;
  ProgressBar bar(!no_progress && (progress || terminal), terminal);
  RunSettings settings;
  settings.on_progress = [&bar](const ReplayProgress& p) { bar.Update(p); };
  settings.progress_every_s = terminal ? 0.25 : 5;
  std::ofstream log_file;
  std::optional<DecisionLog> log;
  if (!decision_log_path.empty()) {
    log_file.open(decision_log_path, std::ios::trunc);
    if (!log_file) {
      std::cerr << "tessera-replay: cannot write " << decision_log_path << '\n';
      return 2;
    }
    log.emplace(log_file, kReplayEpochUs);
    settings.decision_log = &*log;
  }
  std::vector<RunOutcome> runs;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (configs.size() > 1) {
      std::cerr << "tessera-replay: replay " << i + 1 << " of " << configs.size() << ": "
                << config_paths[i] << '\n';
    }
    StatusOr<RunOutcome> run = RunReplay(configs[i], *trace, settings);
    bar.Finish();
    if (!run.ok()) {
      std::cerr << "tessera-replay: " << run.status().message() << '\n';
      return 1;
    }
    runs.push_back(std::move(*run));
  }
  if (!jobs_csv.empty()) {
    std::ofstream out(jobs_csv, std::ios::trunc);
    WriteJobsCsv(out, *trace, runs.front());
    out.close();
    if (!out) {
      std::cerr << "tessera-replay: could not write " << jobs_csv << '\n';
      return 1;
    }
  }
  std::vector<ReportRun> report_runs;
  int64_t submit_failures = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    nlohmann::json summary = SummaryJson(*trace, runs[i]);
    summary["trace"]["path"] = trace_request.path;
    summary["trace"]["format"] = *format;
    summary["config"] = config_paths[i];
    summary["sets"] = config_request.sets;
    const std::string label = config_paths[i].empty()
                                  ? std::string("tesserad defaults")
                                  : std::filesystem::path(config_paths[i]).filename().string();
    report_runs.push_back(ReportRun{label, &runs[i], std::move(summary)});
    if (runs[i].result.submit_failures > 0) {
      std::cerr << "tessera-replay: " << label << ": " << runs[i].result.submit_failures
                << " submits refused; first: " << runs[i].result.first_submit_error << '\n';
      submit_failures += runs[i].result.submit_failures;
    }
  }
  if (report_runs.size() == 1) {
    std::cout << report_runs.front().summary.dump(2) << std::endl;
  } else {
    nlohmann::json all = {{"runs", nlohmann::json::array()}};
    for (const ReportRun& r : report_runs) all["runs"].push_back(r.summary);
    std::cout << all.dump(2) << std::endl;
  }
  if (!html_path.empty()) {
    std::ofstream out(html_path, std::ios::trunc);
    WriteHtmlReport(out, "tessera-replay: " + trace_request.path, *trace, report_runs);
    out.close();
    if (!out) {
      std::cerr << "tessera-replay: could not write " << html_path << '\n';
      return 1;
    }
  }
  if (submit_failures > 0) return 1;
  if (strict && trace->bad_rows > 0) return 1;
  return 0;
}

}  // namespace
}  // namespace tessera::replay

int main(int argc, char** argv) { return tessera::replay::Run(argc, argv); }
