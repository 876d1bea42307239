// Plugin ABI 1.1 through the public API, in virtual time: plugins built against the 1.0 SDK
// still load and run jobs (in process and isolated); a capacity provider's spot interruption
// notice cordons its node and requeues the node's job at once; a re-partition that
// fails for its GPU leaves the scheduler with the layout the GPU really has; a capacity
// provider's node groups are visible. The sim plugin (plugins/sim) and the test backend built
// against abi_1_0 (tests/plugins/CMakeLists.txt) are the backends.
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

v1::Backend OnlyBackend(Scheduler* s) {
  auto backends = s->ListBackends();
  REQUIRE_MESSAGE(backends.ok(), backends.status().ToString());
  REQUIRE(backends->size() == 1);
  return backends->front();
}

v1::Node NodeNamed(Scheduler* s, const std::string& name) {
  auto nodes = s->ListNodes();
  REQUIRE_MESSAGE(nodes.ok(), nodes.status().ToString());
  for (const v1::Node& n : *nodes) {
    if (n.spec().name() == name) return n;
  }
  return {};
}

bool EventSays(Scheduler* s, const std::string& text) {
  auto events = s->WatchEvents(0, 10'000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  for (const v1::Event& e : *events) {
    if (e.reason().find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE(
    "ABI 1.0: a plugin built against the 1.0 SDK loads and runs jobs, in process and isolated") {
  for (bool isolate : {false, true}) {
    CAPTURE(isolate);
    Options options;
    options.backends.push_back(Backend(
        "old", std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_test_backend_abi_1_0.so",
        "nodes=1", isolate));
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    const v1::Backend old = OnlyBackend(s);
    CHECK(old.abi() == "1.0");
    CHECK(old.healthy());
    const uint64_t job =
        MustSubmit(s, JobSpecBuilder("default").Gpus(2).SimulatedDurationMs(5'000).Build()).id();
    t->WaitIdle();
    CHECK(MustGet(s, job).status().state() == v1::RUNNING);
    t.clock->AdvanceUs(5'000'000);
    // The isolated host reports through its socket: give it a moment of real time.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (MustGet(s, job).status().state() != v1::SUCCEEDED &&
           std::chrono::steady_clock::now() < deadline) {
      t->WaitIdle();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(MustGet(s, job).status().state() == v1::SUCCEEDED);
    CHECK(OnlyBackend(s).healthy());
  }
}

TEST_CASE("ABI 1.1: a spot interruption cordons its node and requeues the job there") {
  // spot-0 is there from the start; at 1 s its cloud says it takes it back 10 s later; steady-0
  // joins at 20 s.
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  options.backends.push_back(Backend("cloud", "sim", R"({
      "groups": [{"namePrefix": "spot", "count": 1, "cpuMilli": 8000, "memoryMib": 16384,
                  "gpus": 1, "gpuModel": "L40S", "gpuMemoryMib": 46068}],
      "changes": [
        {"atMs": 1000, "interrupt": ["spot-0"], "noticeMs": 10000},
        {"atMs": 20000, "join": {"namePrefix": "steady", "count": 1, "cpuMilli": 8000,
                                 "memoryMib": 16384, "gpus": 1, "gpuModel": "L40S",
                                 "gpuMemoryMib": 46068}}]})"));
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const uint64_t job =
      MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(600'000).Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, job).status().placements(0).node() == "spot-0");

  t.clock->AdvanceUs(1'000'000);
  t->WaitIdle();
  // Noticed: nothing new goes there, and the job there gets its checkpoint notice (no grace
  // here) and is requeued at once, not when the node leaves.
  CHECK(NodeNamed(s, "spot-0").status().cordoned());
  CHECK(EventSays(s, "spot interruption reported by backend 'cloud'"));
  const v1::Job requeued = MustGet(s, job);
  CHECK(requeued.status().state() == v1::PENDING);
  CHECK(requeued.status().preemptions() == 0);

  t.clock->AdvanceUs(10'000'000);
  t->WaitIdle();
  CHECK(NodeNamed(s, "spot-0").spec().name().empty());  // gone.

  t.clock->AdvanceUs(9'000'000);
  t->WaitIdle();
  const v1::Job rerun = MustGet(s, job);
  CHECK(rerun.status().state() == v1::RUNNING);
  CHECK(rerun.status().placements(0).node() == "steady-0");
  CHECK(rerun.status().attempt() == 2);
}

TEST_CASE("ABI 1.1: a re-partition that fails for its GPU leaves the layout the GPU has") {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  options.backends.push_back(Backend("sim", "sim", R"({
      "groups": [{"namePrefix": "h100", "count": 1, "cpuMilli": 64000, "memoryMib": 262144,
                  "gpus": 1, "gpuModel": "H100-80GB", "gpuMemoryMib": 81920,
                  "sharing": "GPU_SHARING_MIG", "migManaged": true,
                  "migInstances": [{"profile": "7g.80gb", "start": 0}]}],
      "failingPartitionNodes": ["h100-0"]})"));
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  // A 3g job makes the scheduler re-partition the 7g GPU; the plugin says it failed.
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build()).id();
  t->WaitIdle();
  t.clock->AdvanceUs(1'000'000);
  t->WaitIdle();
  const v1::GpuDevice gpu = NodeNamed(s, "h100-0").spec().gpus(0);
  REQUIRE(gpu.mig_instances_size() == 1);
  CHECK(gpu.mig_instances(0).profile() == "7g.80gb");  // what the GPU has.
  CHECK_FALSE(gpu.mig_managed());                      // and is not tried again.
  CHECK(MustGet(s, job).status().state() == v1::PENDING);
  CHECK(OnlyBackend(s).healthy());  // one GPU's failure is not the plugin's.
}

std::string TestPlugin(const std::string& name) {
  return std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_" + name + ".so";
}

// The test backend runs one node of MIG-managed H100s (one 7g.80gb instance each) and refuses
// every launch with the devices the launch named; a partitioner-only plugin shapes its GPUs.
Options MigBesideExecutor(const std::string& partitioner_config) {
  Options options;
  options.backends.push_back(
      Backend("node", TestPlugin("test_backend"), "nodes=1\nmig=1\nreject_with_devices=1"));
  BackendOptions mig = Backend("mig", TestPlugin("partitioner"), partitioner_config);
  mig.partitions = {"node"};
  options.backends.push_back(mig);
  return options;
}

TEST_CASE("ABI 1.1: a partitioner-only backend shapes another backend's GPUs") {
  SUBCASE("the launch waits for the result and carries the new instance's device") {
    auto t = Open(MigBesideExecutor(""));
    Scheduler* s = t.scheduler.get();
    const uint64_t job =
        MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build()).id();
    t->WaitIdle();
    const v1::Job j = MustGet(s, job);
    CHECK(j.status().state() == v1::FAILED);
    const std::string& reason = j.status().reason();
    INFO(reason);
    CHECK(reason.find("devices: MIG-part-test-0-0-3g.40gb-") != std::string::npos);
    CHECK(reason.find("; mig: MIG-part-test-0-0-3g.40gb-") != std::string::npos);
    CHECK(reason.find(" gi 0 ") == std::string::npos);  // the partitioner's ids count from 1.
    auto backends = s->ListBackends();
    REQUIRE(backends.ok());
    REQUIRE(backends->size() == 2);
    const v1::Backend& mig = backends->at(1);
    CHECK(mig.name() == "mig");
    CHECK(mig.healthy());
    CHECK(mig.nodes() == 0);
    REQUIRE(mig.roles_size() == 1);
    CHECK(mig.roles(0) == "partitioner");
  }
  SUBCASE("a layout that fails leaves the GPU's layout and requeues the waiting launch") {
    auto t = Open(MigBesideExecutor("fail_node=test-0"));
    Scheduler* s = t.scheduler.get();
    const uint64_t job =
        MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build()).id();
    t->WaitIdle();
    const v1::Job j = MustGet(s, job);
    INFO(j.status().reason());
    // The launch was not sent for an instance the GPU does not have: its task was lost.
    CHECK(EventSays(s, "re-partitioning GPU 0 of node 'test-0' failed: fail_node"));
    CHECK(j.status().state() == v1::PENDING);
    CHECK(j.status().losses() == 0);
    const v1::GpuDevice gpu = NodeNamed(s, "test-0").spec().gpus(0);
    REQUIRE(gpu.mig_instances_size() == 1);
    CHECK(gpu.mig_instances(0).profile() == "7g.80gb");
    CHECK_FALSE(gpu.mig_managed());
  }
}

TEST_CASE("ABI 1.1: a foreign partitioner whose call fails releases the launch waiting for it") {
  Options options = MigBesideExecutor("call_error_node=test-0");
  // Each of the node's eight MIG GPUs is tried in turn (each failed call leaves its GPU
  // unmanaged) until no GPU could take the job; the partitioner stays healthy through eight
  // failures in a row here (the next case lets it turn unhealthy).
  options.backends[1].plugin.max_consecutive_errors = 10;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build()).id();
  t->WaitIdle();
  for (int i = 0; i < 50 && MustGet(s, job).status().state() != v1::PENDING; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t->WaitIdle();
  }
  // At once, without waiting out the bound (no time has passed): the task was lost, not sent.
  CHECK(EventSays(s,
                  "re-partitioning GPU 0 of node 'test-0' failed: plugin 'partitioner': "
                  "on_apply_partition_layout failed"));
  const v1::Job j = MustGet(s, job);
  CHECK(j.status().state() == v1::PENDING);
  CHECK(j.status().losses() == 0);
  CHECK(j.status().reason().find("devices: ;") == std::string::npos);  // never sent bare.
  // The GPU keeps the layout last reported, no longer managed: not tried again and again.
  const v1::GpuDevice gpu = NodeNamed(s, "test-0").spec().gpus(0);
  REQUIRE(gpu.mig_instances_size() == 1);
  CHECK(gpu.mig_instances(0).profile() == "7g.80gb");
  CHECK_FALSE(gpu.mig_managed());
  auto backends = s->ListBackends();
  REQUIRE(backends.ok());
  REQUIRE(backends->size() == 2);
  CHECK(backends->at(1).healthy());  // one failed call is not the partitioner's failure.
}

TEST_CASE("ABI 1.1: a foreign partitioner that turns unhealthy releases the launch at once") {
  // Its first failed call marks it unhealthy (the call's own failure is not reported then, and
  // its queued calls are dropped): the launch waiting on the owner must not wait out the owner's
  // bound (twice the partition deadline; this test's clock does not move, so it never passes).
  Options options = MigBesideExecutor("call_error_node=test-0");
  options.backends[1].plugin.max_consecutive_errors = 1;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").MigProfile("3g.40gb").Build()).id();
  t->WaitIdle();
  for (int i = 0; i < 50 && MustGet(s, job).status().state() != v1::PENDING; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t->WaitIdle();
  }
  CHECK(EventSays(s,
                  "re-partitioning GPU 0 of node 'test-0' failed: the plugin turned unhealthy: "
                  "plugin 'partitioner': on_apply_partition_layout failed"));
  const v1::Job j = MustGet(s, job);
  CHECK(j.status().state() == v1::PENDING);
  CHECK(j.status().losses() == 0);
  // It did turn unhealthy (an in-process plugin is then made anew, so it may be healthy again
  // by now, and a restart of it counts).
  auto backends = s->ListBackends();
  REQUIRE(backends.ok());
  REQUIRE(backends->size() == 2);
  CHECK((!backends->at(1).healthy() || backends->at(1).restarts() >= 1));
  // Every GPU tried since failed at once too: none is left waiting, none managed.
  const v1::NodeSpec node = NodeNamed(s, "test-0").spec();
  for (const v1::GpuDevice& gpu : node.gpus()) {
    INFO(gpu.index());
    CHECK_FALSE(gpu.mig_managed());
  }
}

TEST_CASE("ABI 1.1: a partitioner-only backend must name the backends it shapes") {
  Options options = MigBesideExecutor("");
  options.backends[1].partitions.clear();
  auto opened = Scheduler::Open(options);
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().message() ==
        "backends[1].partitions: plugin 'partitioner' only partitions (its kinds lack "
        "TESSERA_PLUGIN_KIND_EXECUTOR): name the backends whose GPUs it shapes");
}

TEST_CASE("ABI 1.1: a capacity provider's node groups are shown with its backend") {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  options.backends.push_back(Backend("cloud", "sim", R"({
      "groups": [{"namePrefix": "base", "count": 1, "cpuMilli": 8000, "memoryMib": 16384}],
      "capacity": [{"nodes": {"namePrefix": "burst", "count": 8, "cpuMilli": 32000,
                              "memoryMib": 262144, "gpus": 4, "gpuModel": "L40S",
                              "gpuMemoryMib": 46068},
                    "pricePerHour": 7.25, "market": "SPOT"}]})"));
  auto t = Open(options);
  const v1::Backend cloud = OnlyBackend(t.scheduler.get());
  CHECK(cloud.abi() == "1.1");
  REQUIRE(cloud.node_groups_size() == 1);
  CHECK(cloud.node_groups(0).name() == "burst");
  CHECK(cloud.node_groups(0).max_nodes() == 8);
  CHECK(cloud.node_groups(0).price_per_hour() == 7.25);
  CHECK(cloud.node_groups(0).market() == v1::SPOT);
  bool provider = false;
  for (const std::string& role : cloud.roles()) provider |= role == "capacity_provider";
  CHECK(provider);
}

}  // namespace
}  // namespace tessera
#endif
