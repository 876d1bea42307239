// The benchmarks tessera-bench runs: their parameters (filled from flags by main.cc) and entry
// points. Each entry point prints its result lines itself and returns the process exit code.
#pragma once

#include <cstdint>
#include <string>

#include "bench_util.h"
#include "tessera/status.h"

namespace tessera::bench {

// decide: placement throughput on a synthetic mixed-GPU cluster (decide_bench.cc).
struct DecideFlags {
  CommonFlags common;
  int nodes = 1000;
  int jobs = 10000;
  int queues = 100;
  int submit_window = 512;  // SubmitAsync calls kept in flight while loading the jobs.
  // Placement strategy: "default" (the library's), "binpack" or "fragmentation-aware"; and,
  // when >= 0, PlacementOptions::max_candidates.
  std::string strategy = "default";
  int candidates = -1;
  // Where job state goes: "memory" (an in-memory store: decisions, not fsync), "file" (a SQLite
  // file in a temporary directory, no fsync) or "durable" (a file, fsync per commit, as churn).
  std::string store = "memory";
  // When set, every placement goes to this file (decision_log.h; with --repeat, one file per
  // run, PATH.1, PATH.2, ...) and the run uses a ManualClock, so that a decision pass is not cut
  // by slices of real time and the placements repeat exactly: compare two builds with cmp.
  std::string decision_log;
};
int RunDecide(const DecideFlags& flags);
// One decide run (numbered `run` in progress output): its result line, not printed.
StatusOr<Json> RunDecideOnce(const DecideFlags& flags, int run);

// submit: acknowledged submissions per second through the public API (submit_bench.cc).
struct SubmitFlags {
  CommonFlags common;
  int jobs = 100000;
  int clients = 8;
  int window = 1;
  bool http = false;       // through a tesserad started for the run (submit_http_bench.cc).
  bool tessctl = false;    // the same, each submit a `tessctl submit` process of its own.
  bool vs_sbatch = false;  // with tessctl: each run followed by the same loop of `sbatch`.
  bool durable = true;
  std::string decisions = "off";
};
int RunSubmit(const SubmitFlags& flags);
int RunSubmitHttp(const SubmitFlags& flags);

// recover: cost of reopening a big store (recover_bench.cc). The measurement runs in a child
// process (RunRecoverMeasure) so the generator's memory does not count.
struct RecoverFlags {
  CommonFlags common;
  int64_t live = 100000;
  int64_t finished = 1000000;
  int nodes = 100;  // simulated nodes (8 GPUs each) the reopened scheduler places onto.
};
int RunRecover(const RecoverFlags& flags);

struct RecoverMeasureFlags {
  std::string store;
  int nodes = 100;
  uint64_t after_seq = 0;  // last event seq of the generated store; later events are new.
};
int RunRecoverMeasure(const RecoverMeasureFlags& flags);

// openb: the Alibaba GPU-sharing trace replayed with the FGD paper's protocol, compared with its
// published results (openb_bench.cc).
struct OpenbFlags {
  std::string trace = "default";  // short name, path, comma list, or "all" (the 17 of the paper).
  std::string nodes = "openb_node_list_gpu_node.csv";
  std::string policy = "default";  // bestfit, fgd, default (kFragmentationAware), binpack, spread;
                                   // a comma list, or "all" (bestfit, fgd, default).
  int seeds = 10;
  uint64_t first_seed = 42;
  double tune = 1.3;  // arrived GPU request at the end, as a multiple of capacity.
  int threads = 0;    // seeds replayed at once; 0 = one per core.
  std::string data;   // the openb folder; empty = ../shared/data/openb beside the sources.
};
int RunOpenb(const OpenbFlags& flags);

// timeline: virtual-time replay of an openb pod trace with departures (timeline_bench.cc).
struct TimelineFlags {
  CommonFlags common;
  std::string trace = "default";   // pod list: name in the data folder or a path.
  std::string nodes = "gpu_node";  // node list: name in the data folder or a path.
  std::string data;                // data folder; empty = ../shared/data/openb by the sources.
  std::string policy = "default";
  int64_t jobs = 0;                  // replay only the first N pods; 0 = all.
  std::string queues = "qos";        // qos: a leaf queue per QoS class; single: one queue.
  std::string unscheduled = "skip";  // pods the trace never scheduled: skip | run.
  double time_scale = 1;             // divide arrival times by this (runtimes unchanged).
  double cluster_scale = 1;          // keep this share of each node shape (at least one node).
  int max_reservations = -1;         // EngineOptions::max_reservations; -1 = library default.
  std::string decision_log;          // every placement to this file (as DecideFlags).
};
int RunTimeline(const TimelineFlags& flags);

// churn: steady state on a nearly full cluster in real time (churn_bench.cc).
struct ChurnFlags {
  CommonFlags common;
  int nodes = 1000;
  double rate = 500;         // arrivals per second, all clients together.
  double seconds = 20;       // measured window.
  double warmup = 3;         // seconds of arrivals before the window.
  int clients = 4;           // client threads, one leaf queue each.
  double utilization = 0.9;  // target allocated GPU share in steady state.
  bool durable = true;       // fsync each commit.
  // Before each run, decide on the same cluster (10 jobs per node, 100 queues; the median of
  // three runs) and the same store settings, so that the two rates are compared on the same
  // machine at the same time: decide_ratio = decide's decisions/s over churn's sustained
  // decisions/s.
  bool vs_decide = false;
};
int RunChurn(const ChurnFlags& flags);

// preempt: high-priority arrivals on a cluster full of preemptible work.
struct PreemptFlags {
  CommonFlags common;
  int running = 20000;
  double rate = 50;          // arrivals per second of virtual time.
  double seconds = 20;       // of virtual time.
  std::string decision_log;  // every placement to this file (as DecideFlags).
};
int RunPreempt(const PreemptFlags& flags);

// local-launch: J `true` jobs through the scheduler onto one node of the local backend with S
// slots, its state directory on the filesystem under test (local_launch_bench.cc).
struct LocalLaunchFlags {
  CommonFlags common;
  std::string state_dir;         // required; kept between runs, so drift shows.
  std::string plugin = "local";  // a name in the build's plugins directory, or a .so path.
  int jobs = 2000;
  int slots = 8;
  int poll_ms = 1;                     // the backend's poll_interval_ms.
  std::string task_logs;               // empty: the backend's default (and the key left out).
  std::string store_dir = "/dev/shm";  // the scheduler's store (not durable), off the disk.
};
int RunLocalLaunch(const LocalLaunchFlags& flags);

// kube: pods made by others bound through the Kubernetes backend against the fake API server
// (kube_bench.cc).
struct KubeFlags {
  CommonFlags common;
  int nodes = 1000;
  int pods = 2000;
  int create_threads = 8;             // threads creating the pods (and the nodes).
  int workers = 8;                    // the backend's workers (its API-calling threads).
  int watch_pods = 10000;             // pods of the watch-recovery measurement; 0 skips it.
  bool ceiling = true;                // also run the fake's bench_binds.py alone.
  double timeout_s = 300;             // a run that has not bound every pod by then fails.
  std::string plugin = "kubernetes";  // a name in the build's plugins directory, or a .so path.
  // More `key = value` lines for the backend's config, ';'-separated ("count_others_pods =
  // false"), to measure what a setting costs.
  std::string backend_config;
};
int RunKube(const KubeFlags& flags);

// burst: cost and queueing delay of cloud burst against private pools, on a workload with a
// daily peak, in virtual time (burst_bench.cc). Prices are per GPU-hour (nodes have 8 GPUs).
struct BurstFlags {
  CommonFlags common;
  bool quick = false;  // 1 day at a mean of 40 GPUs: a CI-size run.
  double days = 7;
  double mean_gpus = 110;
  double amplitude = 0.9;
  double peak_hour = 15;
  double checkpointing_share = 0.6;
  double private_gpu_hour = 1.50;
  double on_demand_gpu_hour = 4.00;
  double spot_gpu_hour = 1.40;
  double provision_delay_s = 180;
  double spot_interrupt_after_h = 4;
  double budget_training_per_hour = 100;
  double budget_global_per_day = 2000;
  std::string configs = "ABCDE";  // which configurations to run.
};
int RunBurst(BurstFlags flags);

}  // namespace tessera::bench
