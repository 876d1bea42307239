// The plugin host, in process, linked and isolated (PluginOptions::isolate: the plugin runs in a
// tessera-plugin-host process; PluginOptions::linked: the same test backend class compiled into
// this binary, tests/plugins/test_backend.h, instead of loaded). What a plugin author and an
// operator rely on holds in every way: the ABI handshake and loading errors, jobs run through an
// executor plugin in the scheduler's clock, the sim and local backends behind the ABI. Then what
// differs: in process (loaded or linked), a plugin that errs, hangs or sends malformed bytes is
// marked unhealthy and the scheduler keeps deciding; isolated, a plugin that crashes or hangs
// takes down its own process only, and the scheduler requeues what ran there, restarts the
// process, reconciles and schedules on.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "integration/fixture.h"
#include "plugins/test_backend.h"
#include "tessera/plugin/linked.h"
#include "tessera/plugin_host.h"

namespace tessera {
namespace {

using namespace testing;

// How the scheduler hosts the plugin: each shared case runs once per mode. Linked applies to the
// test backend only (the one plugin class this binary has compiled in).
enum class Hosting { kInProcess, kLinked, kIsolated };
constexpr Hosting kHostings[] = {Hosting::kInProcess, Hosting::kIsolated};
constexpr Hosting kTestBackendHostings[] = {Hosting::kInProcess, Hosting::kLinked,
                                            Hosting::kIsolated};
constexpr Hosting kInThisProcess[] = {Hosting::kInProcess, Hosting::kLinked};

const char* Name(Hosting hosting) {
  switch (hosting) {
    case Hosting::kInProcess:
      return "in process";
    case Hosting::kLinked:
      return "linked";
    case Hosting::kIsolated:
      return "isolated";
  }
  return "?";
}

// The test backend linked in; `made` counts the instances it makes.
std::shared_ptr<const plugin::LinkedPlugin> LinkedTestBackend(
    std::shared_ptr<std::atomic<int>> made = nullptr) {
  return plugin::MakeLinkedPlugin("test-backend", "0.1.0", TESSERA_PLUGIN_KIND_EXECUTOR,
                                  [made](plugin::Host host) -> std::unique_ptr<plugin::Plugin> {
                                    if (made) ++*made;
                                    return std::make_unique<TestBackend>(host);
                                  });
}

std::string TestPlugin(const std::string& name) {
  return std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_" + name + ".so";
}

Options WithPlugin(const std::string& name, const std::string& config = "",
                   Hosting hosting = Hosting::kInProcess,
                   std::chrono::milliseconds deadline = std::chrono::milliseconds(5000)) {
  Options options;
  PluginOptions plugin;
  if (hosting == Hosting::kLinked) {
    REQUIRE(name == "test_backend");
    plugin.linked = LinkedTestBackend();
  } else {
    plugin.plugin = TestPlugin(name);
  }
  plugin.config = config;
  plugin.call_deadline = deadline;
  plugin.isolate = hosting == Hosting::kIsolated;
  options.executor_plugin = plugin;
  return options;
}

Options Isolated(const std::string& name, const std::string& config = "") {
  return WithPlugin(name, config, Hosting::kIsolated);
}

// --- Both ways.

TEST_CASE("plugin host: the handshake refuses another major version and accepts a newer minor") {
  auto wrong = InspectPlugin(TestPlugin("raw1"));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().code() == StatusCode::kFailedPrecondition);
  CHECK(wrong.status().message().find("built for plugin ABI 2.1, but this scheduler speaks 1.1") !=
        std::string::npos);

