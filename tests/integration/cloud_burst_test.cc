// Cloud burst through the public API, in virtual time: the sim plugin is both the private pool
// (one L40S node) and a capacity provider (a spot and an on-demand group of L40S nodes, 60 s to
// provision). Jobs that wait past elastic.scale_out_after get burst nodes, spot where they may
// run on spot; budgets stop queues from triggering and from being placed there; a spot notice
// checkpoints and requeues; idle burst nodes go back; spend survives a restart.
#include <chrono>
#include <string>

#include "integration/fixture.h"

#if TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;

std::string SimConfig(const std::string& spot_extra = "") {
  return R"({"groups": [{"namePrefix": "private", "count": 1, "cpuMilli": 8000,
                         "memoryMib": 16384, "gpus": 1, "gpuModel": "L40S",
                         "gpuMemoryMib": 46068}],
    "capacity": [
      {"nodes": {"namePrefix": "spot", "count": 4, "cpuMilli": 8000, "memoryMib": 16384,
                 "gpus": 1, "gpuModel": "L40S", "gpuMemoryMib": 46068},
       "pricePerHour": 1.0, "market": "SPOT", "provisionDelayMs": 60000)" +
         spot_extra + R"(},
      {"nodes": {"namePrefix": "ondemand", "count": 4, "cpuMilli": 8000, "memoryMib": 16384,
                 "gpus": 1, "gpuModel": "L40S", "gpuMemoryMib": 46068},
       "pricePerHour": 3.0, "provisionDelayMs": 60000}]})";
}

Options BurstOptions(const std::string& config, const std::string& store = "") {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  BackendOptions cloud;
  cloud.name = "cloud";
  cloud.plugin.plugin = "sim";
  cloud.plugin.config = config;
  options.backends.push_back(cloud);
  options.elastic.scale_out_after = std::chrono::seconds(120);
  options.elastic.scale_in_after = std::chrono::seconds(600);
  options.elastic.metering_interval = std::chrono::seconds(60);
  // A reservation's reason would replace what burst says of the wait (docs/cloud-burst.md).
  options.engine.max_reservations = 0;
  if (!store.empty()) options.store.path = store;
  return options;
}

// Advances the clock `seconds`, in steps of 5 s, letting every timer run.
void Run(TestScheduler& t, int64_t seconds) {
  for (int64_t s = 0; s < seconds; s += 5) {
    t.clock->AdvanceUs(5 * kSecond);
    t->WaitIdle();
  }
}

