// Opens a scheduler from an installed Tessera, runs one job in virtual time, and exits 0 when
// it succeeded.
#include <iostream>

#include "tessera/job.h"
#include "tessera/scheduler.h"

int main() {
  auto clock = std::make_shared<tessera::ManualClock>();
  tessera::Options options;
  options.clock = clock;
  auto scheduler = tessera::Scheduler::Open(options);
  if (!scheduler.ok()) {
    std::cerr << scheduler.status() << "\n";
    return 1;
  }
  auto job =
      (*scheduler)
          ->Submit(tessera::JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1000).Build());
  if (!job.ok()) {
    std::cerr << job.status() << "\n";
    return 1;
  }
  (*scheduler)->WaitIdle();
  clock->AdvanceUs(1'000'000);
  (*scheduler)->WaitIdle();
  auto done = (*scheduler)->GetJob(job->id());
  if (!done.ok() || done->status().state() != tessera::v1::SUCCEEDED) {
    std::cerr << "job did not succeed\n";
    return 1;
  }
  std::cout << "consumer: job " << done->id() << " "
            << tessera::JobStateName(done->status().state()) << "\n";
  return 0;
}
