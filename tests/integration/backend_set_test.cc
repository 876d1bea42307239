// Several backends at once (Options::backends): each serves the nodes it reports, jobs reach
// them through node labels, and a backend that fails takes down only its own nodes and jobs.
// Driven through the public API in virtual time; the sim plugin and the test backend
// (tests/plugins/test_backend.cc) are the two backends.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "integration/fixture.h"

#if TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

BackendOptions Backend(const std::string& name, const std::string& plugin,
                       const std::string& config, bool isolate = false) {
  BackendOptions b;
  b.name = name;
  b.plugin.plugin = plugin;
  b.plugin.config = config;
  b.plugin.isolate = isolate;
  return b;
}

std::string TestBackendPlugin() {
  return std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_test_backend.so";
}

// A sim backend with two 8-GPU nodes labelled pool=sim, and a test backend with one node
// ("flaky-0", no labels) configured by `flaky`.
Options SimAndTestBackend(const std::string& flaky, bool isolate = false) {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  options.backends.push_back(Backend(
      "sim", "sim",
      R"({"groups":[{"namePrefix":"s","count":2,"cpuMilli":64000,"memoryMib":262144,"gpus":8,)"
      R"("gpuModel":"A100","gpuMemoryMib":81920,"labels":{"pool":"sim"}}]})"));
  options.backends.push_back(
      Backend("flaky", TestBackendPlugin(), "prefix=flaky\n" + flaky, isolate));
  return options;
}

v1::JobSpec OnSim(int64_t duration_ms = 60'000) {
  v1::JobSpec spec = JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(duration_ms).Build();
  (*spec.mutable_node_selector())["pool"] = "sim";
  return spec;
}

