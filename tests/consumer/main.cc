// Opens a scheduler from an installed Tessera, runs one job in virtual time, and exits 0 when
// it succeeded. Usage: consumer [<plugin.so>]: with a plugin, the job runs through that executor
// plugin isolated in the installed tessera-plugin-host, else through the built-in simulation.
#include <iostream>

#include "tessera/job.h"
#include "tessera/scheduler.h"

int main(int argc, char** argv) {
  auto clock = std::make_shared<tessera::ManualClock>();
  tessera::Options options;
  options.clock = clock;
  if (argc > 1) {
    tessera::PluginOptions plugin;
    plugin.plugin = argv[1];
    plugin.isolate = true;
    options.executor_plugin = plugin;
  }
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
  std::cout << "consumer" << (argc > 1 ? " (isolated plugin)" : "") << ": job " << done->id() << " "
            << tessera::JobStateName(done->status().state()) << "\n";
  return 0;
}
