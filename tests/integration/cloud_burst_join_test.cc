// Cloud burst when the nodes a provider adds join through another backend, under names of
// their own, as EC2 instances join as Kubernetes nodes (plugins/aws-ec2): the test plugins
// cloud_provider and cloud_nodes share a pool file (tests/plugins/cloud_pool.h); the sim plugin
// is the private pool. In virtual time, through the public API.
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "integration/fixture.h"

#if TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;
constexpr const char* kMachine = "ip-10-0-0-1.ec2.internal";

constexpr const char* kPrivatePool = R"({"groups": [{"namePrefix": "private", "count": 1,
    "cpuMilli": 32000, "memoryMib": 131072, "gpus": 4, "gpuModel": "L4",
    "gpuMemoryMib": 23034}]})";

std::string TestPlugin(const std::string& name) {
  return std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_" + name + ".so";
}

BackendOptions Backend(const std::string& name, const std::string& plugin,
                       const std::string& config) {
  BackendOptions b;
  b.name = name;
  b.plugin.plugin = plugin;
  b.plugin.config = config;
  return b;
}

// The private pool, the executor the cloud's machines join through, and the cloud.
Options JoinOptions(const std::string& pool, const std::string& provider_extra = "",
                    const std::string& nodes_extra = "") {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  options.backends.push_back(Backend("private", "sim", kPrivatePool));
  options.backends.push_back(
      Backend("nodes", TestPlugin("cloud_nodes"), "pool=" + pool + "\n" + nodes_extra));
  options.backends.push_back(
      Backend("cloud", TestPlugin("cloud_provider"), "pool=" + pool + "\n" + provider_extra));
  options.elastic.scale_out_after = std::chrono::seconds(120);
  options.elastic.scale_in_after = std::chrono::seconds(600);
  options.elastic.metering_interval = std::chrono::seconds(60);
  options.engine.max_reservations = 0;  // a reservation's reason would hide burst's.
  return options;
}

void Run(TestScheduler& t, int64_t seconds) {
  for (int64_t s = 0; s < seconds; s += 5) {
    t.clock->AdvanceUs(5 * kSecond);
    t->WaitIdle();
  }
}

v1::JobSpec Job(int64_t duration_ms, int64_t grace_s = 0) {
  v1::JobSpec spec = JobSpecBuilder("default").Gpus(4).SimulatedDurationMs(duration_ms).Build();
  spec.set_checkpoint_grace_s(grace_s);
  return spec;
}

// The node's labels, or nullopt when it is not in the cluster.
std::optional<std::map<std::string, std::string>> LabelsOf(Scheduler* s, const std::string& name) {
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  for (const v1::Node& node : *nodes) {
    if (node.spec().name() == name) {
      return std::map<std::string, std::string>(node.spec().labels().begin(),
                                                node.spec().labels().end());
    }
  }
  return std::nullopt;
}

TEST_CASE("burst: a provider's machines joining through another backend are burst nodes") {
  ScratchDir dir;
  auto t = Open(JoinOptions(dir.File("pool")));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, Job(7'200'000));  // holds the private node.
  const uint64_t job = MustSubmit(s, Job(600'000)).id();
  Run(t, 125);
  CHECK(MustGet(s, job).status().reason().find("1 node(s) of 'cloud-l4'") != std::string::npos);
  // The machine joins 30 s after the request, through "nodes"; the request ends 5 s later,
  // naming it.
  Run(t, 45);
  const v1::Job placed = MustGet(s, job);
  REQUIRE(placed.status().state() == v1::RUNNING);
  CHECK(placed.status().placements(0).node() == kMachine);
  auto labels = LabelsOf(s, kMachine);
  REQUIRE(labels.has_value());
  CHECK((*labels)["tessera.io/node-group"] == "cloud-l4");
  CHECK((*labels)["tessera.io/burst-market"] == "on-demand");

  // Charged to the queue whose job ran there: 10 minutes at 2.00 an hour (metered each minute).
  Run(t, 660);
  auto queue = s->GetQueue("default");
  REQUIRE(queue.ok());
  CHECK(queue->status().burst().today() > 0.28);
  CHECK(queue->status().burst().today() < 0.39);
  // Idle past scale_in_after: given back to the provider, and gone from the executor.
  Run(t, 660);
  CHECK_FALSE(LabelsOf(s, kMachine).has_value());
  CHECK(LabelsOf(s, "private-0").has_value());
}

TEST_CASE("burst: the provider's spot notice for a node another backend runs is taken") {
  ScratchDir dir;
  // Each machine gets a notice 5 minutes after it joined, and goes two minutes later.
  auto t = Open(JoinOptions(dir.File("pool"), "market=spot\nnotice_after_ms=300000"));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, Job(7'200'000));
  const uint64_t job = MustSubmit(s, Job(3'600'000, /*grace_s=*/30)).id();
  Run(t, 170);
  REQUIRE(MustGet(s, job).status().state() == v1::RUNNING);
  REQUIRE(MustGet(s, job).status().placements(0).node() == kMachine);
  // The notice (about 300 s after the join): the job is stopped with its grace and requeued
  // before the machine goes.
  Run(t, 360);
  REQUIRE(LabelsOf(s, kMachine).has_value());  // still there: it goes two minutes after.
  const v1::Job requeued = MustGet(s, job);
  CHECK(requeued.status().state() != v1::RUNNING);
  CHECK(requeued.status().preemptions() == 0);
}

TEST_CASE("burst: after a restart, machines that carry their group label are burst nodes again") {
  ScratchDir dir;
  const std::string pool = dir.File("pool");
  const std::string store = dir.File("tessera.db");
  auto clock = std::make_shared<ManualClock>();
  uint64_t job = 0;
  {
    Options options = JoinOptions(pool, "", "group_label=1");
    options.store.path = store;
    options.clock = clock;
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    MustSubmit(s, Job(7'200'000));
    job = MustSubmit(s, Job(600'000)).id();
    Run(t, 170);
    REQUIRE(MustGet(s, job).status().placements(0).node() == kMachine);
  }
  Options options = JoinOptions(pool, "", "group_label=1");
  options.store.path = store;
  options.clock = clock;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  auto labels = LabelsOf(s, kMachine);
  REQUIRE(labels.has_value());
  CHECK((*labels)["tessera.io/burst-market"] == "on-demand");
  // Still scaled in once idle: the restart leaks no machine.
  Run(t, 600 + 660);
  CHECK(MustGet(s, job).status().state() == v1::SUCCEEDED);
  CHECK_FALSE(LabelsOf(s, kMachine).has_value());
}

TEST_CASE("burst: a node a request names but that was there before it is not taken") {
  ScratchDir dir;
  auto t = Open(JoinOptions(dir.File("pool"), "also_name=private-0"));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, Job(600'000));
  MustSubmit(s, Job(600'000));
  Run(t, 170);
  REQUIRE(LabelsOf(s, kMachine).has_value());
  auto labels = LabelsOf(s, "private-0");
  REQUIRE(labels.has_value());
  CHECK(labels->count("tessera.io/burst-market") == 0);
  // The private node is never scaled in, however long it idles.
  Run(t, 600 + 1300);
  CHECK(LabelsOf(s, "private-0").has_value());
  CHECK_FALSE(LabelsOf(s, kMachine).has_value());
}

}  // namespace
}  // namespace tessera
#endif
