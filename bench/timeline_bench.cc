// timeline: time-based replay of an openb pod trace (Alibaba GPU-sharing workload, see
// ../shared/data/openb/README.md) through the real public API in virtual time. The cluster is
// the node CSV; every pod becomes a one-task job, submitted at its creation_time to the leaf
// queue of its tenant (by default its QoS class), that runs for its real runtime in the trace
// (deletion_time - scheduled_time). The scheduler decides when and where each one starts, so
// waiting times and completion times are the scheduler's, not the trace's; the trace's own
// waits (scheduled_time - creation_time) are reported next to them for comparison.
//
// How pods become jobs (skipped and raised requests included) is replay/openb_workload.h, shared
// with tessera-replay's openb input.
//
// Load: replayed as recorded, the openb pods hardly overlap in time. In default at most 65.6
// GPUs are in use at once (0.23% of the 6212 GPUs on average), so every pod starts the moment
// it arrives whatever the policy. --time-scale X divides arrival times by X (runtimes stay, so
// X times the offered load) and --cluster-scale f keeps a share f of each node shape; both
// create contention where policies differ. Defaults replay the trace as recorded.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench_util.h"
#include "benchmarks.h"
#include "openb_pod_csv.h"
#include "openb_workload.h"
#include "tessera/clock.h"
#include "tessera/scheduler.h"
#include "trace_replay.h"

namespace tessera::bench {
namespace {

using replay::DecisionLog;
using replay::ExpectedTasksOf;
using replay::OpenbCluster;
using replay::OpenbNode;
using replay::OpenbPod;
using replay::PlacementFromName;
using replay::ReplayMetrics;
using replay::ReplayOptions;
using replay::ReplayResult;
using replay::ReplayTrace;
using replay::SummarizeReplay;

// Trace time 0 on the scheduler's clock: 2023-11-14, near when the trace was published. Any
// value works; the results use differences only.
constexpr TimestampUs kEpochUs = 1'700'000'000'000'000;

using Workload = replay::OpenbWorkload;

StatusOr<Workload> MakeWorkload(const std::vector<OpenbPod>& pods, const TimelineFlags& flags) {
  replay::OpenbWorkloadOptions options;
  options.jobs = flags.jobs;
  options.queues = flags.queues;
  options.unscheduled = flags.unscheduled;
  options.time_scale = flags.time_scale;
  return replay::MakeOpenbWorkload(pods, options);
}

// The files read, by base name, for the result line.
struct Files {
  std::string trace;
  std::string nodes;
};

struct ClusterInfo {
  v1::SimulatedCluster cluster;
  int64_t nodes = 0;
  int64_t gpus = 0;
};

ClusterInfo MakeClusterInfo(const std::vector<OpenbNode>& nodes, double scale) {
  ClusterInfo info;
  info.cluster = OpenbCluster(nodes);
  for (v1::SimulatedNodeGroup& group : *info.cluster.mutable_groups()) {
    group.set_count(std::max<int32_t>(1, static_cast<int32_t>(std::lround(group.count() * scale))));
    info.nodes += group.count();
    info.gpus += static_cast<int64_t>(group.count()) * group.gpus();
  }
  return info;
}

StatusOr<Json> RunOnce(const TimelineFlags& flags, const Files& files, const Workload& workload,
                       const ClusterInfo& cluster, int run) {
  auto clock = std::make_shared<ManualClock>(kEpochUs);
  Options options;
  options.log.level = LogLevel::kWarning;  // stderr is for the benchmark's progress.
  options.store.path.clear();  // in memory: virtual time makes commit latency irrelevant.
  options.default_queue.clear();
  options.clock = clock;
  options.simulated_cluster = cluster.cluster;
  if (flags.max_reservations >= 0) options.engine.max_reservations = flags.max_reservations;
  TESSERA_ASSIGN_OR_RETURN(options.placement,
                           PlacementFromName(flags.policy, ExpectedTasksOf(workload.jobs)));

  Stopwatch open_timer;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Open(options));
  const double open_s = open_timer.Seconds();
  for (const std::string& name : workload.queues) {
    v1::QueueSpec spec;
    spec.set_name(name);
    spec.set_weight(1);
    TESSERA_RETURN_IF_ERROR(scheduler->CreateQueue(spec));
  }

