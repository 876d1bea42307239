// Options: everything Scheduler::Open needs, as plain structs with documented defaults.
//
// Every field has a default that works for a small installation; the comment on each field says
// what changing it trades. Presets are named constructors (PlacementOptions::Spread()).
//
// Thread safety: plain values; copied by Scheduler::Open.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/clock.h"
#include "tessera/export.h"
#include "tessera/logging.h"
#include "tessera/plugin_host.h"
#include "tessera/v1/node.pb.h"

namespace tessera {

// How much of the store file SQLite checks (StoreOptions::check_at_open, Scheduler::CheckStore).
enum class StoreCheck {
  kNone,
  // PRAGMA quick_check: every page and record is well formed. Reads the whole file: about 0.2 s
  // for a 125 MB store in the page cache.
  kQuick,
  // PRAGMA integrity_check: also that every index matches its table; about twice as long.
  kFull,
};

struct StoreOptions {
  // SQLite file holding every job, queue, node flag and event. Empty means a temporary store: a
  // file under the system temporary directory ($TMPDIR), not durable, deleted when the scheduler
  // closes; nothing survives (for tests and what-if simulations only).
  std::string path;

  // fsync each commit (SQLite synchronous=FULL). Turning it off makes commits faster but an
  // operating-system crash or power loss may lose the last acknowledged writes.
  bool durable = true;

  // Most writes that share one commit. A batch takes what is waiting, so this matters only when
  // writes arrive faster than the store commits them: then larger batches amortise the fsync
  // and, more, the pages that every commit rewrites (each finished job's row lies on a page of
  // its own), at the cost of a longer wait for the writes behind a batch. Each write still
  // waits only for the commit it is part of.
  int max_batch = 4096;

  // Upper bound on the store's size in MiB; 0 means only the disk limits it. Writes beyond it
  // fail with RESOURCE_EXHAUSTED and change nothing, as a full disk would.
  int64_t max_size_mib = 0;

  // How long to wait for a lock held by another SQLite connection before giving up.
  std::chrono::milliseconds busy_timeout{2000};

  // Checked before anything is loaded; a damaged store is refused (FAILED_PRECONDITION) instead
  // of failing requests later. kNone opens a large store faster and finds damage only when a
  // request reads it.
  StoreCheck check_at_open = StoreCheck::kQuick;
};

// How long the store keeps finished jobs (SUCCEEDED, FAILED, CANCELLED) with their specs and
// events. Without a bound the store grows with every job. A job past a bound is deleted: GetJob
// answers NOT_FOUND, ListJobs leaves it out, WatchEvents no longer returns its events, and its
// idempotency key may be used again. Live jobs and their events are never deleted, nor node and
// queue events. Deletion runs on its own thread, in batches, each one commit of the store
// writer, so it never holds up decisions and a batch only briefly holds up other writes.
struct RetentionOptions {
  // Finished jobs are deleted this long after they finished, on the scheduler's clock. 0: no
  // time bound.
  std::chrono::seconds finished_job_ttl{0};
  // At most this many finished jobs are kept, the most recently finished; older ones are
  // deleted. 0: no count bound.
  int64_t max_finished_jobs = 0;
  // How often (in real time) the bounds are applied. Shorter keeps the store closer to them;
  // each look costs a count of the finished jobs when max_finished_jobs is set.
  std::chrono::milliseconds sweep_interval{60000};
  // Most jobs deleted per commit. Larger deletes a backlog in fewer commits, at the cost of a
  // longer wait for the writes queued behind a batch.
  int sweep_batch = 500;

  bool enabled() const { return finished_job_ttl.count() > 0 || max_finished_jobs > 0; }
};

// The built-in price of one GPU of each known model in fair share, relative to an A100-80GB
// (1.0): half its dense FP16/BF16 tensor throughput over the A100's (312 TFLOP/s), half its
// memory over 80 GB, rounded to the nearest 0.05. H100-80GB 2.1, H100-94GB 1.95, H200-141GB
// 2.45, A100-40GB 0.75, L40S 0.9, L40 0.6, A10 0.35, L4 0.35, V100-32GB 0.4, V100-16GB 0.3,
// T4 0.2 (the last three also under their "Tesla-" device names, "Tesla-T4",
// "Tesla-V100-SXM2-16GB"). A model not listed weighs 1.
TESSERA_EXPORT std::map<std::string, double> DefaultGpuModelWeights();

struct FairShareOptions {
  // Half-life of the usage that orders queues. Zero orders queues by what they hold now (pure
  // DRF). A positive half-life adds their decayed past usage ("fair share with memory"), so a
  // queue that ran a lot recently yields to one that did not; the reported dominant share is
  // then that of holdings plus recent usage and may exceed 1.
  std::chrono::seconds usage_half_life{0};

