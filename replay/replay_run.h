// replay_run: one what-if replay, start to end. Opens a Scheduler with the replay's config on a
// ManualClock, applies the config's queue tree, creates the trace's queues that do not exist
// (with every missing ancestor, weight 1; with replay.one_queue only that queue, and each job's
// result keeps its trace queue as its tenant), replays the trace in virtual time (trace_replay.h)
// and returns what happened together with the scheduler's own counters.
//
// Thread safety: one call at a time per scheduler (each call opens its own).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "replay_config.h"
#include "tessera/v1/stats.pb.h"
#include "trace_input.h"
#include "trace_replay.h"

namespace tessera::replay {

// Trace offset 0 on the scheduler's clock: 2023-11-14T22:13:20Z. Any value works; results use
// differences only.
inline constexpr TimestampUs kReplayEpochUs = 1'700'000'000'000'000;

struct RunSettings {
  std::function<void(const ReplayProgress&)> on_progress;
  double progress_every_s = 0.5;
  DecisionLog* decision_log = nullptr;
};

struct RunOutcome {
  ReplayResult result;
  v1::SchedulerStats stats;
  int64_t nodes = 0;
  int64_t gpus = 0;
  std::vector<std::string> queues_created;  // by the replay for the trace, parents first.
  double open_s = 0;                        // wall seconds to open the scheduler.
  std::string one_queue;                    // replay.one_queue, when the jobs went there.
};

// Errors: what Scheduler::Open, ApplyQueueTree, CreateQueue or the replay return.
StatusOr<RunOutcome> RunReplay(const ReplayConfig& config, const Trace& trace,
                               const RunSettings& settings);

}  // namespace tessera::replay
