// The local backend (plugins/local) loaded from its shared object and driven through the ABI by
// the SDK's FakeHost: real child processes (exit codes, stop with grace, SIGKILL after it, logs,
// environment), where logs go (task_logs), the task journal and its exit status files (no file
// created per task but the log), adoption of running tasks by a new instance after a restart
// (from the journal, and from the layout before it), GPU discovery
// through a fake CUDA runtime and through the real one (no GPU here: a CPU-only node), config
// errors, and the conformance kit.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/temp_dir.h"
#include "tessera/plugin/conformance.h"
#include "tessera/plugin/fake_host.h"
#include "unit/plugins_sim_local/plugin_paths.h"

namespace tessera {
namespace {

using plugin::FakeHost;
using plugin::PluginStatus;
using std::chrono::milliseconds;

constexpr milliseconds kEventTimeout{10'000};
constexpr const char* kNode = "test-node";

// A config for a state directory; `extra` lines are appended.
std::string Config(const testing::TempDir& dir, const std::string& extra = "") {
  return "node_name = " + std::string(kNode) + "\nstate_dir = " + dir.path().string() +
         "\npoll_interval_ms = 10\n" + extra;
}

std::unique_ptr<FakeHost> OpenLocal() {
  std::unique_ptr<FakeHost> host;
  PluginStatus status = FakeHost::Open(testing::PluginPath("local"), &host);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return host;
}

std::unique_ptr<FakeHost> StartLocal(const std::string& config) {
  std::unique_ptr<FakeHost> host = OpenLocal();
  PluginStatus status = host->Init(config);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return host;
}

v1::TaskRef Ref(uint64_t job, int task = 0) {
  v1::TaskRef ref;
  ref.set_job(job);
  ref.set_attempt(1);
  ref.set_task(task);
  return ref;
}

v1::LaunchTask Shell(uint64_t job, const std::string& script) {
  v1::LaunchTask launch;
  *launch.mutable_ref() = Ref(job);
  launch.set_node(kNode);
  launch.set_cpu_milli(100);
  launch.set_memory_mib(16);
  launch.add_command("/bin/sh");
  launch.add_command("-c");
  launch.add_command(script);
  return launch;
}

v1::StopTask StopOf(uint64_t job, int64_t grace_ms) {
  v1::StopTask stop;
  *stop.mutable_ref() = Ref(job);
  stop.set_grace_ms(grace_ms);
  return stop;
}

// The exit code reported for `job`; fails the test when none comes in time.
int ExitCodeOf(const FakeHost& host, uint64_t job) {
  std::optional<v1::BackendEvent> exited =
      host.WaitForEvent(v1::BackendEvent::TASK_EXITED, Ref(job), kEventTimeout);
  REQUIRE_MESSAGE(exited.has_value(), "no TASK_EXITED for job " << job);
  return exited->exit_code();
}

void AwaitStarted(const FakeHost& host, uint64_t job) {
  REQUIRE(host.WaitForEvent(v1::BackendEvent::TASK_STARTED, Ref(job), kEventTimeout));
}

std::string LogPath(const testing::TempDir& dir, uint64_t job) {
  return dir.File("logs/" + std::to_string(job) + "-1-0.log");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Waits until `path` contains `needle` (a task saying it is ready).
bool AwaitText(const std::string& path, const std::string& needle) {
  const auto give_up = std::chrono::steady_clock::now() + kEventTimeout;
  while (std::chrono::steady_clock::now() < give_up) {
    if (ReadFile(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

// Every regular file under the state directory, relative to it, sorted.
std::vector<std::string> StateFiles(const testing::TempDir& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (entry.is_regular_file()) {
      files.push_back(std::filesystem::relative(entry.path(), dir.path()).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Journal(const testing::TempDir& dir) { return ReadFile(dir.File("tasks.journal")); }

std::vector<uint64_t> LiveJobs(FakeHost& host) {
  v1::LiveTasks live;
  REQUIRE(host.Reconcile(&live).ok());
  std::vector<uint64_t> jobs;
  for (const v1::TaskRef& ref : live.tasks()) jobs.push_back(ref.job());
  return jobs;
}

TEST_CASE("local: a task's exit code is reported, its log written, its record ended") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir));
  REQUIRE(host->Launch(Shell(1, "echo to-stdout; echo to-stderr >&2; exit 3")).ok());
  CHECK(ExitCodeOf(*host, 1) == 3);
  const std::vector<v1::BackendEvent> events = host->events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].kind() == v1::BackendEvent::TASK_STARTED);
  CHECK(events[0].time_us() == host->NowUs());  // the host's clock, not the system's.
  CHECK(events[1].kind() == v1::BackendEvent::TASK_EXITED);
  const std::string log = ReadFile(LogPath(dir, 1));
  CHECK(log.find("to-stdout") != std::string::npos);
  CHECK(log.find("to-stderr") != std::string::npos);
  CHECK(LiveJobs(*host).empty());
  // Its start and end in the journal, its status in a reusable slot file: only the log is its.
  CHECK(StateFiles(dir) ==
        std::vector<std::string>{"exit-status/0", "logs/1-1-0.log", "tasks.journal"});
  CHECK(Journal(dir).find("end 1 1 0\n") != std::string::npos);
  v1::BackendEvents polled;
  REQUIRE(host->PollEvents(&polled).ok());  // everything came through emit_event.
  CHECK(polled.events_size() == 0);
  CHECK(host->violations().empty());
}

TEST_CASE("local: a stopped task gets SIGTERM and its exit is reported") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir));
  // Stopped once the command runs: a stop in the instant before its exec can be lost (the
  // local backend's README, Tasks).
  REQUIRE(host->Launch(Shell(2, "echo ready; exec sleep 30")).ok());
  AwaitStarted(*host, 2);
  REQUIRE(AwaitText(LogPath(dir, 2), "ready"));
  CHECK(LiveJobs(*host) == std::vector<uint64_t>{2});
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(host->Stop(StopOf(2, 5'000)).ok());
  CHECK(ExitCodeOf(*host, 2) == 143);                                     // 128 + SIGTERM
  CHECK(std::chrono::steady_clock::now() - start < milliseconds(4'000));  // not the grace.
  CHECK(LiveJobs(*host).empty());
  CHECK(host->Stop(StopOf(2, 5'000)).ok());  // gone: still fine.
}

TEST_CASE("local: a task ignoring SIGTERM is killed when its grace runs out") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir));
  REQUIRE(host->Launch(Shell(3, "trap '' TERM; echo ready; sleep 30; echo survived")).ok());
  REQUIRE(AwaitText(LogPath(dir, 3), "ready"));
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(host->Stop(StopOf(3, 300)).ok());
  CHECK(ExitCodeOf(*host, 3) == 137);  // 128 + SIGKILL
  CHECK(std::chrono::steady_clock::now() - start >= milliseconds(300));
  CHECK(ReadFile(LogPath(dir, 3)).find("survived") == std::string::npos);
}

// Grace 0 is what the host sends for a job without checkpoint_grace_s: kill now, no notice. A
// backend that sent SIGTERM first, or waited a default grace, would let the trap run or keep
// the task alive past the check.
TEST_CASE("local: a stop with grace 0 kills at once, without SIGTERM first") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir));
  REQUIRE(host->Launch(Shell(4,
                             "trap 'echo got-sigterm' TERM; echo ready; "
                             "while true; do sleep 1; done"))
              .ok());
  REQUIRE(AwaitText(LogPath(dir, 4), "ready"));
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(host->Stop(StopOf(4, 0)).ok());
  CHECK(ExitCodeOf(*host, 4) == 137);  // 128 + SIGKILL
  CHECK(std::chrono::steady_clock::now() - start < milliseconds(1'000));
  CHECK(ReadFile(LogPath(dir, 4)).find("got-sigterm") == std::string::npos);
}

TEST_CASE("local: a task sees its GPUs in CUDA_VISIBLE_DEVICES and its env") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(
      Config(dir, "nvml_library = none\ncuda_runtime_library = " + testing::FakeCudartPath() +
                      "\ncuda_driver_library = " + testing::FakeCudartPath()));
  const std::string script =
      "echo CVD=[$CUDA_VISIBLE_DEVICES] MINE=[$MY_VAR] JOB=[$TESSERA_JOB] "
      "MPS=[$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE] LIMIT=[$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT]";

  SUBCASE("whole GPUs") {
    v1::LaunchTask launch = Shell(4, script);
    launch.add_gpus(0);
    launch.add_gpus(1);
    (*launch.mutable_env())["MY_VAR"] = "hello world";
    REQUIRE(host->Launch(launch).ok());
    CHECK(ExitCodeOf(*host, 4) == 0);
    CHECK(ReadFile(LogPath(dir, 4)) == "CVD=[0,1] MINE=[hello world] JOB=[4] MPS=[] LIMIT=[]\n");
  }
  SUBCASE("an MPS share") {
    v1::LaunchTask launch = Shell(5, script);
    launch.add_gpus(1);
    launch.set_gpu_milli(300);
    launch.set_gpu_memory_mib(2048);
    launch.mutable_partition()->set_sharing(v1::GPU_SHARING_MPS);
    REQUIRE(host->Launch(launch).ok());
    CHECK(ExitCodeOf(*host, 5) == 0);
    CHECK(ReadFile(LogPath(dir, 5)) == "CVD=[1] MINE=[] JOB=[5] MPS=[30] LIMIT=[0=2048M]\n");
  }
  SUBCASE("no GPU hides them all") {
    REQUIRE(host->Launch(Shell(6, script)).ok());
    CHECK(ExitCodeOf(*host, 6) == 0);
    CHECK(ReadFile(LogPath(dir, 6)).rfind("CVD=[] ", 0) == 0);
  }
}

TEST_CASE("local: after a restart a new instance finds the running task and can stop it") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> first = StartLocal(Config(dir));
  REQUIRE(first->Launch(Shell(7, "echo ready; exec sleep 30")).ok());
  AwaitStarted(*first, 7);
  REQUIRE(AwaitText(LogPath(dir, 7), "ready"));
  first.reset();  // shuts the instance down and unloads the library; the task keeps running.
  REQUIRE(Journal(dir).find("start 7 1 0 ") != std::string::npos);

  std::unique_ptr<FakeHost> second = StartLocal(Config(dir));
  CHECK(LiveJobs(*second) == std::vector<uint64_t>{7});
  REQUIRE(second->Stop(StopOf(7, 5'000)).ok());
  // This test process is still the task's parent, so the new instance can wait for it and knows
  // the real status; a host that restarted as a new process would see -1 (unknown).
  CHECK(ExitCodeOf(*second, 7) == 143);
  CHECK(LiveJobs(*second).empty());
  second.reset();
  CHECK(LiveJobs(*StartLocal(Config(dir))).empty());  // the end was journaled.
}

// A host process that launches tasks and dies without shutting down: the tasks are orphaned, so
// the next instance cannot wait for them. It watches /proc, and reads how each ended from the
// file its wrapper wrote: a task that succeeded while adopted is reported as succeeded.
TEST_CASE("local: a task adopted from a host process that died is reported with its real status") {
  testing::TempDir dir("local-plugin");
  const std::string go = dir.File("go");
  const std::string wait_for_go = "while [ ! -e " + go + " ]; do sleep 0.02; done; ";
  const pid_t crashed_host = ::fork();
  REQUIRE(crashed_host >= 0);
  if (crashed_host == 0) {
    std::unique_ptr<FakeHost> host;
    if (!FakeHost::Open(testing::PluginPath("local"), &host).ok()) ::_exit(2);
    if (!host->Init(Config(dir)).ok()) ::_exit(3);
    const std::pair<uint64_t, std::string> tasks[] = {{10, wait_for_go + "exit 0"},
                                                      {11, wait_for_go + "exit 3"},
                                                      {12, "exec sleep 30"},
                                                      {13, "exec sleep 30"}};
    for (const auto& [job, script] : tasks) {
      if (!host->Launch(Shell(job, script)).ok()) ::_exit(4);
      if (!host->WaitForEvent(v1::BackendEvent::TASK_STARTED, Ref(job), kEventTimeout)) {
        ::_exit(5);
      }
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(crashed_host, &status, 0) == crashed_host);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  std::unique_ptr<FakeHost> host = StartLocal(Config(dir));
  CHECK(LiveJobs(*host) == std::vector<uint64_t>{10, 11, 12, 13});
  std::ofstream(go).put('\n');
  CHECK(ExitCodeOf(*host, 10) == 0);
  CHECK(ExitCodeOf(*host, 11) == 3);
  REQUIRE(host->Stop(StopOf(12, 5'000)).ok());
  CHECK(ExitCodeOf(*host, 12) == 143);  // the command's own end, on SIGTERM.
  // SIGKILL ends the wrapper with the command, before it can write: unknown.
  REQUIRE(host->Stop(StopOf(13, 0)).ok());
  CHECK(ExitCodeOf(*host, 13) == -1);
  CHECK(LiveJobs(*host).empty());
  host.reset();
  CHECK(LiveJobs(*StartLocal(Config(dir))).empty());  // every end journaled.
}

TEST_CASE("local: a record whose pid now names another process is dropped") {
  testing::TempDir dir("local-plugin");
  // This test process: alive, but not started at tick 1.
  std::ofstream(dir.File("tasks.journal"))
      << "start 8 1 0 " << ::getpid() << " " << ::getpid() << " 1 0 0 /dev/null\n";
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir));
  CHECK(LiveJobs(*host).empty());
  CHECK(Journal(dir).find("end 8 1 0\n") != std::string::npos);
}

// The tasks of a host process that died, adopted by a new instance that launches tasks of its
// own meanwhile: those must not take the adopted tasks' exit status slots, where a reset or a
// status written at the wrong moment would be read as the adopted task's. All five run at once
// and end together, and the files show a slot for each.
TEST_CASE("local: new tasks leave the exit status slots of adopted tasks alone") {
  testing::TempDir dir("local-plugin");
  const std::string go = dir.File("go");
  const pid_t crashed_host = ::fork();
  REQUIRE(crashed_host >= 0);
  if (crashed_host == 0) {
    std::unique_ptr<FakeHost> host;
    if (!FakeHost::Open(testing::PluginPath("local"), &host).ok()) ::_exit(2);
    if (!host->Init(Config(dir)).ok()) ::_exit(3);
    for (uint64_t job : {10, 11}) {
      if (!host->Launch(Shell(job, "while [ ! -e " + go + " ]; do sleep 0.02; done; exit " +
                                       std::to_string(job - 5)))
               .ok() ||
          !host->WaitForEvent(v1::BackendEvent::TASK_STARTED, Ref(job), kEventTimeout)) {
        ::_exit(4);
      }
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(crashed_host, &status, 0) == crashed_host);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  std::unique_ptr<FakeHost> host = StartLocal(Config(dir));
  REQUIRE(LiveJobs(*host) == std::vector<uint64_t>{10, 11});
  for (uint64_t job : {20, 21, 22}) {
    REQUIRE(
        host->Launch(Shell(job, "while [ ! -e " + go + " ]; do sleep 0.02; done; exit 1")).ok());
    AwaitStarted(*host, job);
  }
  std::ofstream(go).put('\n');        // all five end together.
  CHECK(ExitCodeOf(*host, 10) == 5);  // not our children: read from their slots.
  CHECK(ExitCodeOf(*host, 11) == 6);
  for (uint64_t job : {20, 21, 22}) CHECK(ExitCodeOf(*host, job) == 1);
  CHECK(StateFiles(dir) ==
        std::vector<std::string>{"exit-status/0", "exit-status/1", "exit-status/2", "exit-status/3",
                                 "exit-status/4", "go", "logs/10-1-0.log", "logs/11-1-0.log",
                                 "logs/20-1-0.log", "logs/21-1-0.log", "logs/22-1-0.log",
                                 "tasks.journal"});
}

TEST_CASE("local: task_logs = none leaves no file per task in the state directory") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir, "task_logs = none"));
  // 40 tasks, at most 4 at a time: the exit status slots are as many as ran at once.
  for (uint64_t batch = 0; batch < 10; ++batch) {
    for (uint64_t job = batch * 4 + 1; job <= batch * 4 + 4; ++job) {
      REQUIRE(host->Launch(Shell(job, "echo nowhere; exit 2")).ok());
    }
    for (uint64_t job = batch * 4 + 1; job <= batch * 4 + 4; ++job) {
      CHECK(ExitCodeOf(*host, job) == 2);
    }
  }
  CHECK(StateFiles(dir) == std::vector<std::string>{"exit-status/0", "exit-status/1",
                                                    "exit-status/2", "exit-status/3",
                                                    "tasks.journal"});
  CHECK_FALSE(std::filesystem::exists(dir.path() / "logs"));
}

TEST_CASE("local: task_logs = shared appends every task's output to one file") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir, "task_logs = shared"));
  for (uint64_t job : {1, 2, 3}) {
    REQUIRE(host->Launch(Shell(job, "echo from-$TESSERA_JOB")).ok());
    CHECK(ExitCodeOf(*host, job) == 0);
  }
  CHECK(ReadFile(dir.File("logs/tasks.log")) == "from-1\nfrom-2\nfrom-3\n");
  CHECK(StateFiles(dir) ==
        std::vector<std::string>{"exit-status/0", "logs/tasks.log", "tasks.journal"});
}

// 300 short tasks beside a long one: without a rewrite the journal would hold 601 lines.
TEST_CASE("local: the journal is rewritten as tasks end, and still finds the live ones") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir, "task_logs = none"));
  REQUIRE(host->Launch(Shell(1, "exec sleep 30")).ok());
  AwaitStarted(*host, 1);
  for (uint64_t batch = 0; batch < 30; ++batch) {
    for (uint64_t job = 100 + batch * 10; job < 110 + batch * 10; ++job) {
      REQUIRE(host->Launch(Shell(job, "true")).ok());
    }
    for (uint64_t job = 100 + batch * 10; job < 110 + batch * 10; ++job) {
      CHECK(ExitCodeOf(*host, job) == 0);
    }
  }
  const std::string journal = Journal(dir);
  CHECK(std::count(journal.begin(), journal.end(), '\n') < 300);
  CHECK(journal.find("start 1 1 0 ") != std::string::npos);
  host.reset();
  std::unique_ptr<FakeHost> second = StartLocal(Config(dir, "task_logs = none"));
  CHECK(LiveJobs(*second) == std::vector<uint64_t>{1});
  REQUIRE(second->Stop(StopOf(1, 0)).ok());
  CHECK(ExitCodeOf(*second, 1) == 137);
}

// A host that died in the middle of a journal write leaves a line without its newline. The next
// instance ignores it, and the lines it appends are not glued to it.
TEST_CASE("local: a torn last journal line is ignored, and what follows is read") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> first = StartLocal(Config(dir));
  REQUIRE(first->Launch(Shell(7, "exec sleep 30")).ok());
  AwaitStarted(*first, 7);
  first.reset();
  REQUIRE(std::filesystem::exists(dir.File("tasks.journal")));
  std::ofstream(dir.File("tasks.journal"), std::ios::app) << "start 99 1 0 12";

