// Embeds the packaged scheduler: opens it on the built-in simulated cluster with a manual clock
// and a store in a scratch directory, submits one job, and checks that it runs, then succeeds.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <unistd.h>

#include "tessera/job.h"
#include "tessera/scheduler.h"

namespace {

int Fail(const std::string& what) {
  std::cerr << "test_package: " << what << "\n";
  return 1;
}

int Run(const std::filesystem::path& dir) {
  auto clock = std::make_shared<tessera::ManualClock>();
  tessera::Options options;
  options.clock = clock;
  options.store.path = (dir / "state.db").string();
  auto scheduler = tessera::Scheduler::Open(options);
  if (!scheduler.ok()) return Fail("open: " + scheduler.status().ToString());

  auto job =
      (*scheduler)
          ->Submit(tessera::JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1000).Build());
  if (!job.ok()) return Fail("submit: " + job.status().ToString());

  (*scheduler)->WaitIdle();
  auto running = (*scheduler)->GetJob(job->id());
  if (!running.ok() || running->status().state() != tessera::v1::RUNNING) {
    return Fail("the job is not RUNNING after WaitIdle");
  }
  clock->AdvanceUs(1'000'000);
  (*scheduler)->WaitIdle();
  auto done = (*scheduler)->GetJob(job->id());
  if (!done.ok() || done->status().state() != tessera::v1::SUCCEEDED) {
    return Fail("the job did not succeed");
  }
  std::cout << "test_package: job " << done->id() << " "
            << tessera::JobStateName(done->status().state()) << ": OK\n";
  return 0;
}

}  // namespace

int main() {
  auto dir = std::filesystem::temp_directory_path() /
             ("tessera-test-package-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  int rc = Run(dir);  // the scheduler is closed before its store is removed
  std::filesystem::remove_all(dir);
  return rc;
}
