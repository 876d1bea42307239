#include "engine/engine_statistics.h"

namespace tessera {

void EngineStatistics::Decided(int64_t nanoseconds) {
  decision_latency_.Record(nanoseconds);
  ++decisions_;
}

void EngineStatistics::Placed(bool backfilled) {
  ++placements_;
  if (backfilled) ++backfilled_;
}

void EngineStatistics::Fill(v1::SchedulerStats& stats) const {
  stats.set_finished_jobs(finished_);
  stats.set_decisions(decisions_);
  stats.set_placements(placements_);
  *stats.mutable_decision_latency() = decision_latency_.Summary();
  stats.set_backfilled(backfilled_);
  *stats.mutable_reservation_latency() = reservation_latency_.Summary();
  stats.set_preemptions(preempted_);
  *stats.mutable_preemption_latency() = preemption_latency_.Summary();
  stats.set_lost_gpu_seconds(lost_gpu_us_ / 1'000'000);
  stats.set_idle_gpu_flags(idle_gpu_flags_);
  stats.set_idle_gpu_preemptions(idle_gpu_preemptions_);
}

}  // namespace tessera
