// trace_replay: drives a real Scheduler through a list of timed job submissions in virtual time,
// and reads back what happened. Any benchmark or what-if tool that has "job J arrives at time
// T" can use it: tessera-replay (docs/replay.md) and the openb timeline benchmark do.
//
// The scheduler must run on a ManualClock and the built-in simulated executor, so that each job
// runs for its spec's simulation.duration_ms of virtual time. The driver submits each job when
// the clock reaches its arrival, and otherwise jumps the clock straight to the next moment when
// something happens, min(next arrival, Scheduler::NextWakeupUs()), calling WaitIdle() after
// every move so that each step is deterministic. The arrivals of one instant are submitted with
// decisions paused, after what the clock's move set off has settled (a move that reached no
// wake-up set off nothing, and the settling is skipped), so that the engine sees them all at
// once however the store batches their commits: the same trace gives the same decisions every
// run. Idle virtual time costs nothing, so months of trace replay in seconds.
//
// Results come back through the public API only: job states and times from ListJobs, queue
// allocations from ListQueues after every step (allocations change only at steps, so summing
// allocation x step length is exact, not an estimate).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "decision_log.h"
#include "tessera/clock.h"
#include "tessera/options.h"
#include "tessera/scheduler.h"

namespace tessera::replay {

// One arrival. Offsets are microseconds from the start of the trace and must not decrease.
struct ReplayJob {
  int64_t submit_offset_us = 0;
  v1::JobSpec spec;
};

// Where a replay stands, for a progress line or bar.
struct ReplayProgress {
  size_t submitted = 0;  // arrivals handed to the scheduler so far.
  size_t total = 0;      // arrivals in the trace.
  int64_t steps = 0;
  TimestampUs simulated_us = 0;  // virtual time since the epoch.
  double wall_s = 0;             // real time since the replay began.
};

struct ReplayOptions {
  // The clock time that trace offset 0 maps to; the clock must not be later than it.
  TimestampUs epoch_us = 0;
  // Called on the replaying thread every `progress_every_s` wall seconds, and once at the end;
  // nothing is reported when empty.
  std::function<void(const ReplayProgress&)> on_progress;
  // Wall seconds between progress reports.
  double progress_every_s = 5;
  // When set, every placement is written to it after the step that made it (decision_log.h).
  DecisionLog* decision_log = nullptr;
  // Read every queue's allocation after each step (ReplayResult::queue_gpu_milli_us, and from it
  // ReplayMetrics::gpu_util_sampled_pct, which counts every attempt of a job where the job
  // times give only the last). Costs a ListQueues per step.
  bool sample_queues = true;
  // Called after every step with the span of clock time the state it left holds, [now, until):
  // the scheduler is idle and the clock still at `now`, so what the callback reads (nodes,
  // queues) stays so until `until`, and summing it x (until - now) is exact. An error ends the
  // replay with it. Not called after the last step (nothing follows it).
  std::function<Status(TimestampUs now, TimestampUs until)> on_step;
};

// What became of one submitted job. Times are clock times (microseconds since the epoch of the
// scheduler's clock), 0 when not reached.
struct ReplayedJob {
  uint64_t id = 0;  // 0 when the submit failed.
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  std::string queue;
  TimestampUs submit_us = 0;  // status.submit_time_us
  TimestampUs start_us = 0;   // status.start_time_us: admission of the last attempt.
  TimestampUs end_us = 0;     // status.end_time_us
  int attempt = 0;
  int preemptions = 0;      // status.preemptions
  int64_t gpu_milli = 0;    // GPU compute the job holds while it runs, all tasks together.
  int64_t duration_us = 0;  // spec.simulation.duration_ms: how long it runs undisturbed.
};

struct ReplayResult {
  std::vector<ReplayedJob> jobs;  // parallel to the input.
  TimestampUs epoch_us = 0;
  // The clock when nothing was left to do: no arrival and no wake-up pending. Jobs that are
  // still pending then (infeasible, or stuck) never run.
  TimestampUs end_us = 0;
  int64_t steps = 0;
  int64_t submit_failures = 0;
  std::string first_submit_error;
  // Per queue (every queue ListQueues returns): allocated GPU compute integrated over the replay,
  // in milli-GPU x microseconds, from [epoch_us, end_us] (0 unless sample_queues); and its
  // weight (0 read as 1).
  std::map<std::string, double> queue_gpu_milli_us;
  std::map<std::string, double> queue_weight;
  // Where the wall time went: the whole replay, submitting, WaitIdle (the scheduler's own work:
  // decisions, commits, simulated task starts and ends), sampling queues, and reading back.
  double wall_s = 0;
  double submit_wall_s = 0;
  double idle_wall_s = 0;
  double sample_wall_s = 0;
  double read_back_wall_s = 0;
};

// Replays `jobs` through `scheduler`, whose clock is `clock`, and reads the outcome back.
// Errors: INVALID_ARGUMENT (offsets decrease, or the clock is past the epoch), or what the
// scheduler's reads return. Failed submits are counted, not errors.
StatusOr<ReplayResult> ReplayTrace(Scheduler& scheduler, ManualClock& clock,
                                   const std::vector<ReplayJob>& jobs,
                                   const ReplayOptions& options);

// Headline figures of a replay. Seconds are virtual (the scheduler's clock).
struct ReplayMetrics {
  int64_t jobs = 0;        // submitted (acknowledged).
  int64_t finished = 0;    // SUCCEEDED, FAILED or CANCELLED.
  int64_t unfinished = 0;  // anything else when the replay ended.
  int64_t started = 0;     // admitted at least once.
  int64_t requeued = 0;    // attempt > 1 (lost or preempted, then run again).
  // Completion time (end - submit) of finished jobs, and waiting time (start - submit) of
  // started ones.
  double avg_jct_s = 0, p50_jct_s = 0, p95_jct_s = 0, p99_jct_s = 0;
  double avg_wait_s = 0, p50_wait_s = 0, p95_wait_s = 0, p99_wait_s = 0, max_wait_s = 0;
  // Jobs that waited at all (start later than submit in virtual time).
  int64_t waited = 0;
  // Time-averaged allocated GPU compute / GPU capacity over [epoch, end], in percent: from the
  // jobs' start and end times, and from the queue allocations sampled at every step. The two
  // agree when the scheduler's accounting and its reported job times agree.
  double gpu_util_pct = 0;
  double gpu_util_sampled_pct = 0;
  // Jain's index over the queues' weight-normalised GPU shares; see JainFairness.
  double jain_fairness = 0;
  // Each queue's time-averaged share of GPU capacity (0..1), before weighting.
  std::map<std::string, double> queue_gpu_share;
  double simulated_s = 0;  // end - epoch.
  // Last end of a finished job - first submit of any job; 0 when none finished.
  double makespan_s = 0;
  // Sum of status.preemptions over the jobs.
  int64_t preemptions = 0;
};

// `capacity_gpu_milli`: the cluster's GPU compute, 1000 per GPU. With `queue` set, only that
// queue's jobs count, and gpu_util_pct is the share of the cluster's GPU time they held;
// jain_fairness is then left at 1.
ReplayMetrics SummarizeReplay(const ReplayResult& result, int64_t capacity_gpu_milli,
                              const std::string* queue = nullptr);

// Jain's fairness index, (sum x)^2 / (n * sum x^2), of non-negative values: 1 when all are
// equal, 1/n when one value holds everything. 1 for an empty or all-zero list (all equal).
double JainFairness(const std::vector<double>& values);

// The placement strategy a policy name stands for: default (the library's PlacementOptions as
// they are, `expected` unused), binpack, spread, bestfit, fgd, fragmentation-aware. The last
// two keep room for `expected` (for a replay: the shapes of its own jobs, as the FGD paper does;
// see ExpectedTasksOf). Errors: INVALID_ARGUMENT naming the known policies.
StatusOr<PlacementOptions> PlacementFromName(const std::string& name,
                                             std::vector<ExpectedTask> expected = {});
std::vector<std::string> PlacementNames();

// The distinct task shapes of `jobs` with how many jobs have each.
std::vector<ExpectedTask> ExpectedTasksOf(const std::vector<ReplayJob>& jobs);

}  // namespace tessera::replay
