// The plugin host: loading and the ABI handshake, running jobs through an executor plugin, and
// what happens when a plugin misbehaves (errors, hangs, malformed payloads): it is marked
// unhealthy and the scheduler keeps deciding.
#include <algorithm>
#include <chrono>

#include "integration/fixture.h"
#include "tessera/plugin_host.h"

namespace tessera {
namespace {

using namespace testing;

std::string TestPlugin(const std::string& name) {
  return std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_" + name + ".so";
}

Options WithPlugin(const std::string& name, const std::string& config = "",
                   std::chrono::milliseconds deadline = std::chrono::milliseconds(5000)) {
  Options options;
  PluginOptions plugin;
  plugin.plugin = TestPlugin(name);
  plugin.config = config;
  plugin.call_deadline = deadline;
  options.executor_plugin = plugin;
  return options;
}

TEST_CASE("plugin host: the handshake refuses another major version and accepts a newer minor") {
  auto wrong = InspectPlugin(TestPlugin("raw1"));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().code() == StatusCode::kFailedPrecondition);
  CHECK(wrong.status().message().find("built for plugin ABI 2.0, but this scheduler speaks 1.0") !=
        std::string::npos);

  auto newer = InspectPlugin(TestPlugin("raw2"));
  REQUIRE_MESSAGE(newer.ok(), newer.status().ToString());
  CHECK(newer->abi_minor == 1);
  CHECK(newer->name == "raw");
  CHECK(newer->executor);

  auto by_name = InspectPlugin("test_backend", {"/nonexistent", TESSERA_TEST_PLUGIN_DIR});
  REQUIRE_MESSAGE(by_name.ok(), by_name.status().ToString());
  CHECK(by_name->name == "test-backend");
  CHECK(by_name->version == "0.1.0");

  auto missing = InspectPlugin("nope", {TESSERA_TEST_PLUGIN_DIR});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("no libtessera_plugin_nope.so in plugin_dirs") !=
        std::string::npos);

  // A shared object that is not a plugin.
  auto not_plugin = InspectPlugin("/lib/x86_64-linux-gnu/libc.so.6");
  REQUIRE_FALSE(not_plugin.ok());
  CHECK(not_plugin.status().message().find("no tessera_plugin_entry symbol") != std::string::npos);
}

TEST_CASE("plugin host: Open fails clearly for a refused plugin or config") {
  auto wrong = Scheduler::Open(WithPlugin("raw1"));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message().find("executor_plugin") != std::string::npos);

  auto rejected = Scheduler::Open(WithPlugin("test_backend", "reject=1"));
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.status().code() == StatusCode::kInvalidArgument);
  CHECK(rejected.status().message().find("on_init refused the config: reject: set") !=
        std::string::npos);
}

