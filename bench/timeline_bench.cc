// timeline: time-based replay of an openb pod trace (Alibaba GPU-sharing workload, see
// ../shared/data/openb/README.md) through the real public API in virtual time. The cluster is
// the node CSV; every pod becomes a one-task job, submitted at its creation_time to the leaf
// queue of its tenant (by default its QoS class), that runs for its real runtime in the trace
// (deletion_time - scheduled_time). The scheduler decides when and where each one starts, so
// waiting times and completion times are the scheduler's, not the trace's; the trace's own
// waits (scheduled_time - creation_time) are reported next to them for comparison.
//
// Pods the trace never scheduled (pod_phase Pending, no scheduled_time: 897 of 8152 in default)
// are skipped by default and counted: the trace shows how long their owners waited before
// giving up, not how long they would have run. --unscheduled run submits them anyway with
// runtime deletion_time - creation_time.
//
// Requests the API refuses are raised to its minimum and counted (requests_raised): one pod in
// default asks for 0 MiB of memory, which becomes 1 MiB.
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
#include "tessera/clock.h"
#include "tessera/scheduler.h"
#include "trace_replay.h"

namespace tessera::bench {
namespace {

// Trace time 0 on the scheduler's clock: 2023-11-14, near when the trace was published. Any
// value works; the results use differences only.
constexpr TimestampUs kEpochUs = 1'700'000'000'000'000;

// The QoS classes of the trace; each gets a leaf queue of weight 1 even when the selected pods
// leave it empty, so the queue set does not depend on --jobs.
const std::vector<std::string> kQosClasses = {"LS", "BE", "Burstable", "Guaranteed"};

// The pods turned into jobs, and what was left out or changed on the way.
struct Workload {
  std::vector<ReplayJob> jobs;
  std::vector<std::string> queues;  // leaf queues to create, in order.
  int64_t trace_rows = 0;
  int64_t selected = 0;             // the first --jobs rows (all when 0).
  int64_t skipped_unscheduled = 0;  // never scheduled in the trace (see the file comment).
  int64_t skipped_no_deletion = 0;  // no deletion_time, so no runtime.
  int64_t requests_raised = 0;      // cpu or memory of 0 raised to 1.
  int64_t out_of_order = 0;         // rows created before the row above them (sorted here).
  // The trace's own waits (scheduled - creation) of the submitted pods it scheduled.
  std::vector<double> trace_wait_s;
};

std::string QueueOf(const OpenbPod& pod, const std::string& mode) {
  if (mode == "single") return "all";
  return pod.qos.empty() ? "unknown" : pod.qos;
}

StatusOr<Workload> MakeWorkload(const std::vector<OpenbPod>& pods, const TimelineFlags& flags) {
  Workload w;
  w.trace_rows = static_cast<int64_t>(pods.size());
  w.selected = flags.jobs > 0 ? std::min<int64_t>(flags.jobs, w.trace_rows) : w.trace_rows;
  std::set<std::string> seen_queues;
  if (flags.queues == "qos") {
    w.queues = kQosClasses;
    seen_queues.insert(kQosClasses.begin(), kQosClasses.end());
  }
  for (int64_t i = 0; i < w.selected; ++i) {
    const OpenbPod& pod = pods[i];
    if (!pod.has_times) {
      return InvalidArgumentError(
          "the pod list has no creation_time/deletion_time/scheduled_time columns (the "
          "multigpu*.csv files lack them): a time-based replay needs them");
    }
    if (!pod.scheduled_s && flags.unscheduled == "skip") {
      ++w.skipped_unscheduled;
      continue;
    }
    if (!pod.deletion_s) {
      ++w.skipped_no_deletion;
      continue;
    }
    const int64_t runtime_s = *pod.deletion_s - pod.scheduled_s.value_or(pod.creation_s);

    ReplayJob& job = w.jobs.emplace_back();
    job.submit_offset_us =
        static_cast<int64_t>(static_cast<double>(pod.creation_s) * 1e6 / flags.time_scale);
    v1::JobSpec& spec = job.spec;
    spec.set_name(pod.name);
    spec.set_queue(QueueOf(pod, flags.queues));
    if (seen_queues.insert(spec.queue()).second) w.queues.push_back(spec.queue());
    v1::TaskResources* task = spec.mutable_task();
    if (pod.cpu_milli <= 0 || pod.memory_mib <= 0) ++w.requests_raised;
    task->set_cpu_milli(std::max<int64_t>(1, pod.cpu_milli));
    task->set_memory_mib(std::max<int64_t>(1, pod.memory_mib));
    if (pod.num_gpu > 0) {
      task->set_gpu_count(pod.num_gpu);
      if (pod.num_gpu == 1 && pod.gpu_milli > 0 && pod.gpu_milli < 1000) {
        task->set_gpu_milli(pod.gpu_milli);
      }
      for (const std::string& model : pod.gpu_models) task->add_gpu_models(model);
    }
    // At least 1 ms: a duration of 0 means "runs until cancelled".
    spec.mutable_simulation()->set_duration_ms(std::max<int64_t>(1, runtime_s * 1000));
    if (pod.scheduled_s) {
      w.trace_wait_s.push_back(static_cast<double>(*pod.scheduled_s - pod.creation_s));
    }
  }
  // Not every pod list is sorted by creation_time (gpushare100 is not), and the replay needs
  // arrivals in order; a stable sort keeps file order among pods created at the same second.
  for (size_t i = 1; i < w.jobs.size(); ++i) {
    if (w.jobs[i].submit_offset_us < w.jobs[i - 1].submit_offset_us) ++w.out_of_order;
  }
  std::stable_sort(w.jobs.begin(), w.jobs.end(), [](const ReplayJob& a, const ReplayJob& b) {
    return a.submit_offset_us < b.submit_offset_us;
  });
  return w;
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
  replay_options.progress_label = "timeline run " + std::to_string(run);
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
  const std::string data_dir = OpenbDataDir(flags.data);
  StatusOr<std::string> trace = ResolveOpenbFile(flags.trace, data_dir, "openb_pod_list_");
  StatusOr<std::string> nodes = ResolveOpenbFile(flags.nodes, data_dir, "openb_node_list_");
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
  StatusOr<std::vector<OpenbNode>> node_rows = ReadOpenbNodes(*nodes);
  StatusOr<std::vector<OpenbPod>> pod_rows = ReadOpenbPods(*trace);
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