  std::unique_ptr<FakeHost> second = StartLocal(Config(dir));
  CHECK(LiveJobs(*second) == std::vector<uint64_t>{7});
  bool warned = false;
  for (const FakeHost::LogEntry& entry : second->logs()) {
    warned |= entry.level == TESSERA_LOG_WARN &&
              entry.message.find("unfinished last line 'start 99 1 0 12'") != std::string::npos;
  }
  CHECK(warned);
  REQUIRE(second->Launch(Shell(8, "exec sleep 30")).ok());
  AwaitStarted(*second, 8);
  second.reset();

  std::unique_ptr<FakeHost> third = StartLocal(Config(dir));
  CHECK(LiveJobs(*third) == std::vector<uint64_t>{7, 8});
  for (uint64_t job : {7, 8}) {
    REQUIRE(third->Stop(StopOf(job, 0)).ok());
    CHECK(ExitCodeOf(*third, job) == 137);
  }
}

// A task started by a version of this backend from before the journal (a record in tasks/, its
// wrapper writing the status to tasks/<stem>.exit) is adopted after an upgrade, and reported
// with the status that old wrapper wrote. The stand-in for it is a process this test orphans.
TEST_CASE("local: a task recorded in the layout before the journal is adopted, status and all") {
  testing::TempDir dir("local-plugin");
  std::filesystem::create_directories(dir.path() / "tasks");
  const std::string go = dir.File("go");
  const std::string exit_file = dir.File("tasks/9-1-0.exit");
  const std::string pid_file = dir.File("pid");
  const pid_t parent = ::fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    // The old wrapper's last steps, in a process of its own group that this test is not the
    // parent of once `parent` has exited.
    const std::string script = "echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " +
                               pid_file + "; while [ ! -e " + go +
                               " ]; do sleep 0.02; done; echo 4 > " + exit_file + "; exit 4";
    if (::fork() == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::_exit(0);
  }
  REQUIRE(::waitpid(parent, nullptr, 0) == parent);
  REQUIRE(AwaitText(pid_file, "\n"));
  const pid_t pid = static_cast<pid_t>(std::stol(ReadFile(pid_file)));
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::vector<std::string> f;
  for (std::string field; fields >> field;) f.push_back(field);
  REQUIRE(f.size() > 19);
  std::ofstream(dir.File("tasks/9-1-0.task"))
      << "job=9\nattempt=1\ntask=0\npid=" << pid << "\npgid=" << pid << "\nstart_ticks=" << f[19]
      << "\nstarted_us=0\nlog=/dev/null\n";

  std::unique_ptr<FakeHost> host = StartLocal(Config(dir));
  CHECK(LiveJobs(*host) == std::vector<uint64_t>{9});
  CHECK_FALSE(std::filesystem::exists(dir.File("tasks/9-1-0.task")));  // journaled instead.
  std::ofstream(go).put('\n');
  CHECK(ExitCodeOf(*host, 9) == 4);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "tasks"));
}