TEST_CASE("plugin host: jobs run through an executor plugin in virtual time") {
  auto t = Open(WithPlugin("test_backend", "nodes=2"));
  Scheduler* s = t.scheduler.get();
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  CHECK(nodes->size() == 2);
  const uint64_t job =
      MustSubmit(s, JobSpecBuilder("default").Gpus(4).SimulatedDurationMs(10'000, 3).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(10'000'000);
  t->WaitIdle();
  const v1::Job done = MustGet(s, job);
  CHECK(done.status().state() == v1::FAILED);  // exit code 3, reported by the plugin.
  CHECK(done.status().placements(0).exit_code() == 3);
}

TEST_CASE("plugin host: a hung launch is abandoned at its deadline; decisions go on") {
  auto t = Open(WithPlugin("test_backend", "launch_delay_ms=3000", std::chrono::milliseconds(200)));
  Scheduler* s = t.scheduler.get();
  const auto start = std::chrono::steady_clock::now();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  // The launch hangs for 3 s; the host gave up after 200 ms and the scheduler went on: the
  // plugin is unhealthy, its node cordoned, and the job requeued as lost, all well before the
  // plugin's call returns.
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited < std::chrono::milliseconds(2000));
  const v1::Job lost = MustGet(s, job);
  CHECK(lost.status().state() == v1::PENDING);
  CHECK(lost.status().losses() == 1);
  // Its event says what happened; its reason, why it waits now (its only node is cordoned).
  auto events = s->WatchEvents(0, 100, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  CHECK(std::any_of(events->begin(), events->end(), [job](const v1::Event& e) {
    return e.job_id() == job && e.reason().find("requeued after loss") != std::string::npos;
  }));
  CHECK(lost.status().reason().find("waiting for capacity") != std::string::npos);
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  CHECK(nodes->at(0).status().cordoned());
  // Decisions are not held up: a queue change and a new job are handled at once.
  const auto again = std::chrono::steady_clock::now();
  CreateQueue(s, QueueSpec("after"));
  const uint64_t next = MustSubmit(s, JobSpecBuilder("after").CpuMilli(100).Build()).id();
  t->WaitIdle();
  CHECK(std::chrono::steady_clock::now() - again < std::chrono::milliseconds(500));
  // Every node is cordoned, so it waits.
  CHECK(MustGet(s, next).status().state() == v1::PENDING);
}

TEST_CASE(
    "plugin host: an error from a launch and malformed event bytes mark the plugin unhealthy") {
  {
    auto t = Open(WithPlugin("test_backend", "launch_error=1"));
    Scheduler* s = t.scheduler.get();
    const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
    t->WaitIdle();
    const v1::Job j = MustGet(s, job);
    CHECK(j.status().state() == v1::PENDING);
    CHECK(j.status().losses() == 1);
  }
  {
    auto t = Open(WithPlugin("raw3"));
    Scheduler* s = t.scheduler.get();
    const uint64_t job = MustSubmit(s, JobSpecBuilder("default").CpuMilli(100).Build()).id();
    t->WaitIdle();
    auto nodes = s->ListNodes();
    REQUIRE(nodes.ok());
    CHECK(nodes->at(0).status().cordoned());
    CHECK(MustGet(s, job).status().state() == v1::PENDING);
  }
}

}  // namespace
}  // namespace tessera

#ifdef TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

TEST_CASE("plugin host: the sim backend behind the ABI runs jobs in virtual time") {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  PluginOptions plugin;
  plugin.plugin = "sim";
  plugin.config = R"({"groups":[{"namePrefix":"gpu","count":2,"cpuMilli":64000,
      "memoryMib":524288,"gpus":8,"gpuModel":"A100-80GB","gpuMemoryMib":81920}]})";
  options.executor_plugin = plugin;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  std::vector<uint64_t> jobs;
  for (int i = 0; i < 3; ++i) {
    jobs.push_back(
        MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(60'000).Build()).id());
  }
  t->WaitIdle();
  CHECK(MustGet(s, jobs[0]).status().state() == v1::RUNNING);
  CHECK(MustGet(s, jobs[1]).status().state() == v1::RUNNING);
  CHECK(MustGet(s, jobs[2]).status().state() == v1::PENDING);
  // One simulated minute later the first two end and the third starts.
  t.clock->AdvanceUs(60'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, jobs[0]).status().state() == v1::SUCCEEDED);
  CHECK(MustGet(s, jobs[2]).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(60'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, jobs[2]).status().state() == v1::SUCCEEDED);
}

TEST_CASE("plugin host: the local backend runs real processes and reports their exit codes") {
  ScratchDir dir;
  Options options;
  options.clock = RealClock();
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  PluginOptions plugin;
  plugin.plugin = "local";
  plugin.config = "node_name = here\nstate_dir = " + dir.File("local") + "\n";
  options.executor_plugin = plugin;
  auto opened = Scheduler::Open(options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  Scheduler* s = opened->get();
  const uint64_t ok = MustSubmit(s, JobSpecBuilder("default")
                                        .CpuMilli(100)
                                        .Command({"/bin/sh", "-c", "echo hello; exit 0"})
                                        .Build())
                          .id();
  const uint64_t bad =
      MustSubmit(
          s, JobSpecBuilder("default").CpuMilli(100).Command({"/bin/sh", "-c", "exit 7"}).Build())
          .id();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline &&
         !(IsTerminal(MustGet(s, ok).status().state()) &&
           IsTerminal(MustGet(s, bad).status().state()))) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(MustGet(s, ok).status().state() == v1::SUCCEEDED);
  const v1::Job failed = MustGet(s, bad);
  CHECK(failed.status().state() == v1::FAILED);
  CHECK(failed.status().placements(0).exit_code() == 7);
}

}  // namespace
}  // namespace tessera
#endif
