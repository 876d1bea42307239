// Isolated plugins (PluginOptions::isolate): the plugin runs in a tessera-plugin-host process,
// so a plugin that crashes takes down that process and not the scheduler (nor this test). The
// scheduler requeues what ran there, restarts the process, reconciles and schedules on.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "integration/fixture.h"
#include "tessera/plugin_host.h"

namespace tessera {
namespace {

using namespace testing;

std::string TestPlugin(const std::string& name) {
  return std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_" + name + ".so";
}

Options Isolated(const std::string& name, const std::string& config = "") {
  Options options;
  PluginOptions plugin;
  plugin.plugin = TestPlugin(name);
  plugin.config = config;
  plugin.isolate = true;
  options.executor_plugin = plugin;
  return options;
}

TEST_CASE("plugin isolation: jobs run through an isolated plugin in virtual time") {
  auto t = Open(Isolated("test_backend", "nodes=2"));
  Scheduler* s = t.scheduler.get();
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  CHECK(nodes->size() == 2);
  const uint64_t job =
      MustSubmit(s, JobSpecBuilder("default").Gpus(4).SimulatedDurationMs(10'000, 3).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::RUNNING);
  // The plugin's clock is the scheduler's: the task ends 10 virtual seconds later.
  t.clock->AdvanceUs(9'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(1'000'000);
  t->WaitIdle();
  const v1::Job done = MustGet(s, job);
  CHECK(done.status().state() == v1::FAILED);
  CHECK(done.status().placements(0).exit_code() == 3);
}

TEST_CASE("plugin isolation: a crashing plugin is restarted, its job requeued, later jobs run") {
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
  CHECK(requeued.status().losses() == 1);
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
  CHECK(MustGet(s, first).status().losses() == 1);
}

TEST_CASE("plugin isolation: without restarts a crashed plugin stays unhealthy; decisions go on") {
  Options options = Isolated("test_backend", "nodes=1\ncrash_on_job=1");
  options.executor_plugin->max_restarts_per_minute = 0;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  const v1::Job lost = MustGet(s, job);
  CHECK(lost.status().state() == v1::PENDING);
  CHECK(lost.status().losses() == 1);
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  CHECK(nodes->at(0).status().cordoned());
  CreateQueue(s, QueueSpec("after"));
  const uint64_t next = MustSubmit(s, JobSpecBuilder("after").CpuMilli(100).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, next).status().state() == v1::PENDING);
}

TEST_CASE("plugin isolation: a hung call is abandoned and the process killed and restarted") {
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
  CHECK(lost.status().losses() == 2);
  CHECK(lost.status().state() == v1::PENDING);
}

TEST_CASE("plugin isolation: loading errors read as in process") {
  auto wrong = Scheduler::Open(Isolated("raw1"));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().code() == StatusCode::kFailedPrecondition);
  CHECK(wrong.status().message().find("built for plugin ABI 2.0, but this scheduler speaks 1.0") !=
        std::string::npos);

  Options not_plugin = Isolated("raw1");
  not_plugin.executor_plugin->plugin = "/lib/x86_64-linux-gnu/libc.so.6";
  auto refused = Scheduler::Open(not_plugin);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("no tessera_plugin_entry symbol") != std::string::npos);

  auto rejected = Scheduler::Open(Isolated("test_backend", "reject=1"));
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.status().code() == StatusCode::kInvalidArgument);
  CHECK(rejected.status().message().find("on_init refused the config: reject: set") !=
        std::string::npos);

  Options no_host = Isolated("test_backend");
  no_host.executor_plugin->host_executable = "/nonexistent/tessera-plugin-host";
  auto missing = Scheduler::Open(no_host);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("/nonexistent/tessera-plugin-host") != std::string::npos);
}

}  // namespace
}  // namespace tessera

#ifdef TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

TEST_CASE("plugin isolation: the sim backend runs isolated in virtual time") {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  PluginOptions plugin;
  plugin.plugin = "sim";
  plugin.isolate = true;
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
  t.clock->AdvanceUs(60'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, jobs[0]).status().state() == v1::SUCCEEDED);
  CHECK(MustGet(s, jobs[2]).status().state() == v1::RUNNING);
  t.clock->AdvanceUs(60'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, jobs[2]).status().state() == v1::SUCCEEDED);
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

TEST_CASE("plugin isolation: when the local backend's process dies, no job runs twice") {
  ScratchDir dir;
  Options options;
  options.clock = RealClock();
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  PluginOptions plugin;
  plugin.plugin = "local";
  plugin.isolate = true;
  plugin.config = "node_name = here\nstate_dir = " + dir.File("local") + "\n";
  options.executor_plugin = plugin;
  auto opened = Scheduler::Open(options);
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
  CHECK(MustGet(s, job).status().losses() == 1);

  REQUIRE(s->Cancel(job).ok());
  CHECK(WaitFor([&] { return IsTerminal(MustGet(s, job).status().state()); }));
}

}  // namespace
}  // namespace tessera
#endif