  auto newer = InspectPlugin(TestPlugin("raw2"));
  REQUIRE_MESSAGE(newer.ok(), newer.status().ToString());
  CHECK(newer->abi_minor == 2);  // one past this scheduler's 1.1 (tests/plugins/raw_plugin.cc).
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

TEST_CASE(
    "plugin host: Open fails clearly for a refused plugin, a non-plugin or a refused config") {
  for (const Hosting hosting : kHostings) {
    INFO(Name(hosting));
    auto wrong = Scheduler::Open(WithPlugin("raw1", "", hosting));
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.status().code() == StatusCode::kFailedPrecondition);
    CHECK(wrong.status().message().find("executor_plugin") != std::string::npos);
    CHECK(wrong.status().message().find(
              "built for plugin ABI 2.1, but this scheduler speaks 1.1") != std::string::npos);

    Options not_plugin = WithPlugin("raw1", "", hosting);
    not_plugin.executor_plugin->plugin = "/lib/x86_64-linux-gnu/libc.so.6";
    auto refused = Scheduler::Open(not_plugin);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("no tessera_plugin_entry symbol") != std::string::npos);
  }
  for (const Hosting hosting : kTestBackendHostings) {
    INFO(Name(hosting));
    auto rejected = Scheduler::Open(WithPlugin("test_backend", "reject=1", hosting));
    REQUIRE_FALSE(rejected.ok());
    CHECK(rejected.status().code() == StatusCode::kInvalidArgument);
    CHECK(rejected.status().message().find("on_init refused the config: reject: set") !=
          std::string::npos);
  }
}