int NodesNamed(Scheduler* s, const std::string& prefix) {
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  int n = 0;
  for (const v1::Node& node : *nodes) n += node.spec().name().rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

v1::JobSpec Job(const std::string& queue, int64_t duration_ms, int64_t grace_s = 0) {
  v1::JobSpec spec = JobSpecBuilder(queue).Gpus(1).SimulatedDurationMs(duration_ms).Build();
  spec.set_checkpoint_grace_s(grace_s);
  return spec;
}

// A budget per day (the test clock starts early in a UTC day, far from its end).
v1::QueueSpec Budgeted(const std::string& name, double per_day) {
  v1::QueueSpec q = QueueSpec(name);
  q.mutable_burst_budget()->set_per_day(per_day);
  return q;
}

TEST_CASE("burst: a head that waits past scale_out_after gets a burst node, spot if it may") {
  auto t = Open(BurstOptions(SimConfig()));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, Job("default", 3'600'000));  // holds the private node.
  t->WaitIdle();
  const uint64_t checkpointing = MustSubmit(s, Job("default", 600'000, /*grace_s=*/30)).id();
  t->WaitIdle();
  CHECK(MustGet(s, checkpointing).status().reason().find("once it has waited 120 s") !=
        std::string::npos);
  Run(t, 100);
  CHECK(NodesNamed(s, "spot") == 0);  // not yet: it has waited 100 s.
  Run(t, 30);
  CHECK(MustGet(s, checkpointing).status().reason().find("1 node(s) of 'spot'") !=
        std::string::npos);
  Run(t, 60);  // the node joins 60 s after the request.
  const v1::Job placed = MustGet(s, checkpointing);
  REQUIRE(placed.status().state() == v1::RUNNING);
  CHECK(placed.status().placements(0).node() == "spot-0");

  // A job that does not checkpoint may not run on spot: on-demand for it.
  const uint64_t plain = MustSubmit(s, Job("default", 600'000)).id();
  Run(t, 200);
  const v1::Job plain_job = MustGet(s, plain);
  REQUIRE(plain_job.status().state() == v1::RUNNING);
  CHECK(plain_job.status().placements(0).node() == "ondemand-0");
  CHECK(NodesNamed(s, "spot") == 1);
}

TEST_CASE("burst: spot refused (the request fails), then on-demand") {
  auto t = Open(BurstOptions(SimConfig(R"(, "provisionsFail": true)")));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, Job("default", 3'600'000));
  const uint64_t job = MustSubmit(s, Job("default", 600'000, /*grace_s=*/30)).id();
  Run(t, 125);
  CHECK(MustGet(s, job).status().reason().find("'spot'") != std::string::npos);
  Run(t, 60);  // the spot request fails; the job asks again, the spot group backing off.
  Run(t, 70);
  const v1::Job placed = MustGet(s, job);
  REQUIRE(placed.status().state() == v1::RUNNING);
  CHECK(placed.status().placements(0).node() == "ondemand-0");
}

TEST_CASE("burst: a budget reached mid-burst keeps the queue off burst nodes; reason says so") {
  auto t = Open(BurstOptions(SimConfig()));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, Budgeted("team", 1.0));  // 1.00 a day; on-demand costs 3.00 an hour.
  MustSubmit(s, Job("default", 7'200'000));
  const uint64_t first = MustSubmit(s, Job("team", 7'200'000)).id();
  Run(t, 190);
  REQUIRE(MustGet(s, first).status().state() == v1::RUNNING);
  CHECK(MustGet(s, first).status().placements(0).node() == "ondemand-0");
  Run(t, 20 * 60);  // 20 minutes at 3.00 an hour: the budget is spent.
  auto queue = s->GetQueue("team");
  REQUIRE(queue.ok());
  CHECK(queue->status().burst().today() >= 1.0);
  CHECK(queue->status().burst().out_of_budget().find("queue 'team' has spent its burst budget "
                                                     "per day") != std::string::npos);
  // Another job of the queue waits for private capacity, and asks for nothing.
  const uint64_t second = MustSubmit(s, Job("team", 600'000)).id();
  Run(t, 300);
  const v1::Job waiting = MustGet(s, second);
  CHECK(waiting.status().state() == v1::PENDING);
  CHECK(waiting.status().reason().find("no burst capacity for it: queue 'team' has spent") !=
        std::string::npos);
  CHECK(NodesNamed(s, "ondemand") == 1);
  auto dry = s->DryRun(Job("team", 600'000));
  REQUIRE(dry.ok());
  CHECK(dry->reason().find("spent its burst budget") != std::string::npos);
}

TEST_CASE("burst: a queue whose budget is zero never triggers provisioning") {
  auto t = Open(BurstOptions(SimConfig()));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, Budgeted("frugal", 0.0));
  MustSubmit(s, Job("default", 3'600'000));
  const uint64_t job = MustSubmit(s, Job("frugal", 600'000, 30)).id();
  Run(t, 900);
  CHECK(NodesNamed(s, "spot") + NodesNamed(s, "ondemand") == 0);
  CHECK(MustGet(s, job).status().reason().find("spent its burst budget per day (0.00 of 0.00)") !=
        std::string::npos);
}

TEST_CASE("burst: a spot notice checkpoints and requeues the job; the capacity is replaced") {
  // Spot nodes are taken back 5 minutes after they join, with a 2-minute notice.
  auto t = Open(
      BurstOptions(SimConfig(R"(, "interruptAfterMs": 300000, "interruptionNoticeMs": 120000)")));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, Job("default", 7'200'000));
  const uint64_t job = MustSubmit(s, Job("default", 3'600'000, /*grace_s=*/30)).id();
  Run(t, 190);
  REQUIRE(MustGet(s, job).status().placements(0).node() == "spot-0");
  const int64_t submitted = MustGet(s, job).status().submit_time_us();
  Run(t, 300);  // the notice: the job is stopped with its grace and requeued.
  const v1::Job requeued = MustGet(s, job);
  CHECK(requeued.status().state() != v1::RUNNING);
  CHECK(requeued.status().submit_time_us() == submitted);
  CHECK(requeued.status().preemptions() == 0);
  // The spot group backs off after its interruption: on-demand replaces it.
  Run(t, 120);
  const v1::Job rerun = MustGet(s, job);
  REQUIRE(rerun.status().state() == v1::RUNNING);
  CHECK(rerun.status().placements(0).node() == "ondemand-0");
  CHECK(rerun.status().attempt() == 2);
}

TEST_CASE("burst: a burst node idle past scale_in_after is drained and given back") {
  auto t = Open(BurstOptions(SimConfig()));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, Job("default", 7'200'000));
  MustSubmit(s, Job("default", 60'000));
  Run(t, 190);
  REQUIRE(NodesNamed(s, "ondemand") == 1);
  Run(t, 60 + 540);  // the job ended; idle for 540 s, less than 600.
  CHECK(NodesNamed(s, "ondemand") == 1);
  Run(t, 120);
  CHECK(NodesNamed(s, "ondemand") == 0);
  CHECK(NodesNamed(s, "private") == 1);  // private nodes are never scaled.
}

TEST_CASE("burst: spend survives a restart") {
  ScratchDir dir;
  const std::string store = dir.File("tessera.db");
  double spent = 0;
  auto clock = std::make_shared<ManualClock>();
  {
    Options options = BurstOptions(SimConfig(), store);
    options.clock = clock;
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    CreateQueue(s, QueueSpec("team"));
    MustSubmit(s, Job("default", 7'200'000));
    MustSubmit(s, Job("team", 7'200'000));
    Run(t, 190 + 600);
    auto queue = s->GetQueue("team");
    REQUIRE(queue.ok());
    spent = queue->status().burst().today();
    CHECK(spent > 0.4);  // 10 minutes at 3.00 an hour, at least.
  }
  Options options = BurstOptions(SimConfig(), store);
  options.clock = clock;
  auto t = Open(options);
  auto queue = t->GetQueue("team");
  REQUIRE(queue.ok());
  CHECK(queue->status().burst().today() == doctest::Approx(spent));
  CHECK(queue->status().burst().this_month() == doctest::Approx(spent));
}

}  // namespace
}  // namespace tessera
#endif
