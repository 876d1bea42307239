// Nodes that come and go while the scheduler runs: the sim plugin's scripted changes
// (SimulatedCluster.changes) report INVENTORY_CHANGED at set times, and the scheduler takes the
// difference. Driven through the public API in virtual time.
#include <string>
#include <vector>

#include "integration/fixture.h"

#if TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

Options SimPlugin(const std::string& config) {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  PluginOptions plugin;
  plugin.plugin = "sim";
  plugin.config = config;
  options.executor_plugin = plugin;
  return options;
}

// An 8 x A100 node group in the sim plugin's JSON.
std::string Group(const std::string& prefix, int count, int gpus = 8) {
  return R"({"namePrefix":")" + prefix + R"(","count":)" + std::to_string(count) +
         R"(,"cpuMilli":64000,"memoryMib":262144,"gpus":)" + std::to_string(gpus) +
         R"(,"gpuModel":"A100","gpuMemoryMib":81920})";
}

std::vector<v1::Event> AllEvents(Scheduler* s) {
  std::vector<v1::Event> out;
  uint64_t seq = 0;
  while (true) {
    auto events = s->WatchEvents(seq, 1000, std::chrono::milliseconds(0));
    REQUIRE_MESSAGE(events.ok(), events.status().ToString());
    if (events->empty()) return out;
    for (const v1::Event& e : *events) {
      out.push_back(e);
      seq = e.seq();
    }
  }
}

bool HasNodeEvent(Scheduler* s, v1::EventKind kind, const std::string& node) {
  for (const v1::Event& e : AllEvents(s)) {
    if (e.kind() == kind && e.node() == node) return true;
  }
  return false;
}

std::vector<std::string> NodeNames(Scheduler* s) {
  auto nodes = s->ListNodes();
  REQUIRE_MESSAGE(nodes.ok(), nodes.status().ToString());
  std::vector<std::string> names;
  for (const v1::Node& n : *nodes) names.push_back(n.spec().name());
  return names;
}

// Advances the clock in steps of `step_ms` to `until_ms` after `start`, settling after each.
void RunUntil(TestScheduler& t, TimestampUs start, int64_t until_ms, int64_t step_ms = 1000) {
  while (t.clock->NowUs() < start + until_ms * 1000) {
    t.clock->AdvanceUs(step_ms * 1000);
    t->WaitIdle();
  }
}

TEST_CASE("node churn: a node that leaves takes its tasks; its job runs again, no attempt spent") {
  // Two nodes; at 10 s "a-0" leaves. max_attempts = 1: a loss that counted would fail the job.
  Options options = SimPlugin(R"({"groups":[)" + Group("a", 2) +
                              R"(],"changes":[{"atMs":10000,"leave":["a-0"]}]})");
  options.engine.max_attempts = 1;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const TimestampUs start = t.clock->NowUs();
  const v1::Job first =
      MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(60000).Build());
  const v1::Job second =
      MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(60000).Build());
  t->WaitIdle();
  RunUntil(t, start, 2000);
  REQUIRE(MustGet(s, first.id()).status().state() == v1::RUNNING);
  REQUIRE(MustGet(s, second.id()).status().state() == v1::RUNNING);
  const uint64_t on_a0 =
      MustGet(s, first.id()).status().placements(0).node() == "a-0" ? first.id() : second.id();
  const uint64_t on_a1 = on_a0 == first.id() ? second.id() : first.id();

  RunUntil(t, start, 11000);
  CHECK(NodeNames(s) == std::vector<std::string>{"a-1"});
  CHECK(HasNodeEvent(s, v1::NODE_REMOVED, "a-0"));
  const v1::Job lost = MustGet(s, on_a0);
  CHECK(lost.status().state() == v1::PENDING);  // a-1 is busy until 60 s.
  CHECK(lost.status().attempt() == 2);
  CHECK(lost.status().losses() == 0);
  CHECK(MustGet(s, on_a1).status().state() == v1::RUNNING);  // the other job runs on.

  RunUntil(t, start, 125000);
  const v1::Job rerun = MustGet(s, on_a0);
  CHECK(rerun.status().state() == v1::SUCCEEDED);
  CHECK(rerun.status().placements(0).node() == "a-1");
  CHECK(MustGet(s, on_a1).status().state() == v1::SUCCEEDED);
}

TEST_CASE("node churn: a node that joins takes pending work at once") {
  auto t = Open(SimPlugin(R"({"groups":[)" + Group("a", 1) +
                          R"(],"changes":[{"atMs":5000,"join":)" + Group("b", 1) + "}]}"));
  Scheduler* s = t.scheduler.get();
  const TimestampUs start = t.clock->NowUs();
  MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(60000).Build());
  const v1::Job waiting =
      MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(60000).Build());
  t->WaitIdle();
  RunUntil(t, start, 3000);
  CHECK(MustGet(s, waiting.id()).status().state() == v1::PENDING);
  RunUntil(t, start, 6000);
  const v1::Job placed = MustGet(s, waiting.id());
  CHECK(placed.status().state() == v1::RUNNING);
  CHECK(placed.status().placements(0).node() == "b-0");
  CHECK(placed.status().start_time_us() == start + 5'000'000);
  CHECK(NodeNames(s) == std::vector<std::string>{"a-0", "b-0"});
  CHECK(HasNodeEvent(s, v1::NODE_ADDED, "b-0"));
}