TEST_CASE("plugin host: jobs run through an executor plugin in the scheduler's clock") {
  for (const Hosting hosting : kTestBackendHostings) {
    INFO(Name(hosting));
    auto t = Open(WithPlugin("test_backend", "nodes=2", hosting));
    Scheduler* s = t.scheduler.get();
    auto nodes = s->ListNodes();
    REQUIRE(nodes.ok());
    CHECK(nodes->size() == 2);
    const uint64_t job =
        MustSubmit(s, JobSpecBuilder("default").Gpus(4).SimulatedDurationMs(10'000, 3).Build())
            .id();
    t->WaitIdle();
    CHECK(MustGet(s, job).status().state() == v1::RUNNING);
    // The plugin's clock is the scheduler's: the task ends 10 virtual seconds later.
    t.clock->AdvanceUs(9'000'000);
    t->WaitIdle();
    CHECK(MustGet(s, job).status().state() == v1::RUNNING);
    t.clock->AdvanceUs(1'000'000);
    t->WaitIdle();
    const v1::Job done = MustGet(s, job);
    CHECK(done.status().state() == v1::FAILED);  // exit code 3, reported by the plugin.
    CHECK(done.status().placements(0).exit_code() == 3);
  }
}

// --- In process.

TEST_CASE("plugin host, in process: a hung launch is abandoned at its deadline; decisions go on") {
  for (const Hosting hosting : kInThisProcess) {
    INFO(Name(hosting));
    auto t = Open(WithPlugin("test_backend", "launch_delay_ms=3000", hosting,
                             std::chrono::milliseconds(200)));
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
    // Lost once with the backend, which spends none of its attempts.
    CHECK(lost.status().losses() == 0);
    CHECK(lost.status().attempt() == 2);
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
}

TEST_CASE("plugin host: an error from one launch fails only that launch") {
  for (const Hosting hosting : kTestBackendHostings) {
    INFO(Name(hosting));
    // Job 1's first launch fails; job 2's runs.
    auto t = Open(WithPlugin("test_backend", "nodes=1\nlaunch_error_job=1", hosting));
    Scheduler* s = t.scheduler.get();
    const uint64_t failed = MustSubmit(s, JobSpecBuilder("default").Gpus(4).Build()).id();
    const uint64_t other = MustSubmit(s, JobSpecBuilder("default").Gpus(4).Build()).id();
    REQUIRE(failed == 1);
    t->WaitIdle();
    // The failed launch was placed again, without spending an attempt, and now runs.
    const v1::Job again = MustGet(s, failed);
    CHECK(again.status().state() == v1::RUNNING);
    CHECK(again.status().attempt() == 2);
    CHECK(again.status().losses() == 0);
    const v1::Job untouched = MustGet(s, other);
    CHECK(untouched.status().state() == v1::RUNNING);
    CHECK(untouched.status().attempt() == 1);
    auto backends = s->ListBackends();
    REQUIRE(backends.ok());
    CHECK(backends->at(0).healthy());
    auto nodes = s->ListNodes();
    REQUIRE(nodes.ok());
    CHECK_FALSE(nodes->at(0).status().cordoned());
  }
}

TEST_CASE("plugin host: a stop the plugin fails is sent again after a backoff until it succeeds") {
  for (const Hosting hosting : kTestBackendHostings) {
    INFO(Name(hosting));
    // The first two stops fail (the backend's API is down); the third goes through.
    auto t = Open(WithPlugin("test_backend", "nodes=1\nstop_errors=2", hosting));
    Scheduler* s = t.scheduler.get();
    const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
    t->WaitIdle();
    REQUIRE(MustGet(s, job).status().state() == v1::RUNNING);
    REQUIRE(s->Cancel(job).ok());
    t->WaitIdle();
    // The first stop failed; it is sent again 1 s later, fails again, and 2 s after that succeeds.
    CHECK(MustGet(s, job).status().state() != v1::CANCELLED);
    t.clock->AdvanceUs(1'000'000);
    t->WaitIdle();
    CHECK(MustGet(s, job).status().state() != v1::CANCELLED);
    t.clock->AdvanceUs(2'000'000);
    t->WaitIdle();
    CHECK(MustGet(s, job).status().state() == v1::CANCELLED);
    auto backends = s->ListBackends();
    REQUIRE(backends.ok());
    CHECK(backends->at(0).healthy());
    // Three stops asked, two failed: the operations say so.
    bool counted = false;
    for (const v1::BackendOperations& op : backends->at(0).operations()) {
      if (op.kind() != "stop") continue;
      counted = true;
      CHECK(op.succeeded() == 1);
      CHECK(op.failed() == 2);
      CHECK(op.in_flight() == 0);
    }
    CHECK(counted);
    CHECK(backends->at(0).last_operation_failure().find(
              "stop 3 (job 1.1 task 0, sent again (1)): ") == 0);
  }
}

TEST_CASE(
    "plugin host, in process: errors in a row past max_consecutive_errors and malformed event "
    "bytes mark the plugin unhealthy") {
  for (const int max_errors : {1, 3}) {
    INFO("max_consecutive_errors " << max_errors);
    Options options = WithPlugin("test_backend", "launch_error=1");
    options.executor_plugin->max_consecutive_errors = max_errors;
    options.executor_plugin->max_restarts_per_minute = 0;  // it stays down, to be looked at.
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
    t->WaitIdle();
    const v1::Job j = MustGet(s, job);
    CHECK(j.status().state() == v1::PENDING);
    // Each failed launch was placed again, and the loss with the backend too, none spending an
    // attempt: max_errors launches, then one more requeue.
    CHECK(j.status().losses() == 0);
    CHECK(j.status().attempt() == max_errors + 1);
    auto backends = s->ListBackends();
    REQUIRE(backends.ok());
    CHECK_FALSE(backends->at(0).healthy());
    CHECK(backends->at(0).unhealthy_reason().find("launch_error: set") != std::string::npos);
    if (max_errors > 1) {
      CHECK(backends->at(0).unhealthy_reason().find("3 failed calls in a row") !=
            std::string::npos);
    }
  }
  {
    Options options = WithPlugin("raw3");
    options.executor_plugin->max_restarts_per_minute = 0;
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    const uint64_t job = MustSubmit(s, JobSpecBuilder("default").CpuMilli(100).Build()).id();
    t->WaitIdle();
    auto nodes = s->ListNodes();
    REQUIRE(nodes.ok());
    CHECK(nodes->at(0).status().cordoned());
    CHECK(MustGet(s, job).status().state() == v1::PENDING);
  }
}

TEST_CASE(
    "plugin host, in process: an unhealthy plugin is shut down and restarted as a new instance") {
  for (const Hosting hosting : kInThisProcess) {
    INFO(Name(hosting));
    // Launches fail three times in a row (the plugin's process-wide count, which a new instance
    // in the same process does not reset): the plugin turns unhealthy, is restarted, and the job
    // runs on the new instance.
    Options options = WithPlugin(
        "test_backend", "nodes=1\nprocess_launch_errors=3\nsingle_instance=restart", hosting);
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
    t->WaitIdle();
    const v1::Job j = MustGet(s, job);
    CHECK(j.status().state() == v1::RUNNING);
    CHECK(j.status().losses() == 0);
    auto backends = s->ListBackends();
    REQUIRE(backends.ok());
    CHECK(backends->at(0).healthy());
    CHECK(backends->at(0).restarts() == 1);
    auto nodes = s->ListNodes();
    REQUIRE(nodes.ok());
    CHECK_FALSE(nodes->at(0).status().cordoned());
    // The old instance was shut down before the new one was made: with single_instance the
    // plugin fails on_init while another instance lives, and the restart succeeded at once.
  }
}

TEST_CASE("plugin host, in process: a plugin with a hung call is not restarted beside it") {
  for (const Hosting hosting : kInThisProcess) {
    INFO(Name(hosting));
    auto t = Open(WithPlugin("test_backend", "launch_delay_ms=1500", hosting,
                             std::chrono::milliseconds(200)));
    Scheduler* s = t.scheduler.get();
    MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build());
    t->WaitIdle();
    auto backends = s->ListBackends();
    REQUIRE(backends.ok());
    CHECK_FALSE(backends->at(0).healthy());
    CHECK(backends->at(0).restarts() == 0);
    CHECK(backends->at(0).unhealthy_reason().find("did not return within 200 ms") !=
          std::string::npos);
  }
}

TEST_CASE("plugin host, in process: a hung plugin's instance is shut down once its call returns") {
  for (const Hosting hosting : kInThisProcess) {
    INFO(Name(hosting));
    // single_instance: a second instance of this name cannot start while the first lives.
    Options options = WithPlugin("test_backend", "launch_delay_ms=800\nsingle_instance=hung",
                                 hosting, std::chrono::milliseconds(100));
    {
      auto t = Open(options);
      MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(1).Build());
      t->WaitIdle();
      auto backends = t.scheduler->ListBackends();
      REQUIRE(backends.ok());
      REQUIRE_FALSE(backends->at(0).healthy());
    }  // closed while the launch is still stuck in the plugin.
    // Once the launch returns, nothing uses the instance any more: it gets its on_shutdown, so a
    // new scheduler can make one (without it: "another instance named 'hung' is alive").
    bool reopened = false;
    for (int i = 0; i < 100 && !reopened; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      auto again = Scheduler::Open(options);
      reopened = again.ok();
      if (!reopened) {
        CHECK(again.status().message().find("another instance named 'hung' is alive") !=
              std::string::npos);
      }
    }
    CHECK(reopened);
  }
}

// --- Linked (PluginOptions::linked).

TEST_CASE("plugin host, linked: the backend names it, and a restart makes an instance with make") {
  auto made = std::make_shared<std::atomic<int>>(0);
  Options options = WithPlugin("test_backend", "nodes=1\nlaunch_error_job=1", Hosting::kLinked);
  options.executor_plugin->linked = LinkedTestBackend(made);
  options.executor_plugin->max_consecutive_errors = 1;  // the first failed launch: a restart.
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  CHECK(*made == 1);
  auto backends = s->ListBackends();
  REQUIRE(backends.ok());
  CHECK(backends->at(0).name() == "test-backend");
  CHECK(backends->at(0).plugin() == "(linked)");
  CHECK(backends->at(0).version() == "0.1.0");
  CHECK_FALSE(backends->at(0).isolated());
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  // Job 1's first launch failed, which (max_consecutive_errors 1) made the plugin unhealthy; the
  // scheduler shut that instance down, asked make for another, and the job runs there.
  CHECK(MustGet(s, job).status().state() == v1::RUNNING);
  CHECK(MustGet(s, job).status().attempt() == 2);
  CHECK(*made == 2);
  backends = s->ListBackends();
  REQUIRE(backends.ok());
  CHECK(backends->at(0).healthy());
  CHECK(backends->at(0).restarts() == 1);
}

TEST_CASE("plugin host, linked: Open refuses a linked plugin set wrong, naming the field") {
  struct Case {
    std::function<void(PluginOptions&)> mutate;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](PluginOptions& p) { p.plugin = "sim"; },
       "executor_plugin.plugin: set together with linked; keep one"},
      {[](PluginOptions& p) { p.isolate = true; },
       "executor_plugin.isolate: a linked plugin is code of this program; it cannot be isolated"},
      {[](PluginOptions& p) {
         p.linked = std::make_shared<const plugin::LinkedPlugin>(
             plugin::LinkedPlugin{"x", "1", TESSERA_PLUGIN_KIND_EXECUTOR, {}});
       },
       "executor_plugin.linked.make: must be set"},
      {[](PluginOptions& p) {
         p.linked = plugin::MakeLinkedPlugin("", "1", TESSERA_PLUGIN_KIND_EXECUTOR, p.linked->make);
       },
       "executor_plugin: linked plugin: descriptor has no name"},
      {[](PluginOptions& p) {
         p.linked = plugin::MakeLinkedPlugin("no-kinds", "1", 0, p.linked->make);
       },
       "executor_plugin: linked plugin: plugin 'no-kinds': descriptor kinds 0 is not a set of "
       "TESSERA_PLUGIN_KIND_* bits"},
  };
  for (const Case& c : cases) {
    Options options = WithPlugin("test_backend", "", Hosting::kLinked);
    c.mutate(*options.executor_plugin);
    auto opened = Scheduler::Open(options);
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.status().code() == StatusCode::kInvalidArgument);
    CHECK(opened.status().message() == c.message);
  }
}

