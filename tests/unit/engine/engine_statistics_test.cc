// EngineStatistics: each event counted once, into the fields of SchedulerStats it owns.
#include "engine/engine_statistics.h"

#include <doctest/doctest.h>

namespace tessera {
namespace {

TEST_CASE("engine statistics: counts and latencies go to their SchedulerStats fields") {
  EngineStatistics statistics;
  statistics.Decided(2'000);
  statistics.Decided(4'000);
  statistics.Decided(6'000);
  statistics.Placed(/*backfilled=*/false);
  statistics.Placed(/*backfilled=*/true);
  statistics.Finished();
  statistics.Preempted();
  statistics.Preempted();
  statistics.LostWork(1'500'000);  // 1.5 GPU-seconds...
  statistics.LostWork(1'000'000);  // ... and 1: 2 whole seconds reported.
  statistics.ReservationPlanned(10'000);
  statistics.PreemptionPlanned(20'000);

  v1::SchedulerStats stats;
  stats.set_pending_jobs(42);  // not the statistics' field: left alone.
  statistics.Fill(stats);
  CHECK(stats.pending_jobs() == 42);
  CHECK(stats.decisions() == 3);
  CHECK(stats.placements() == 2);
  CHECK(stats.backfilled() == 1);
  CHECK(stats.finished_jobs() == 1);
  CHECK(stats.preemptions() == 2);
  CHECK(stats.lost_gpu_seconds() == 2);
  CHECK(stats.decision_latency().count() == 3);
  CHECK(stats.reservation_latency().count() == 1);
  CHECK(stats.preemption_latency().count() == 1);
}

TEST_CASE("engine statistics: nothing happened, nothing counted") {
  v1::SchedulerStats stats;
  EngineStatistics().Fill(stats);
  CHECK(stats.decisions() == 0);
  CHECK(stats.placements() == 0);
  CHECK(stats.decision_latency().count() == 0);
}

}  // namespace
}  // namespace tessera