TEST_CASE("local: bad launches are rejected alone, for good, naming the field") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(dir, "cuda_runtime_library = /nonexistent"));
  // Each bad launch answers Ok (the backend stays healthy) and reports LAUNCH_REJECTED.
  auto rejection = [&host](v1::LaunchTask launch) -> std::string {
    const PluginStatus status = host->Launch(launch);
    REQUIRE_MESSAGE(status.ok(), status.message);
    auto event = host->WaitForEvent(v1::BackendEvent::LAUNCH_REJECTED, launch.ref(), kEventTimeout);
    REQUIRE(event);
    CHECK_FALSE(event->retryable());
    return event->message();
  };
  v1::LaunchTask launch = Shell(9, "true");
  launch.clear_command();
  CHECK(rejection(launch) == "command: required for the local backend");

  launch = Shell(10, "true");
  launch.clear_command();
  launch.add_command("/nonexistent/program");
  CHECK(rejection(launch) ==
        "command[0]: cannot execute '/nonexistent/program': No such file or directory");

  launch = Shell(11, "true");
  launch.set_node("elsewhere");
  CHECK(rejection(launch) == "node: this backend runs node 'test-node', not 'elsewhere'");

  launch = Shell(12, "true");
  launch.add_gpus(0);  // a CPU-only node.
  CHECK(rejection(launch) == "gpus[0]: node 'test-node' has no GPU 0");

  launch = Shell(13, "true");
  (*launch.mutable_env())["A=B"] = "x";
  CHECK(rejection(launch) == "env: invalid variable name 'A=B'");
  CHECK(LiveJobs(*host).empty());
}

