// A job's life through the public API, in virtual time.
#include <doctest/doctest.h>

#include "tessera/job.h"
#include "tessera/scheduler.h"

namespace tessera {
namespace {

std::unique_ptr<Scheduler> OpenWithClock(std::shared_ptr<ManualClock> clock) {
  Options options;
  options.clock = clock;
  auto scheduler = Scheduler::Open(options);
  REQUIRE_MESSAGE(scheduler.ok(), scheduler.status().ToString());
  return std::move(*scheduler);
}

TEST_CASE("a submitted job runs for its simulated duration and succeeds") {
  auto clock = std::make_shared<ManualClock>();
  auto scheduler = OpenWithClock(clock);
  auto job =
      scheduler->Submit(JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(10'000).Build());
  REQUIRE_MESSAGE(job.ok(), job.status().ToString());
  CHECK(job->status().state() == v1::PENDING);
  scheduler->WaitIdle();
  auto running = scheduler->GetJob(job->id());
  REQUIRE(running.ok());
  CHECK(running->status().state() == v1::RUNNING);
  REQUIRE(running->status().placements_size() == 1);
  CHECK(running->status().placements(0).gpus_size() == 2);

  clock->AdvanceUs(10'000'000);
  scheduler->WaitIdle();
  auto done = scheduler->GetJob(job->id());
  REQUIRE(done.ok());
  CHECK(done->status().state() == v1::SUCCEEDED);
}

}  // namespace
}  // namespace tessera