// --- Isolated.

TEST_CASE("plugin host, isolated: a missing tessera-plugin-host is named at Open") {
  Options no_host = Isolated("test_backend");
  no_host.executor_plugin->host_executable = "/nonexistent/tessera-plugin-host";
  auto missing = Scheduler::Open(no_host);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("/nonexistent/tessera-plugin-host") != std::string::npos);
}

TEST_CASE(
    "plugin host, isolated: a crashing plugin is restarted, its job requeued, later jobs run") {
  // The first job's first launch aborts the plugin's process.
  auto t = Open(Isolated("test_backend", "nodes=1\ncrash_on_job=1"));
  Scheduler* s = t.scheduler.get();
  const uint64_t first =
      MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(10'000).Build()).id();
  REQUIRE(first == 1);
  // WaitIdle covers the restart: the crash, the loss, the new process, on_init, inventory and
  // reconcile, then the node uncordoned and the job placed again.
  t->WaitIdle();
  const v1::Job requeued = MustGet(s, first);
  // Lost once with the backend, which spends none of its attempts.
  CHECK(requeued.status().losses() == 0);
  CHECK(requeued.status().attempt() == 2);
  CHECK(requeued.status().state() == v1::RUNNING);
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  CHECK_FALSE(nodes->at(0).status().cordoned());

  // The lost attempt does not come back: only attempt 2 runs, once, and ends on time.
  const uint64_t later =
      MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(5'000).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, later).status().state() == v1::PENDING);  // the node is full.
  t.clock->AdvanceUs(10'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, first).status().state() == v1::SUCCEEDED);
  CHECK(MustGet(s, later).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(5'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, later).status().state() == v1::SUCCEEDED);
  // Lost once with the backend, which spends none of its attempts.
  CHECK(MustGet(s, first).status().losses() == 0);
  CHECK(MustGet(s, first).status().attempt() == 2);
}

TEST_CASE(
    "plugin host, isolated: without restarts a crashed plugin stays unhealthy; decisions go on") {
  Options options = Isolated("test_backend", "nodes=1\ncrash_on_job=1");
  options.executor_plugin->max_restarts_per_minute = 0;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  const v1::Job lost = MustGet(s, job);
  CHECK(lost.status().state() == v1::PENDING);
  // Lost once with the backend, which spends none of its attempts.
  CHECK(lost.status().losses() == 0);
  CHECK(lost.status().attempt() == 2);
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  CHECK(nodes->at(0).status().cordoned());
  CreateQueue(s, QueueSpec("after"));
  const uint64_t next = MustSubmit(s, JobSpecBuilder("after").CpuMilli(100).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, next).status().state() == v1::PENDING);
}

TEST_CASE("plugin host, isolated: a hung call is abandoned and the process killed and restarted") {
  Options options = Isolated("test_backend", "launch_delay_ms=60000");
  options.executor_plugin->call_deadline = std::chrono::milliseconds(200);
  options.executor_plugin->max_restarts_per_minute = 1;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const auto start = std::chrono::steady_clock::now();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  // The 60 s launch was given up after 200 ms; the process was killed (so no thread is left
  // stuck in it) and restarted once; the job's second launch hangs too, and with the budget
  // spent the plugin stays unhealthy. All well before the first launch would have returned.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  const v1::Job lost = MustGet(s, job);
  // Lost twice with the backend, which spends none of its attempts.
  CHECK(lost.status().losses() == 0);
  CHECK(lost.status().attempt() == 3);
  CHECK(lost.status().state() == v1::PENDING);
}

}  // namespace
}  // namespace tessera

#ifdef TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

TEST_CASE("plugin host: the sim backend behind the ABI runs jobs in virtual time") {
  for (const Hosting hosting : kHostings) {
    INFO(Name(hosting));
    Options options;
    options.plugin_dirs = {TESSERA_PLUGIN_DIR};
    PluginOptions plugin;
    plugin.plugin = "sim";
    plugin.isolate = hosting == Hosting::kIsolated;
    plugin.config = R"({"groups":[{"namePrefix":"gpu","count":2,"cpuMilli":64000,
        "memoryMib":524288,"gpus":8,"gpuModel":"A100-80GB","gpuMemoryMib":81920}]})";
    options.executor_plugin = plugin;
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    std::vector<uint64_t> jobs;
    for (int i = 0; i < 3; ++i) {
      jobs.push_back(
          MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(60'000).Build())
              .id());
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
}

Options LocalBackend(const ScratchDir& dir, Hosting hosting) {
  Options options;
  options.clock = RealClock();
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  PluginOptions plugin;
  plugin.plugin = "local";
  plugin.isolate = hosting == Hosting::kIsolated;
  plugin.config = "node_name = here\nstate_dir = " + dir.File("local") + "\n";
  options.executor_plugin = plugin;
  return options;
}

TEST_CASE("plugin host: the local backend runs real processes and reports their exit codes") {
  for (const Hosting hosting : kHostings) {
    INFO(Name(hosting));
    ScratchDir dir;
    auto opened = Scheduler::Open(LocalBackend(dir, hosting));
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
}

// The tessera-plugin-host child of this process that runs `plugin`, or 0.
pid_t HostProcessOf(const std::string& plugin) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent != getpid()) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    const std::string args((std::istreambuf_iterator<char>(cmdline)), {});
    if (args.find("tessera-plugin-host") != std::string::npos &&
        args.find(plugin) != std::string::npos) {
      return static_cast<pid_t>(std::stol(name));
    }
  }
  return 0;
}