  // How often decayed usage is folded into the queue order when usage_half_life > 0. Shorter is
  // more exact and costs O(queues log queues) each time.
  std::chrono::milliseconds usage_refresh{1000};

  // The price of one GPU of each model (by the model name nodes report, "H100-80GB"): a queue's
  // share of GPUs is the price of the GPUs it holds over the price of every GPU in the cluster,
  // so an H100-hour counts for more than a T4-hour in its dominant share and in its decayed
  // usage. Guarantees, borrowing limits and caps stay in physical milli-GPUs. A model not
  // listed weighs 1; on a cluster of one GPU model the prices change nothing. Each weight is in
  // (0, 1000] and is kept to a thousandth. Empty: every model weighs 1.
  std::map<std::string, double> gpu_model_weights = DefaultGpuModelWeights();
};

// A task shape the cluster expects to run, and how often: the workload that
// fragmentation-aware placement keeps room for. Usually the shapes of recent jobs with their
// counts; only the relative counts matter.
struct ExpectedTask {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_count = 0;
  int32_t gpu_milli = 1000;             // per GPU; 1000 = whole GPUs, less = a share of one GPU.
  std::vector<std::string> gpu_models;  // allowed models; empty = any.
  double count = 1;
};

struct PlacementOptions {
  enum class Strategy {
    kBinpack,  // fill the fullest node that fits: keeps whole nodes free for big jobs.
    kSpread,   // use the emptiest node: spreads load and failure risk.
    // The node left with the least free cpu and GPU (the BestFit baseline of the FGD paper).
    // Compares every fitting node.
    kBestFit,
    // Fragmentation Gradient Descent (Weng et al., ATC'23): the node and GPU whose use least
    // grows the GPU capacity that expected_tasks could not use. Compares every fitting node.
    kFgd,
    // The default. FGD with a measure that also sees memory and the GPUs a host's cpu and
    // memory cannot feed, compared in steps of 0.2 GPU, first fit in a fixed node order among
    // equals. With the workload learned and max_candidates = 4 it left fewer GPUs unallocated
    // than the paper's FGD on 14 of the 17 Alibaba GPU-sharing traces, at about half of
    // kBinpack's decisions per second in the engine (docs/placement.md). kBinpack is the
    // cheaper choice where jobs rarely share GPUs or fragmentation does not matter.
    kFragmentationAware,
  };
  Strategy strategy = Strategy::kFragmentationAware;

  // The workload kFgd and kFragmentationAware keep room for. Empty: they learn it from the
  // submitted jobs (learn_workload), or, if that is off, measure no fragmentation and only pack.
  std::vector<ExpectedTask> expected_tasks;
  // Only the most frequent shapes of expected_tasks that together make up this share of the
  // expected tasks count (FGD's "typical tasks"): rare shapes cost time and change little.
  double expected_coverage = 0.95;
  // With no expected_tasks, kFgd and kFragmentationAware learn the expected workload from the
  // task shapes of the jobs submitted (and recovered), deterministically. A learned workload
  // needs a few hundred tasks to settle (placements before that pack more than they protect),
  // and each change of it re-measures every node once.
  bool learn_workload = true;
  // How fast the learned workload forgets, as the half-life of a task's weight in tasks
  // submitted since. Shorter follows a changing mix sooner but is noisier and re-measures nodes
  // more often; 0 never forgets.
  double learn_half_life_tasks = 20000;
  // kFragmentationAware compares at most this many fitting nodes per GPU model, taken from the
  // node index tightest first, so a decision costs O(max_candidates * log nodes); 0 compares
  // every fitting node (O(nodes) per decision). On the openb traces 2 to 16 candidates left
  // the same share of GPUs unallocated within about 0.1 point on most traces, and 1 clearly
  // more (docs/placement.md has the measurements); each candidate costs one fragmentation
  // measure.
  int max_candidates = 4;

  static PlacementOptions Binpack() { return With(Strategy::kBinpack); }
  static PlacementOptions Spread() { return With(Strategy::kSpread); }
  static PlacementOptions BestFit() { return With(Strategy::kBestFit); }
  static PlacementOptions Fgd(std::vector<ExpectedTask> expected) {
    return With(Strategy::kFgd, std::move(expected));
  }
  static PlacementOptions FragmentationAware(std::vector<ExpectedTask> expected) {
    return With(Strategy::kFragmentationAware, std::move(expected));
  }