TEST_CASE("local: a bad config is INVALID_ARGUMENT naming the key") {
  testing::TempDir dir("local-plugin");
  struct Case {
    std::string config;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"cpu_milli = lots", "cpu_milli: must be a positive integer, got 'lots'"},
      {"memory_mib = -5", "memory_mib: must be a positive integer, got '-5'"},
      {"poll_interval_ms = 0", "poll_interval_ms: must be a positive integer, got '0'"},
      {"node_name =", "node_name: must not be empty"},
      {"# fine\n\nnodename = x", "config line 3: unknown key 'nodename'"},
      {"just words", "config line 1: expected key = value, got 'just words'"},
      {"task_logs = sometimes", "task_logs: must be per_task, shared or none, got 'sometimes'"},
      {"task_logs =", "task_logs: must not be empty"},
      {"state_dir = /proc/no/such/place", "state_dir: cannot create /proc/no/such/place/logs"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.config);
    std::unique_ptr<FakeHost> host = OpenLocal();
    PluginStatus status = host->Init(c.config);
    CHECK(status.code == TESSERA_INVALID_ARGUMENT);
    CHECK_MESSAGE(status.message.rfind(c.message, 0) == 0, status.message);
  }
}

TEST_CASE("local: a fake CUDA runtime with two GPUs gives a node with two GPUs") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host = StartLocal(Config(
      dir, "cpu_milli = 16000\nmemory_mib = 65536\nnvml_library = none\ncuda_runtime_library = " +
               testing::FakeCudartPath() + "\ncuda_driver_library = " + testing::FakeCudartPath()));
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  REQUIRE(inventory.nodes_size() == 1);
  const v1::NodeSpec& node = inventory.nodes(0);
  CHECK(node.name() == kNode);
  CHECK(node.cpu_milli() == 16000);
  CHECK(node.memory_mib() == 65536);
  REQUIRE(node.gpus_size() == 2);
  for (int i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(node.gpus(i).index() == i);
    CHECK(node.gpus(i).model() == "H100-80GB");
    CHECK(node.gpus(i).memory_mib() == 81559);
    CHECK(node.gpus(i).nvlink_domain() == 0);  // peers of each other.
    CHECK(node.gpus(i).healthy());
    CHECK(node.gpus(i).sharing() == v1::GPU_SHARING_DEFAULT);
  }
  CHECK(node.gpus(0).uuid() == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  CHECK(node.gpus(1).uuid() == "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
}

TEST_CASE("local: the real CUDA probe on a machine without a GPU gives a CPU-only node") {
  testing::TempDir dir("local-plugin");
  std::unique_ptr<FakeHost> host =
      StartLocal("state_dir = " + dir.path().string());  // everything else from the machine.
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  REQUIRE(inventory.nodes_size() == 1);
  const v1::NodeSpec& node = inventory.nodes(0);
  char hostname[256] = {};
  ::gethostname(hostname, sizeof(hostname) - 1);
  CHECK(node.name() == hostname);
  CHECK(node.cpu_milli() == ::sysconf(_SC_NPROCESSORS_ONLN) * 1000);
  CHECK(node.memory_mib() > 0);
  if (!std::filesystem::exists("/dev/nvidiactl")) CHECK(node.gpus_size() == 0);
  bool logged = false;
  for (const FakeHost::LogEntry& entry : host->logs()) {
    logged |= entry.level == TESSERA_LOG_INFO && entry.message.rfind("local: node", 0) == 0;
  }
  CHECK(logged);
}

TEST_CASE("local: passes the SDK's conformance kit") {
  testing::TempDir dir("local-plugin");
  for (const plugin::CheckResult& result :
       plugin::RunConformance(testing::PluginPath("local"), Config(dir))) {
    CAPTURE(result.name);
    CHECK_MESSAGE(!plugin::FailedItself(result), result.detail);  // not blocked ones: one cause.
  }
}

TEST_CASE("local: the conformance kit runs the task command it is given") {
  testing::TempDir dir("local-plugin");
  plugin::ConformanceOptions options;
  options.task_command = {"/bin/sh", "-c", "echo kit-task-ran; exec sleep 300"};
  for (const plugin::CheckResult& result :
       plugin::RunConformance(testing::PluginPath("local"), Config(dir), options)) {
    CAPTURE(result.name);
    CHECK_MESSAGE(!plugin::FailedItself(result), result.detail);
  }
  int ran = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "logs")) {
    ran += ReadFile(entry.path().string()).find("kit-task-ran") != std::string::npos;
  }
  CHECK(ran > 0);
}

}  // namespace
}  // namespace tessera
