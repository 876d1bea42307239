// Burst nodes cost money by the hour while the private pool is paid for anyway: a job that fits
// both a private node and a burst node with room should go to the private one, so that the
// burst node empties and is given back. `tessera-bench burst` measures the GPU-hours held on
// burst nodes while private GPUs stood idle (docs/benchmarks.md); this is the smallest case.
#include <chrono>
#include <string>

#include "integration/fixture.h"

#if TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;

// One private node of 2 GPUs; on-demand burst nodes of 2 GPUs, 60 s to provision.
constexpr const char* kConfig =
    R"({"groups": [{"namePrefix": "private", "count": 1, "cpuMilli": 16000,
                    "memoryMib": 32768, "gpus": 2, "gpuModel": "L40S", "gpuMemoryMib": 46068}],
        "capacity": [
          {"nodes": {"namePrefix": "ondemand", "count": 4, "cpuMilli": 16000,
                     "memoryMib": 32768, "gpus": 2, "gpuModel": "L40S", "gpuMemoryMib": 46068},
           "pricePerHour": 6.0, "provisionDelayMs": 60000}]})";

void Run(TestScheduler& t, int64_t seconds) {
  for (int64_t s = 0; s < seconds; s += 5) {
    t.clock->AdvanceUs(5 * kSecond);
    t->WaitIdle();
  }
}

// Fails today: the placement scores burst and private nodes alike and packs the job onto the
// fuller node, ondemand-0 (reported with the burst benchmark's results). should_fail keeps the
// suite green and turns red once placement prefers private nodes: then drop the decorator.
TEST_CASE("burst: a job that fits a private node and a burst node goes to the private one" *
          doctest::should_fail()) {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  BackendOptions cloud;
  cloud.name = "cloud";
  cloud.plugin.plugin = "sim";
  cloud.plugin.config = kConfig;
  options.backends.push_back(cloud);
  options.elastic.scale_out_after = std::chrono::seconds(120);
  options.engine.max_reservations = 0;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();

  // Both private GPUs busy for 10 minutes; a one-GPU job waits, bursts, runs on ondemand-0.
  const uint64_t wide =
      MustSubmit(s, JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(600'000).Build()).id();
  const uint64_t burst =
      MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(7'200'000).Build()).id();
  Run(t, 200);
  REQUIRE(MustGet(s, burst).status().state() == v1::RUNNING);
  REQUIRE(MustGet(s, burst).status().placements(0).node() == "ondemand-0");
  Run(t, 600);  // the wide job has ended: both private GPUs are free, ondemand-0 has one.
  REQUIRE(MustGet(s, wide).status().state() == v1::SUCCEEDED);

  const uint64_t next =
      MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(600'000).Build()).id();
  Run(t, 5);
  const v1::Job placed = MustGet(s, next);
  REQUIRE(placed.status().state() == v1::RUNNING);
  CHECK(placed.status().placements(0).node() == "private-0");
}

}  // namespace
}  // namespace tessera
#endif