v1::JobSpec OffSim() {
  v1::JobSpec spec = JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(60'000).Build();
  v1::NodeSelectorRequirement* r = spec.add_node_requirements();
  r->set_key("pool");
  r->set_operator_(v1::NodeSelectorRequirement::DOES_NOT_EXIST);
  return spec;
}

v1::Node NodeNamed(Scheduler* s, const std::string& name) {
  auto nodes = s->ListNodes();
  REQUIRE_MESSAGE(nodes.ok(), nodes.status().ToString());
  for (const v1::Node& n : *nodes) {
    if (n.spec().name() == name) return n;
  }
  FAIL("no node " << name);
  return {};
}

v1::Backend BackendNamed(Scheduler* s, const std::string& name) {
  auto backends = s->ListBackends();
  REQUIRE_MESSAGE(backends.ok(), backends.status().ToString());
  for (const v1::Backend& b : *backends) {
    if (b.name() == name) return b;
  }
  FAIL("no backend " << name);
  return {};
}

TEST_CASE("backends: two at once, each running the jobs placed on its nodes") {
  auto t = Open(SimAndTestBackend("nodes=1"));
  Scheduler* s = t.scheduler.get();
  CHECK(NodeNamed(s, "s-0").status().backend() == "sim");
  CHECK(NodeNamed(s, "flaky-0").status().backend() == "flaky");
  const v1::Backend sim = BackendNamed(s, "sim");
  CHECK(sim.healthy());
  CHECK(sim.nodes() == 2);
  CHECK(BackendNamed(s, "flaky").nodes() == 1);
  CHECK(NodeNamed(s, "flaky-0").spec().labels().at("tessera.io/backend") == "flaky");

  // A job may name its backend through that label.
  v1::JobSpec named = JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1'000).Build();
  (*named.mutable_node_selector())["tessera.io/backend"] = "flaky";
  const uint64_t by_name = MustSubmit(s, named).id();
  t->WaitIdle();
  CHECK(MustGet(s, by_name).status().placements(0).node() == "flaky-0");
  t.clock->AdvanceUs(1'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, by_name).status().state() == v1::SUCCEEDED);

  const uint64_t on_sim = MustSubmit(s, OnSim(10'000)).id();
  const uint64_t off_sim = MustSubmit(s, OffSim()).id();
  t->WaitIdle();
  CHECK(MustGet(s, on_sim).status().placements(0).node().rfind("s-", 0) == 0);
  CHECK(MustGet(s, off_sim).status().placements(0).node() == "flaky-0");
  CHECK(MustGet(s, on_sim).status().state() == v1::RUNNING);
  CHECK(MustGet(s, off_sim).status().state() == v1::RUNNING);
  // Each backend reports its own task's end, on the scheduler's clock.
  t.clock->AdvanceUs(10'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, on_sim).status().state() == v1::SUCCEEDED);
  CHECK(MustGet(s, off_sim).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(50'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, off_sim).status().state() == v1::SUCCEEDED);
}

TEST_CASE("backends: one that fails cordons only its nodes; jobs elsewhere run on") {
  Options options = SimAndTestBackend("launch_error=1");
  options.backends[1].plugin.max_restarts_per_minute = 0;  // it stays down, to be looked at.
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const uint64_t on_sim = MustSubmit(s, OnSim()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, on_sim).status().state() == v1::RUNNING);

  // The test backend fails the launch: it turns unhealthy.
  const uint64_t off_sim = MustSubmit(s, OffSim()).id();
  t->WaitIdle();
  const v1::Backend flaky = BackendNamed(s, "flaky");
  CHECK_FALSE(flaky.healthy());
  CHECK(flaky.unhealthy_reason().find("launch_error: set") != std::string::npos);
  CHECK(BackendNamed(s, "sim").healthy());
  const v1::Node down = NodeNamed(s, "flaky-0");
  CHECK(down.status().cordoned());
  CHECK(down.status().unavailable().find("backend 'flaky' is unhealthy") != std::string::npos);
  CHECK_FALSE(NodeNamed(s, "s-0").status().cordoned());
  CHECK(NodeNamed(s, "s-0").status().unavailable().empty());

  // Its job waits, requeued without spending an attempt; the sim job was not touched.
  const v1::Job lost = MustGet(s, off_sim);
  CHECK(lost.status().state() == v1::PENDING);
  CHECK(lost.status().losses() == 0);
  const v1::Job running = MustGet(s, on_sim);
  CHECK(running.status().state() == v1::RUNNING);
  CHECK(running.status().attempt() == 1);

  // The healthy backend still takes new work.
  const uint64_t next = MustSubmit(s, OnSim()).id();
  t->WaitIdle();
  CHECK(MustGet(s, next).status().state() == v1::RUNNING);
  CHECK(MustGet(s, next).status().placements(0).node().rfind("s-", 0) == 0);
}

TEST_CASE("backends, isolated: a crashed backend is restarted and only its jobs rerun") {
  // Job 2 crashes the isolated test backend on its first attempt; job 1 runs on sim.
  auto t = Open(SimAndTestBackend("crash_on_job=2", /*isolate=*/true));
  Scheduler* s = t.scheduler.get();
  const uint64_t on_sim = MustSubmit(s, OnSim()).id();
  const uint64_t crashing = MustSubmit(s, OffSim()).id();
  REQUIRE(crashing == 2);
  // The restart runs in real time, whatever the scheduler's clock.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    t->WaitIdle();
    const v1::Job job = MustGet(s, crashing);
    if (job.status().state() == v1::RUNNING && job.status().attempt() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const v1::Job rerun = MustGet(s, crashing);
  CHECK(rerun.status().state() == v1::RUNNING);
  CHECK(rerun.status().attempt() == 2);
  CHECK(rerun.status().losses() == 0);
  const v1::Backend flaky = BackendNamed(s, "flaky");
  CHECK(flaky.healthy());
  CHECK(flaky.restarts() == 1);
  CHECK(flaky.isolated());
  CHECK_FALSE(NodeNamed(s, "flaky-0").status().cordoned());
  // The sim job ran through it all on its first attempt.
  CHECK(MustGet(s, on_sim).status().state() == v1::RUNNING);
  CHECK(MustGet(s, on_sim).status().attempt() == 1);
}

TEST_CASE("backends: a node name two backends report belongs to the first") {
  Options options;
  options.backends.push_back(Backend("first", TestBackendPlugin(), "nodes=1"));
  options.backends.push_back(Backend("second", TestBackendPlugin(), "nodes=2"));
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  REQUIRE(nodes->size() == 2);  // test-0 (first's) and test-1 (second's).
  CHECK(NodeNamed(s, "test-0").status().backend() == "first");
  CHECK(NodeNamed(s, "test-1").status().backend() == "second");
  CHECK(BackendNamed(s, "second").nodes() == 1);
}

TEST_CASE("backends: configuration errors name the field") {
  auto open_error = [](const Options& options) {
    auto opened = Scheduler::Open(options);
    REQUIRE_FALSE(opened.ok());
    return opened.status();
  };
  {
    // Two backends of one plugin, neither named: both take the plugin's name.
    Options options;
    options.backends.push_back(Backend("", TestBackendPlugin(), "nodes=1"));
    options.backends.push_back(Backend("", TestBackendPlugin(), "prefix=other"));
    const Status status = open_error(options);
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK(status.message().find("backends[1].name") != std::string::npos);
    CHECK(status.message().find("'test-backend' is named twice") != std::string::npos);
  }
  {
    Options options;
    options.backends.push_back(Backend("a", TestBackendPlugin(), ""));
    options.backends.push_back(Backend("a", TestBackendPlugin(), "prefix=other"));
    const Status status = open_error(options);
    CHECK(status.message().find("backends[1].name") != std::string::npos);
  }
  {
    Options options;
    options.backends.push_back(Backend("a", TestBackendPlugin(), ""));
    options.backends[0].partitions = {"b"};
    const Status status = open_error(options);
    CHECK(status.message().find("backends[0].partitions[0]") != std::string::npos);
    CHECK(status.message().find("no backend is named 'b'") != std::string::npos);
  }
  {
    // The test backend is an executor only.
    Options options;
    options.backends.push_back(Backend("a", TestBackendPlugin(), ""));
    options.backends.push_back(Backend("b", TestBackendPlugin(), "prefix=other"));
    options.backends[0].partitions = {"b"};
    const Status status = open_error(options);
    CHECK(status.message().find("backends[0].partitions[0]") != std::string::npos);
    CHECK(status.message().find("is not a partitioner") != std::string::npos);
  }
  {
    Options options;
    options.backends.push_back(Backend("a", TestBackendPlugin(), ""));
    PluginOptions plugin;
    plugin.plugin = TestBackendPlugin();
    options.executor_plugin = plugin;
    const Status status = open_error(options);
    CHECK(status.message().find("executor_plugin") != std::string::npos);
    CHECK(status.message().find("set together with backends") != std::string::npos);
  }
  {
    Options options;
    options.backends.push_back(Backend("a", "", ""));
    const Status status = open_error(options);
    CHECK(status.message().find("backends[0].plugin.plugin") != std::string::npos);
  }
  {
    Options options;
    options.backends.push_back(Backend("a", TestBackendPlugin(), "reject=1"));
    const Status status = open_error(options);
    CHECK(status.message().find("backends[0]") != std::string::npos);
    CHECK(status.message().find("reject: set") != std::string::npos);
  }
}

}  // namespace
}  // namespace tessera
#endif
