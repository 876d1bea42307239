// EngineStatistics: what the engine has done since it started, for SchedulerStats: decisions,
// placements (and how many of them backfilled), finished jobs, preemptions and the GPU work they
// lost, and how long decisions, reservation plans and preemption plans took.
//
// The engine reports each event as it happens; the statistics never influence a decision.
// Counting is a few additions, cheap enough for every decision.
//
// Thread safety: the engine's, one decision strand (the histograms may also be read from other
// threads, see LatencyHistogram).
#pragma once

#include <cstdint>

#include "common/latency_histogram.h"
#include "tessera/v1/stats.pb.h"

namespace tessera {

class EngineStatistics {
 public:
  // One decision (a queue head tried), which took `nanoseconds`.
  void Decided(int64_t nanoseconds);
  // A placement; `backfilled` when a task of it went on a node reserved whole for another job.
  void Placed(bool backfilled);
  void Finished() { ++finished_; }
  // A job stopped (or shrunk) to make room.
  void Preempted() { ++preempted_; }
  // GPU work (milli-GPU x microseconds) lost by the victims of a preemption or drain.
  void LostWork(int64_t gpu_us) { lost_gpu_us_ += gpu_us; }
  // A running job was flagged for idle GPUs; a job was preempted because they were idle.
  void IdleGpuFlagged() { ++idle_gpu_flags_; }
  void IdleGpuPreempted() { ++idle_gpu_preemptions_; }
  void ReservationPlanned(int64_t nanoseconds) { reservation_latency_.Record(nanoseconds); }
  void PreemptionPlanned(int64_t nanoseconds) { preemption_latency_.Record(nanoseconds); }

  // Sets the fields of `stats` these statistics own (decisions, placements, finished jobs,
  // backfilled, preemptions, lost GPU seconds, idle-GPU flags and preemptions, and the three
  // latencies); leaves the rest.
  void Fill(v1::SchedulerStats& stats) const;

 private:
  int64_t decisions_ = 0;
  int64_t placements_ = 0;
  int64_t backfilled_ = 0;
  int64_t finished_ = 0;
  int64_t preempted_ = 0;
  int64_t lost_gpu_us_ = 0;
  int64_t idle_gpu_flags_ = 0;
  int64_t idle_gpu_preemptions_ = 0;
  LatencyHistogram decision_latency_;
  LatencyHistogram reservation_latency_;
  LatencyHistogram preemption_latency_;
};

}  // namespace tessera
