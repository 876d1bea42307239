// tessera-bench: the benchmark suite's single program. This file only parses flags and picks
// the subcommand; each benchmark lives in its own file (see benchmarks.h).
//
//   tessera-bench decide --nodes 5000 --jobs 50000 --queues 100
//   tessera-bench submit --jobs 100000 --clients 8 --window 64
//   tessera-bench submit --http --jobs 50000 --clients 16
//   tessera-bench submit --tessctl --jobs 500 --clients 1
//   tessera-bench recover --live 100000 --finished 1000000
//   tessera-bench openb --trace default --policy fgd --seeds 10
//   tessera-bench timeline --trace default --nodes gpu_node --policy binpack
//   tessera-bench churn --nodes 1000 --rate 500 --seconds 20
//   tessera-bench local-launch --state-dir /var/tmp/local-state --jobs 2000 --repeat 5
//   tessera-bench burst --days 7 > burst.jsonl
//
// Results: one JSON object per line on stdout; a short table and progress on stderr.

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "benchmarks.h"

namespace tessera::bench {
namespace {

void AddCommonFlags(CLI::App* sub, CommonFlags* common) {
  sub->add_option("--repeat", common->repeat, "runs; numeric fields report their median")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--seed", common->seed, "seed of the workload generator")->capture_default_str();
}

int Main(int argc, char** argv) {
  CLI::App app{"Tessera benchmarks: one JSON result line per benchmark on stdout"};
  app.require_subcommand(1);

  DecideFlags decide;
  PreemptFlags preempt;
  CLI::App* preempt_cmd = app.add_subcommand(
      "preempt", "preemption decisions: high-priority arrivals on a cluster of running work");
  AddCommonFlags(preempt_cmd, &preempt.common);
  preempt_cmd->add_option("--running", preempt.running, "running low-priority one-GPU jobs")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  preempt_cmd->add_option("--rate", preempt.rate, "high-priority arrivals per (virtual) second")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  preempt_cmd->add_option("--seconds", preempt.seconds, "virtual seconds of arrivals")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  preempt_cmd->add_option("--decision-log", preempt.decision_log,
                          "write every placement to this file (compare builds with cmp)");

  CLI::App* decide_cmd = app.add_subcommand(
      "decide", "placement throughput: J pending jobs onto N mixed-GPU nodes, Q queues");
  AddCommonFlags(decide_cmd, &decide.common);
  decide_cmd->add_option("--nodes", decide.nodes, "simulated nodes, 8 GPUs each")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decide_cmd->add_option("--jobs", decide.jobs, "pending jobs to decide")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decide_cmd->add_option("--queues", decide.queues, "leaf queues (3-level hierarchy)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decide_cmd->add_option("--strategy", decide.strategy, "placement strategy")
      ->capture_default_str()
      ->check(CLI::IsMember({"default", "binpack", "fragmentation-aware"}));
  decide_cmd->add_option("--candidates", decide.candidates,
                         "PlacementOptions::max_candidates (0: all; default: the library's)");
  decide_cmd->add_option("--submit-window", decide.submit_window, "submits in flight while loading")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decide_cmd->add_option("--store", decide.store, "job state: memory, file (no fsync) or durable")
      ->capture_default_str()
      ->check(CLI::IsMember({"memory", "file", "durable"}));
  decide_cmd->add_option("--decision-log", decide.decision_log,
                         "write every placement to this file (virtual time; compare builds "
                         "with cmp)");

  SubmitFlags submit;
  CLI::App* submit_cmd =
      app.add_subcommand("submit", "acknowledged submits per second through the public API");
  AddCommonFlags(submit_cmd, &submit.common);
  submit_cmd->add_option("--jobs", submit.jobs, "jobs in total, split over the clients")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  submit_cmd->add_option("--clients", submit.clients, "client threads")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  submit_cmd
      ->add_option("--window", submit.window,
                   "submits each client keeps in flight (1: synchronous Submit)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  submit_cmd->add_flag("--http", submit.http,
                       "through the real daemon: start tesserad, C keep-alive HTTP clients");
  submit_cmd->add_flag("--tessctl", submit.tessctl,
                       "through the real daemon and CLI: C loops each running `tessctl submit` "
                       "once per job, as a shell script does");
  submit_cmd->add_flag("--vs-sbatch", submit.vs_sbatch,
                       "with --tessctl: follow each run with the same loop of `sbatch --hold` "
                       "(SLURM_CONF: bench/slurm/one-node.sh) and report the ratio");
  submit_cmd->add_option("--durable", submit.durable, "fsync each commit (true|false)")
      ->capture_default_str();
  submit_cmd->add_option("--decisions", submit.decisions, "let the engine place jobs meanwhile")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));

