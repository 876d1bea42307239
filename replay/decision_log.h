// DecisionLog: every placement decision a scheduler made, read back through the public API and
// written one line per task, so that two builds run on the same seed or trace can be compared
// with `cmp` (docs/testing.md, "Decision-for-decision comparison").
//
//   t=<virtual us since the epoch> job=<id> attempt=<n> task=<index> node=<name>
//   gpus=<i,j,...> milli=<share of each GPU> gpu_mem=<MiB> partition=<form of a share>
//
// Lines come in the order of the events that announced the placements (ADMITTED, or
// JOB_UPDATED when an elastic job grew), which is the order the engine decided them in. The run
// must be deterministic (a ManualClock, WaitIdle after every call: docs/embedding.md), or two
// runs of one build already differ.
//
// Limit: placements are read with GetJob after a step; an attempt placed and requeued within one
// step (a node lost at the instant it was placed) shows only its successor.
//
// Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <ostream>
#include <set>
#include <tuple>

#include "tessera/clock.h"
#include "tessera/scheduler.h"

namespace tessera::replay {

class DecisionLog {
 public:
  DecisionLog(std::ostream& out, TimestampUs epoch_us) : out_(out), epoch_us_(epoch_us) {}

  // Reads the events since the last call and writes the placements they announce. Errors: what
  // WatchEvents or GetJob return.
  Status Update(Scheduler& scheduler);

  int64_t lines() const { return lines_; }

 private:
  std::ostream& out_;
  const TimestampUs epoch_us_;
  uint64_t after_seq_ = 0;
  std::set<std::tuple<uint64_t, int32_t, int32_t>> written_;  // (job, attempt, task).
  int64_t lines_ = 0;
};

}  // namespace tessera::replay