 private:
  static PlacementOptions With(Strategy strategy, std::vector<ExpectedTask> expected = {}) {
    PlacementOptions o;
    o.strategy = strategy;
    o.expected_tasks = std::move(expected);
    return o;
  }
};

// A named priority. Higher values are considered first within a queue and may preempt lower ones
// (PreemptionOptions); jobs of a class that is not preemptible are never chosen as victims.
struct PriorityClass {
  std::string name;
  int32_t value = 0;
  bool preemptible = true;
};

TESSERA_EXPORT std::vector<PriorityClass> DefaultPriorityClasses();

struct EngineOptions {
  // Longest a decision pass holds the decision strand before yielding to other events.
  // Longer passes decide a burst faster; shorter ones keep event latency low. On a clock that is
  // not real time a pass runs to its end, so that the same inputs give the same decisions.
  std::chrono::microseconds decision_slice{5000};

  // Open with decisions paused until Scheduler::ResumeDecisions (benchmarks, staged start-up).
  bool start_paused = false;

  // Attempts a job gets when its tasks go missing after a restart (the executor no longer has
  // them). After the last one the job FAILS instead of being requeued again. A loss with a cause
  // outside the job (its node left the inventory, its backend failed) spends none.
  int max_attempts = 5;

  // How long to wait before retrying store writes that failed (disk full, I/O error). Decisions
  // pause meanwhile; nothing the engine did is dropped.
  std::chrono::milliseconds store_retry{1000};

  // Jobs that do not fit and may hold a reservation at the same time. The first job in fair
  // order that does not fit gets nodes reserved from the time running jobs are expected to free
  // them; other jobs use those nodes only if their time limit ends before (backfill). 0 turns
  // reservations and backfill off (large gangs may then wait behind small jobs forever).
  int max_reservations = 1;

  // Runtime assumed for a running job without a time limit when planning reservations. Longer
  // is safer for the reserving job and leaves less room for backfill.
  std::chrono::seconds default_runtime_estimate{24 * 3600};
};

struct PreemptionOptions {
  // Stop lower-priority preemptible jobs for a higher-priority job that does not fit, and jobs
  // of queues above their guarantee for a queue below its own (fair-share reclaim).
  bool enabled = true;
  bool reclaim = true;

  // A job younger than this is not a victim: its start-up cost would be wasted.
  std::chrono::seconds min_runtime{60};
  // A job preempted once is not preempted again within this window (guards against thrash).
  std::chrono::seconds cooldown{300};
  // At most this many jobs preempted per minute, cluster-wide.
  int max_per_minute = 120;
};

// How GPU telemetry turns into scheduling: a GPU that reports a fatal error takes no more work
// and its tasks are requeued; a GPU that runs too hot takes no new work until it cools.
struct GpuHealthOptions {
  // At or above this temperature a GPU takes no new work...
  double max_temperature_c = 87.0;
  // ...until it reports this or less (hysteresis, so it does not flap).
  double resume_temperature_c = 80.0;
  // XID codes that mean the GPU cannot be trusted (NVIDIA's list: double-bit ECC 48, row
  // remapping 63/64, NVLink 74, fallen off the bus 79, contained/uncontained ECC 94/95, ...).
  std::vector<int> fatal_xids = {48, 62, 63, 64, 74, 79, 92, 94, 95};
  // Stop and requeue the tasks on a failed GPU (true), or let them run to their end (false).
  bool requeue_on_failure = true;
};

// What one job spec may hold, so that no submitter can fill the store or the engine's memory
// with one job. A submit over a limit is refused with INVALID_ARGUMENT naming the field and the
// limit. Each limit must be > 0.
struct JobSizeLimits {
  // Bytes of `command`, every argument counted with a terminating NUL as in argv.
  int64_t max_command_bytes = 64 * 1024;
  // Bytes of `env`, every entry counted as "KEY=VALUE" plus a NUL as in envp.
  int64_t max_env_bytes = 64 * 1024;
  // Bytes of the whole spec in protobuf binary form.
  int64_t max_spec_bytes = 256 * 1024;
};

// Cloud burst (docs/cloud-burst.md): when a queue's head cannot fit the nodes there are and has
// waited scale_out_after, nodes are asked of a capacity provider among the backends (a plugin
// with on_provision: the sim plugin's capacity groups, plugins/aws-ec2), in the node group that
// costs least per useful GPU-hour for the job's shape, spot first where the job may run on spot.
// Burst nodes idle for scale_in_after are drained and given back. Nothing here matters without a
// capacity provider; private nodes are never scaled.
struct ElasticOptions {
  // Ask for burst capacity at all (with a capacity provider configured).
  bool enabled = true;
  // A queue head that does not fit waits this long (since it was submitted, or requeued by a
  // spot interruption with its original submit time) before burst nodes are asked for it.
  // Shorter bursts sooner and pays for peaks private capacity would have absorbed.
  std::chrono::seconds scale_out_after{120};
  // A burst node without tasks for this long is drained and deprovisioned.
  std::chrono::seconds scale_in_after{600};
  // Most burst nodes at once (present and asked for), over every group; > 0.
  int max_nodes = 64;
  // Most provisioning requests started in any minute; > 0.
  int max_requests_per_minute = 6;
  // A spot group priced above this per node-hour is not used (on-demand instead); unset: no
  // limit.
  std::optional<double> max_spot_price_per_hour;
  // A node group whose request failed, or whose spot node was interrupted, is not asked again
  // for this long; each further failure within it doubles it, up to 16 times.
  std::chrono::seconds group_backoff{300};
  // How often burst nodes are charged (by the tasks on them) and checked for idleness; > 0.
  std::chrono::seconds metering_interval{60};
  // The scheduler's own spend limits on burst capacity, beside each queue's
  // (QueueSpec.burst_budget); each unset field is no limit.
  std::optional<double> budget_per_hour;
  std::optional<double> budget_per_day;
  std::optional<double> budget_per_month;
};

struct Options {
  StoreOptions store;
  FairShareOptions fair_share;
  PlacementOptions placement;
  EngineOptions engine;
  PreemptionOptions preemption;
  GpuHealthOptions gpu_health;
  ElasticOptions elastic;