  Progress("timeline run " + std::to_string(run) + ": replaying " +
           std::to_string(workload.jobs.size()) + " jobs on " + std::to_string(cluster.nodes) +
           " nodes (" + std::to_string(cluster.gpus) + " GPUs), policy " + flags.policy);
  ReplayOptions replay_options;
  replay_options.epoch_us = kEpochUs;
  replay_options.on_progress = [run](const replay::ReplayProgress& p) {
    Progress("timeline run " + std::to_string(run) + ": day " +
             std::to_string(p.simulated_us / 86'400'000'000LL) + ", " +
             std::to_string(p.submitted) + "/" + std::to_string(p.total) + " submitted, " +
             std::to_string(p.steps) + " steps");
  };
  std::ofstream log_file;
  std::optional<DecisionLog> log;
  const std::string log_path = DecisionLogPath(flags.decision_log, run, flags.common.repeat);
  if (!flags.decision_log.empty()) {
    log_file.open(log_path, std::ios::trunc);
    log.emplace(log_file, kEpochUs);
    replay_options.decision_log = &*log;
  }
  TESSERA_ASSIGN_OR_RETURN(ReplayResult replay,
                           ReplayTrace(*scheduler, *clock, workload.jobs, replay_options));
  const v1::SchedulerStats stats = scheduler->GetStats();
  scheduler.reset();
  if (log) {
    log_file.close();
    if (!log_file) return InternalError("timeline: could not write the decision log " + log_path);
    Progress("timeline run " + std::to_string(run) + ": " + std::to_string(log->lines()) +
             " placements written to " + log_path);
  }
  if (replay.submit_failures > 0) {
    std::cerr << "timeline: " << replay.submit_failures
              << " submits failed; first: " << replay.first_submit_error << '\n';
  }

  const ReplayMetrics m = SummarizeReplay(replay, cluster.gpus * 1000);
  Json queue_share = Json::object();
  for (const auto& [name, share] : m.queue_gpu_share) queue_share[name] = share;
  Json result = {
      {"benchmark", "timeline"},
      {"trace", files.trace},
      {"nodes", files.nodes},
      {"node_count", cluster.nodes},
      {"gpus", cluster.gpus},
      {"policy", flags.policy},
      {"queues", flags.queues},
      {"queue_count", static_cast<int64_t>(workload.queues.size())},
      {"jobs_limit", flags.jobs},
      {"unscheduled", flags.unscheduled},
      {"time_scale", flags.time_scale},
      {"cluster_scale", flags.cluster_scale},
      {"max_reservations", flags.max_reservations},
      {"seed", flags.common.seed},
      {"trace_rows", workload.trace_rows},
      {"selected", workload.selected},
      {"skipped_unscheduled", workload.skipped_unscheduled},
      {"skipped_no_deletion", workload.skipped_no_deletion},
      {"requests_raised", workload.requests_raised},
      {"rows_out_of_order", workload.out_of_order},
      {"jobs", m.jobs},
      {"submit_failures", replay.submit_failures},
      {"finished", m.finished},
      {"unfinished", m.unfinished},
      {"requeued", m.requeued},
      {"avg_jct_s", m.avg_jct_s},
      {"p50_jct_s", m.p50_jct_s},
      {"p95_jct_s", m.p95_jct_s},
      {"avg_wait_s", m.avg_wait_s},
      {"p50_wait_s", m.p50_wait_s},
      {"p95_wait_s", m.p95_wait_s},
      {"p99_wait_s", m.p99_wait_s},
      {"max_wait_s", m.max_wait_s},
      {"waited_jobs", m.waited},
      // The trace's own scheduler, on the same pods, for comparison.
      {"trace_avg_wait_s",
       workload.trace_wait_s.empty()
           ? 0.0
           : std::accumulate(workload.trace_wait_s.begin(), workload.trace_wait_s.end(), 0.0) /
                 static_cast<double>(workload.trace_wait_s.size())},
      {"trace_p95_wait_s", Percentile(workload.trace_wait_s, 0.95)},
      {"gpu_util_pct", m.gpu_util_pct},
      {"gpu_util_sampled_pct", m.gpu_util_sampled_pct},
      {"jain_fairness", m.jain_fairness},
      {"queue_gpu_share", queue_share},
      {"simulated_s", m.simulated_s},
      {"wall_s", replay.wall_s},
      {"speedup", replay.wall_s > 0 ? m.simulated_s / replay.wall_s : 0.0},
      {"steps", replay.steps},
      {"us_per_step", replay.steps > 0 ? replay.wall_s * 1e6 / replay.steps : 0.0},
      {"open_s", open_s},
      {"submit_wall_s", replay.submit_wall_s},
      {"idle_wall_s", replay.idle_wall_s},
      {"sample_wall_s", replay.sample_wall_s},
      {"read_back_wall_s", replay.read_back_wall_s},
      {"decisions", stats.decisions()},
      {"placements", stats.placements()},
      {"decision_p99_us", stats.decision_latency().p99_us()},
      {"bugs", stats.bugs()},
  };
  Progress("timeline run " + std::to_string(run) + ": " + std::to_string(m.finished) +
           " finished, " + std::to_string(m.unfinished) + " unfinished, " +
           std::to_string(m.simulated_s / 86400) + " days in " + std::to_string(replay.wall_s) +
           " s");
  return result;
}

}  // namespace

int RunTimeline(const TimelineFlags& flags) {
  const std::string data_dir = replay::OpenbDataDir(flags.data);
  StatusOr<std::string> trace = replay::ResolveOpenbFile(flags.trace, data_dir, "openb_pod_list_");
  StatusOr<std::string> nodes = replay::ResolveOpenbFile(flags.nodes, data_dir, "openb_node_list_");
  if (!trace.ok() || !nodes.ok()) {
    std::cerr << "timeline: " << (trace.ok() ? nodes.status() : trace.status()) << '\n';
    return 2;
  }
  const Files files{std::filesystem::path(*trace).filename().string(),
                    std::filesystem::path(*nodes).filename().string()};
  if (StatusOr<PlacementOptions> policy = PlacementFromName(flags.policy); !policy.ok()) {
    std::cerr << "timeline: " << policy.status().message() << '\n';
    return 2;
  }
  StatusOr<std::vector<OpenbNode>> node_rows = replay::ReadOpenbNodes(*nodes);
  StatusOr<std::vector<OpenbPod>> pod_rows = replay::ReadOpenbPods(*trace);
  if (!node_rows.ok() || !pod_rows.ok()) {
    std::cerr << "timeline: " << (node_rows.ok() ? pod_rows.status() : node_rows.status()) << '\n';
    return 2;
  }
  StatusOr<Workload> workload = MakeWorkload(*pod_rows, flags);
  if (!workload.ok()) {
    std::cerr << "timeline: " << *trace << ": " << workload.status().message() << '\n';
    return 2;
  }
  const ClusterInfo cluster = MakeClusterInfo(*node_rows, flags.cluster_scale);
  Progress("timeline: " + *trace + ": " + std::to_string(workload->jobs.size()) + " jobs (" +
           std::to_string(workload->skipped_unscheduled) + " never-scheduled pods skipped); " +
           *nodes + ": " + std::to_string(cluster.nodes) + " nodes in " +
           std::to_string(cluster.cluster.groups_size()) + " shapes");

  std::vector<Json> runs;
  for (int run = 1; run <= flags.common.repeat; ++run) {
    StatusOr<Json> result = RunOnce(flags, files, *workload, cluster, run);
    if (!result.ok()) {
      std::cerr << "timeline: " << result.status() << '\n';
      return 1;
    }
    runs.push_back(*result);
  }
  // Virtual-time results repeat exactly when the replay is deterministic; the per-run values of
  // the headline show whether it is, and wall_s_runs shows the noise in replay speed.
  Json summary = Summarize(runs, "avg_jct_s");
  Json wall_runs = Json::array();
  for (const Json& run : runs) wall_runs.push_back(run.at("wall_s"));
  summary["wall_s_runs"] = wall_runs;
  EmitJsonLine(summary);
  PrintTable(summary,
             {"trace", "policy", "jobs", "unfinished", "avg_jct_s", "p95_jct_s", "avg_wait_s",
              "p95_wait_s", "trace_avg_wait_s", "gpu_util_pct", "gpu_util_sampled_pct",
              "jain_fairness", "simulated_s", "wall_s", "speedup", "us_per_step"});
  return summary.value("submit_failures", 0) > 0 ? 1 : 0;
}

}  // namespace tessera::bench