TEST_CASE("node churn: a job only a departed node could run becomes feasible when one joins") {
  // The 8-GPU node leaves before the job arrives; a 4-GPU node stays.
  auto t = Open(SimPlugin(R"({"groups":[)" + Group("big", 1) + "," + Group("small", 1, 4) +
                          R"(],"changes":[{"atMs":1000,"leave":["big-0"]},)" +
                          R"({"atMs":20000,"join":)" + Group("new", 1) + "}]}"));
  Scheduler* s = t.scheduler.get();
  const TimestampUs start = t.clock->NowUs();
  RunUntil(t, start, 2000);
  auto job = s->Submit(JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(1000).Build());
  REQUIRE(job.ok());
  t->WaitIdle();
  CHECK(MustGet(s, job->id()).status().infeasible());
  RunUntil(t, start, 30000);
  CHECK(MustGet(s, job->id()).status().state() == v1::SUCCEEDED);
}

TEST_CASE("node churn: a busy node's new shape waits for its tasks; its labels change at once") {
  // At 5 s node "a-0" is reported with 4 GPUs and a rack label, while a job holds 2 of its 8.
  auto t = Open(SimPlugin(
      R"({"groups":[)" + Group("a", 1) + R"(],"changes":[{"atMs":5000,"leave":["a-0"],"join":)" +
      R"({"namePrefix":"a","count":1,"cpuMilli":64000,"memoryMib":262144,"gpus":4,)" +
      R"("gpuModel":"A100","gpuMemoryMib":81920,"labels":{"rack":"r9"}}}]})"));
  Scheduler* s = t.scheduler.get();
  const TimestampUs start = t.clock->NowUs();
  const v1::Job busy =
      MustSubmit(s, JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(20000).Build());
  t->WaitIdle();
  RunUntil(t, start, 6000);
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  REQUIRE(nodes->size() == 1);
  CHECK((*nodes)[0].spec().labels().at("rack") == "r9");
  CHECK((*nodes)[0].spec().gpus_size() == 8);
  CHECK((*nodes)[0].status().reshape_pending());
  CHECK((*nodes)[0].status().running_tasks() == 1);
  CHECK(MustGet(s, busy.id()).status().state() == v1::RUNNING);
  // Nothing new is placed on a node waiting for its new shape.
  const v1::Job later =
      MustSubmit(s, JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(1000).Build());
  t->WaitIdle();
  RunUntil(t, start, 10000);
  CHECK(MustGet(s, later.id()).status().state() == v1::PENDING);

  RunUntil(t, start, 30000);
  CHECK(MustGet(s, busy.id()).status().state() == v1::SUCCEEDED);
  CHECK(MustGet(s, later.id()).status().state() == v1::SUCCEEDED);
  nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  CHECK((*nodes)[0].spec().gpus_size() == 4);
  CHECK((*nodes)[0].spec().labels().at("rack") == "r9");
  CHECK_FALSE((*nodes)[0].status().reshape_pending());
}

TEST_CASE("node churn: a node given a label takes the job whose selector wanted it") {
  auto t = Open(SimPlugin(
      R"({"groups":[)" + Group("a", 1) + R"(],"changes":[{"atMs":5000,"leave":["a-0"],"join":)" +
      R"({"namePrefix":"a","count":1,"cpuMilli":64000,"memoryMib":262144,"gpus":8,)" +
      R"("gpuModel":"A100","gpuMemoryMib":81920,"labels":{"pool":"x"}}}]})"));
  Scheduler* s = t.scheduler.get();
  const TimestampUs start = t.clock->NowUs();
  v1::JobSpec spec = JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1000).Build();
  (*spec.mutable_node_selector())["pool"] = "x";
  const v1::Job job = MustSubmit(s, spec);
  t->WaitIdle();
  CHECK(MustGet(s, job.id()).status().infeasible());
  RunUntil(t, start, 10000);
  const v1::Job done = MustGet(s, job.id());
  CHECK(done.status().state() == v1::SUCCEEDED);
  CHECK(done.status().start_time_us() == start + 5'000'000);
}

TEST_CASE("node churn: invalid scripted changes are refused naming the field") {
  auto refused = [](const std::string& changes) {
    auto opened = Scheduler::Open(
        SimPlugin(R"({"groups":[)" + Group("a", 1) + R"(],"changes":)" + changes + "}"));
    REQUIRE_FALSE(opened.ok());
    return opened.status().message();
  };
  CHECK(refused(R"([{"atMs":-1,"leave":["a-0"]}])").find("changes[0].at_ms") != std::string::npos);
  CHECK(refused(R"([{"atMs":1}])").find("changes[0].join, leave, evict") != std::string::npos);
  CHECK(refused(R"([{"atMs":1,"leave":[""]}])").find("changes[0].leave[0]") != std::string::npos);
  CHECK(refused(R"([{"atMs":1,"join":{"namePrefix":"b","count":1,"cpuMilli":0,"memoryMib":1}}])")
            .find("changes[0].join.cpu_milli") != std::string::npos);
}

TEST_CASE("node churn: the built-in simulation refuses scripted changes") {
  v1::SimulatedCluster cluster = OneNode(8);
  cluster.add_changes()->set_at_ms(1000);
  Options options;
  options.simulated_cluster = cluster;
  auto opened = Scheduler::Open(options);
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().message().find("changes") != std::string::npos);
}

}  // namespace
}  // namespace tessera
#endif  // TESSERA_HAVE_BACKEND_PLUGINS