  // Priority classes jobs may name; a job naming none gets default_priority_class.
  std::vector<PriorityClass> priority_classes = DefaultPriorityClasses();
  std::string default_priority_class = "normal";

  // How long finished jobs and their events stay in the store.
  RetentionOptions retention;

  // How large one job spec may be.
  JobSizeLimits job_size_limits;

  // Most jobs a leaf queue may hold PENDING at once (waiting, infeasible or requeued), so that
  // no submitter fills the store and the engine's queues; a submit beyond is refused with
  // RESOURCE_EXHAUSTED naming the queue and the limit. A queue's own
  // QueueSpec::max_pending_jobs takes precedence. 0: no bound. A bound costs each submit to
  // that queue a count of its pending jobs, up to the bound, in the store's index of pending
  // jobs.
  int64_t max_pending_jobs_per_queue = 0;

  // Leaf queue created on first open of an empty store, so jobs can be submitted at once; a job
  // that names no queue goes there. Empty means no queue is created and every job must name
  // its queue ("queue: required").
  std::string default_queue = "default";

  // Where this scheduler's log lines go, and from which level (tessera/logging.h). The library
  // never writes to stdout; with no sink, lines go to stderr.
  LogOptions log;

  // Time source. Null means the real system clock.
  std::shared_ptr<Clock> clock;

  // The cluster the built-in simulated executor runs. When neither field is set, a small
  // built-in cluster is used (see DefaultSimulatedCluster()).
  std::optional<v1::SimulatedCluster> simulated_cluster;
  // A YAML file describing the simulated cluster; see docs/simulated-cluster.md.
  std::string simulated_cluster_file;

  // The backends that run tasks, each a plugin serving its own nodes (tessera/plugin_host.h,
  // BackendOptions). Empty, with executor_plugin unset: the built-in simulation runs
  // simulated_cluster.
  std::vector<BackendOptions> backends;
  // One backend, the same as `backends` with one entry named after its plugin. Set at most one
  // of the two.
  std::optional<PluginOptions> executor_plugin;
  // Where plugins named without a path are looked for, in order.
  std::vector<std::string> plugin_dirs;
  // Sent in every request to the backends (ABI 1.1 fencing, plugin.proto): a scheduler that
  // takes over from another must run with a higher epoch, so that plugins keeping the rule
  // refuse the deposed one. A high-availability setup sets it from its leader lease (an etcd
  // revision, say); a lone scheduler leaves it 0, which plugins always admit.
  uint64_t fencing_epoch = 0;
};

// Two nodes with 8 A100-80GB GPUs each and two with 4 H100-80GB: enough to show fairness,
// gangs and fractional GPUs.
TESSERA_EXPORT v1::SimulatedCluster DefaultSimulatedCluster();

}  // namespace tessera