  RecoverFlags recover;
  CLI::App* recover_cmd =
      app.add_subcommand("recover", "reopen a store of F finished and L live jobs");
  AddCommonFlags(recover_cmd, &recover.common);
  recover_cmd->add_option("--live", recover.live, "pending jobs in the store")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  recover_cmd->add_option("--finished", recover.finished, "succeeded jobs in the store")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  recover_cmd->add_option("--nodes", recover.nodes, "simulated nodes (8 GPUs each) to place on")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  TimelineFlags timeline;
  CLI::App* timeline_cmd = app.add_subcommand(
      "timeline", "virtual-time replay of an openb pod trace: JCT, waits, utilisation, fairness");
  AddCommonFlags(timeline_cmd, &timeline.common);
  timeline_cmd
      ->add_option("--trace", timeline.trace, "pod list: name (default, gpushare40...) or path")
      ->capture_default_str();
  timeline_cmd
      ->add_option("--nodes", timeline.nodes, "node list: name (gpu_node, all_node) or path")
      ->capture_default_str();
  timeline_cmd->add_option("--data", timeline.data,
                           "openb data folder (default: ../shared/data/openb)");
  timeline_cmd
      ->add_option("--policy", timeline.policy,
                   "placement policy (default: the library's own, binpack, spread, bestfit, fgd, "
                   "fragmentation-aware: told the trace's workload)")
      ->capture_default_str();
  timeline_cmd->add_option("--jobs", timeline.jobs, "replay only the first N pods (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  timeline_cmd->add_option("--queues", timeline.queues, "tenants: a queue per QoS class, or one")
      ->capture_default_str()
      ->check(CLI::IsMember({"qos", "single"}));
  timeline_cmd
      ->add_option("--unscheduled", timeline.unscheduled,
                   "pods the trace never scheduled: skip, or run for deletion - creation")
      ->capture_default_str()
      ->check(CLI::IsMember({"skip", "run"}));
  timeline_cmd
      ->add_option("--time-scale", timeline.time_scale,
                   "divide arrival times by this (runtimes unchanged): more load")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  timeline_cmd
      ->add_option("--cluster-scale", timeline.cluster_scale,
                   "keep this share of each node shape (at least one node each): more load")
      ->capture_default_str()
      ->check(CLI::Range(0.0001, 1.0));
  timeline_cmd
      ->add_option("--max-reservations", timeline.max_reservations,
                   "EngineOptions::max_reservations (0: no reservations; -1: library default)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1000000));
  timeline_cmd->add_option("--decision-log", timeline.decision_log,
                           "write every placement to this file (compare builds with cmp)");

  ChurnFlags churn;
  CLI::App* churn_cmd = app.add_subcommand(
      "churn", "steady state on a nearly full cluster: sustained decisions/s and added delay");
  AddCommonFlags(churn_cmd, &churn.common);
  churn_cmd->add_option("--nodes", churn.nodes, "simulated nodes, 8 GPUs each")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  churn_cmd->add_option("--rate", churn.rate, "job arrivals per second (Poisson)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  churn_cmd->add_option("--seconds", churn.seconds, "measured window")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  churn_cmd->add_option("--warmup", churn.warmup, "seconds of arrivals before the window")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  churn_cmd->add_option("--clients", churn.clients, "client threads, one queue each")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  churn_cmd->add_option("--utilization", churn.utilization, "target allocated GPU share (0..1)")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1.0));
  churn_cmd->add_option("--durable", churn.durable, "fsync each commit (true|false)")
      ->capture_default_str();
  churn_cmd->add_flag("--vs-decide", churn.vs_decide,
                      "before each run, a decide run on the same cluster and store settings; "
                      "reports decide_ratio");

#ifdef TESSERA_BENCH_KUBE
  KubeFlags kube;
  CLI::App* kube_cmd = app.add_subcommand(
      "kube", "pods made by others bound through the Kubernetes backend (fake API server)");
  AddCommonFlags(kube_cmd, &kube.common);
  kube_cmd->add_option("--nodes", kube.nodes, "fake GPU nodes (8 GPUs each)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  kube_cmd->add_option("--pods", kube.pods, "one-GPU pods with schedulerName tessera")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  kube_cmd->add_option("--create-threads", kube.create_threads, "threads creating the pods")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  kube_cmd->add_option("--workers", kube.workers, "the backend's workers (API-calling threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  kube_cmd->add_option("--watch-pods", kube.watch_pods, "pods of the 410 recovery run (0: skip)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  kube_cmd->add_flag("--ceiling,!--no-ceiling", kube.ceiling,
                     "also measure the fake alone with its bench_binds.py");
  kube_cmd
      ->add_option("--plugin", kube.plugin,
                   "the backend: a name in the build's plugins "
                   "directory, or a .so path (to compare two builds)")
      ->capture_default_str();
  kube_cmd->add_option("--backend-config", kube.backend_config,
                       "more key = value lines for the backend, ';'-separated "
                       "(\"count_others_pods = false\")");
  kube_cmd->add_option("--timeout-s", kube.timeout_s, "a run not done by then fails")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
#endif

  LocalLaunchFlags local_launch;
  CLI::App* local_launch_cmd = app.add_subcommand(
      "local-launch", "short tasks through the local backend: launches/s on one S-slot node");
  AddCommonFlags(local_launch_cmd, &local_launch.common);
  local_launch_cmd
      ->add_option("--state-dir", local_launch.state_dir,
                   "the backend's state_dir, on the filesystem to measure (kept between runs)")
      ->required();
  local_launch_cmd
      ->add_option("--plugin", local_launch.plugin,
                   "the backend: a name in the build's plugins directory, or a .so path")
      ->capture_default_str();
  local_launch_cmd->add_option("--jobs", local_launch.jobs, "jobs of one `true` task each")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  local_launch_cmd->add_option("--slots", local_launch.slots, "tasks the node runs at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  local_launch_cmd->add_option("--poll-ms", local_launch.poll_ms, "the backend's poll_interval_ms")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  local_launch_cmd->add_option("--task-logs", local_launch.task_logs,
                               "the backend's task_logs (per_task, shared, none); unset: its "
                               "default, and the key left out");
  local_launch_cmd
      ->add_option("--store-dir", local_launch.store_dir,
                   "where the scheduler's store goes (not durable)")
      ->capture_default_str();

  // The child half of `recover`; an empty group hides it from --help.
  RecoverMeasureFlags measure;
  CLI::App* measure_cmd =
      app.add_subcommand("recover-measure", "internal: open a store and time it")->group("");
  measure_cmd->add_option("--store", measure.store, "store file to open")->required();
  measure_cmd->add_option("--nodes", measure.nodes, "simulated nodes")->check(CLI::PositiveNumber);
  measure_cmd->add_option("--after-seq", measure.after_seq, "watch events after this seq");

  OpenbFlags openb;
  CLI::App* openb_cmd = app.add_subcommand(
      "openb", "Alibaba GPU-sharing trace, FGD paper's protocol, vs its published results");
  openb_cmd->add_option("--trace", openb.trace, "pod list: name, path, comma list, or all")
      ->capture_default_str();
  openb_cmd->add_option("--nodes", openb.nodes, "node list (csv name or path)")
      ->capture_default_str();
  openb_cmd->add_option("--policy", openb.policy, "bestfit|fgd|default|binpack|spread, list, all")
      ->capture_default_str();
  openb_cmd->add_option("--seeds", openb.seeds, "replays, seeds first-seed, first-seed+1, ...")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  openb_cmd->add_option("--first-seed", openb.first_seed, "seed of the first replay")
      ->capture_default_str();
  openb_cmd->add_option("--tune", openb.tune, "arrived GPU request at the end / capacity")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  openb_cmd->add_option("--threads", openb.threads, "replays at once (0: one per core)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  openb_cmd->add_option("--data", openb.data, "openb data folder")->capture_default_str();

  BurstFlags burst;
  burst.common.repeat = 1;  // virtual time: a second run repeats the first exactly.
  CLI::App* burst_cmd = app.add_subcommand(
      "burst", "cloud burst vs private pools on a daily peak: cost and queueing delay");
  AddCommonFlags(burst_cmd, &burst.common);
  burst_cmd->add_flag("--quick", burst.quick, "1 day at a mean of at most 40 GPUs (CI size)");
  burst_cmd->add_option("--days", burst.days, "days of arrivals (virtual), at most 28")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 28.0));
  burst_cmd->add_option("--mean-gpus", burst.mean_gpus, "mean GPUs in use at zero wait")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  burst_cmd->add_option("--amplitude", burst.amplitude, "day curve: peak = mean x (1 + this)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  burst_cmd->add_option("--peak-hour", burst.peak_hour, "hour of the day's peak, UTC")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 24.0));
  burst_cmd
      ->add_option("--checkpointing-share", burst.checkpointing_share,
                   "share of jobs that checkpoint (queue training; may run on spot)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  burst_cmd->add_option("--private-gpu-hour", burst.private_gpu_hour, "private pool, per GPU-hour")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  burst_cmd->add_option("--on-demand-gpu-hour", burst.on_demand_gpu_hour, "on-demand, per GPU-hour")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  burst_cmd->add_option("--spot-gpu-hour", burst.spot_gpu_hour, "spot, per GPU-hour")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  burst_cmd->add_option("--provision-delay-s", burst.provision_delay_s, "request to node joined")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  burst_cmd
      ->add_option("--spot-interrupt-after-h", burst.spot_interrupt_after_h,
                   "each spot node gets its 2-minute notice this long after it joined (0: never)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  burst_cmd
      ->add_option("--budget-training-per-hour", burst.budget_training_per_hour,
                   "config E: queue training's burst budget per hour")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  burst_cmd
      ->add_option("--budget-global-per-day", burst.budget_global_per_day,
                   "config E: the global burst budget per day")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  burst_cmd->add_option("--configs", burst.configs, "which of A B C D E to run (\"ACD\")")
      ->capture_default_str();

  CLI11_PARSE(app, argc, argv);

  if (preempt_cmd->parsed()) return RunPreempt(preempt);
  if (decide_cmd->parsed()) return RunDecide(decide);
  if (submit_cmd->parsed()) return RunSubmit(submit);
  if (recover_cmd->parsed()) return RunRecover(recover);
  if (timeline_cmd->parsed()) return RunTimeline(timeline);
  if (churn_cmd->parsed()) return RunChurn(churn);
  if (local_launch_cmd->parsed()) return RunLocalLaunch(local_launch);
#ifdef TESSERA_BENCH_KUBE
  if (kube_cmd->parsed()) return RunKube(kube);
#endif
  if (measure_cmd->parsed()) return RunRecoverMeasure(measure);
  if (openb_cmd->parsed()) return RunOpenb(openb);
  if (burst_cmd->parsed()) return RunBurst(burst);
  return 1;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  try {
    return tessera::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tessera-bench: " << e.what() << '\n';
    return 1;
  }
}