template <typename Pred>
bool WaitFor(Pred done, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Running: neither gone nor a zombie (whoever inherited an orphan may be slow to reap it).
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (pid <= 0 || !std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

pid_t ReadPid(const std::string& file) {
  std::ifstream in(file);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

TEST_CASE("plugin host, isolated: when the local backend's process dies, no job runs twice") {
  ScratchDir dir;
  auto opened = Scheduler::Open(LocalBackend(dir, Hosting::kIsolated));
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  Scheduler* s = opened->get();
  const std::string pids = dir.File("pid-");
  const uint64_t job =
      MustSubmit(s, JobSpecBuilder("default")
                        .CpuMilli(100)
                        .Command({"/bin/sh", "-c",
                                  "echo $$ > " + pids + "$TESSERA_ATTEMPT; exec sleep 60"})
                        .Build())
          .id();
  REQUIRE(WaitFor(
      [&] { return ReadPid(pids + "1") > 0 && MustGet(s, job).status().state() == v1::RUNNING; }));
  const pid_t first = ReadPid(pids + "1");

  // Kill the plugin's process, as a crash would. Its task outlives it (a process group of its
  // own); the restarted instance adopts it and lists it in on_reconcile, but the job was
  // requeued as lost, so the scheduler stops it: only the second attempt runs.
  const pid_t host = HostProcessOf("libtessera_plugin_local.so");
  REQUIRE(host > 0);
  REQUIRE(kill(host, SIGKILL) == 0);
  CHECK(WaitFor([&] {
    const v1::Job j = MustGet(s, job);
    return j.status().attempt() == 2 && j.status().state() == v1::RUNNING &&
           ReadPid(pids + "2") > 0;
  }));
  CHECK(WaitFor([&] { return !Alive(first); }));
  CHECK(Alive(ReadPid(pids + "2")));
  // Lost once with the backend, which spends none of its attempts.
  CHECK(MustGet(s, job).status().losses() == 0);
  CHECK(MustGet(s, job).status().attempt() == 2);

  REQUIRE(s->Cancel(job).ok());
  CHECK(WaitFor([&] { return IsTerminal(MustGet(s, job).status().state()); }));
}

}  // namespace
}  // namespace tessera
#endif
