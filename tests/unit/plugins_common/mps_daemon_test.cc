// One MPS control daemon per GPU (plugins/common/mps/mps_daemon.h) against the fake
// nvidia-cuda-mps-control: started with its own pipe and log directories, its defaults set and
// read back, adopted or refused when one already runs, found dead after a kill, stopped; and
// each documented error provoked.
#include <doctest/doctest.h>

#include <filesystem>

#include "mps/mps_daemon.h"
#include "unit/plugins_common/fake_mps_fixture.h"

namespace tessera::mps {
namespace {

using fake::Crash;
using fake::FakeControlPath;
using fake::PidFileOf;
using fake::ProcessRuns;
using fake::ScopedEnv;
using fake::Scratch;
using fake::State;

constexpr char kUuid[] = "GPU-5e1f0c2a-7a34-4b1e-9c55-0123456789ab";

MpsDaemonOptions Options(const Scratch& scratch, const std::string& name = "gpu0") {
  MpsDaemonOptions options;
  options.control_binary = FakeControlPath();
  options.device = kUuid;
  options.pipe_dir = scratch.Path(name + "/pipe");
  options.log_dir = scratch.Path(name + "/log");
  options.start_timeout = std::chrono::seconds(5);
  options.stop_timeout = std::chrono::seconds(5);
  return options;
}

TEST_CASE("mps daemon: starts in its own pipe and log directories and stops with quit") {
  Scratch scratch;
  MpsDaemon daemon(Options(scratch));
  CHECK_FALSE(daemon.Alive());
  const plugin::PluginStatus started = daemon.Start();
  REQUIRE_MESSAGE(started.ok(), started.message);
  CHECK(daemon.Alive());
  CHECK_FALSE(daemon.adopted());
  const std::string pipe = scratch.Path("gpu0/pipe");
  CHECK(daemon.pid() == PidFileOf(pipe));
  CHECK(ProcessRuns(daemon.pid()));
  CHECK(std::filesystem::exists(scratch.Path("gpu0/log/control.log")));

  // The daemon saw the GPU by UUID and was told its (default) ceiling, then asked for it back.
  const nlohmann::json state = State(pipe);
  CHECK(state["pid"] == daemon.pid());
  CHECK(state["visible_devices"] == nlohmann::json::array({kUuid}));
  const std::vector<std::string> commands = state["commands"];
  CHECK(std::find(commands.begin(), commands.end(), "set_default_active_thread_percentage 100") !=
        commands.end());
  CHECK(commands.back() == "get_default_active_thread_percentage");

  const pid_t pid = daemon.pid();
  const plugin::PluginStatus stopped = daemon.Stop();
  CHECK_MESSAGE(stopped.ok(), stopped.message);
  CHECK_FALSE(daemon.Alive());
  CHECK_FALSE(ProcessRuns(pid));
  CHECK_FALSE(std::filesystem::exists(pipe + "/" + kPidFileName));
  CHECK(State(pipe)["commands"].back() == "quit");
  // Stopping a stopped daemon is fine.
  CHECK(daemon.Stop().ok());
}

TEST_CASE("mps daemon: narrower defaults are set on the daemon and verified") {
  Scratch scratch;
  MpsDaemonOptions options = Options(scratch);
  options.defaults = {40, 20480};
  MpsDaemon daemon(options);
  const plugin::PluginStatus started = daemon.Start();
  REQUIRE_MESSAGE(started.ok(), started.message);
  const nlohmann::json state = State(options.pipe_dir);
  CHECK(state["default_active_thread_percentage"] == 40.0);
  CHECK(state["default_device_pinned_mem_limit"]["0"] == "20480M");
  const std::vector<std::string> commands = state["commands"];
  CHECK(std::find(commands.begin(), commands.end(),
                  std::string("set_default_device_pinned_mem_limit ") + kUuid + " 20480M") !=
        commands.end());

  // With only an index, the daemon's one device is ordinal 0.
  MpsDaemonOptions by_index = Options(scratch, "gpu3");
  by_index.device = "3";
  by_index.defaults = {100, 1024};
  MpsDaemon indexed(by_index);
  REQUIRE(indexed.Start().ok());
  const nlohmann::json indexed_state = State(by_index.pipe_dir);
  CHECK(indexed_state["visible_devices"] == nlohmann::json::array({"3"}));
  CHECK(indexed_state["default_device_pinned_mem_limit"]["0"] == "1024M");
}

TEST_CASE("mps daemon: a daemon already on the pipe directory is adopted, or refused") {
  Scratch scratch;
  MpsDaemon first(Options(scratch));
  REQUIRE(first.Start().ok());

  MpsDaemonOptions refusing = Options(scratch);
  refusing.adopt_running = false;
  MpsDaemon second(refusing);
  const plugin::PluginStatus refused = second.Start();
  CHECK(refused.code == TESSERA_ALREADY_EXISTS);
  CHECK(refused.message.find("(pid " + std::to_string(first.pid()) + ") already answers on " +
                             refusing.pipe_dir) != std::string::npos);
  CHECK_FALSE(second.Alive());  // not its daemon: Stop() leaves it alone.
  CHECK(second.Stop().ok());
  CHECK(first.Alive());

  MpsDaemonOptions adopting = Options(scratch);
  adopting.defaults = {60, 0};
  MpsDaemon adopter(adopting);
  const plugin::PluginStatus adopted = adopter.Start();
  REQUIRE_MESSAGE(adopted.ok(), adopted.message);
  CHECK(adopter.adopted());
  CHECK(adopter.pid() == first.pid());
  CHECK(adopter.Alive());
  // Its defaults are its own now.
  CHECK(State(adopting.pipe_dir)["default_active_thread_percentage"] == 60.0);
}

TEST_CASE("mps daemon: a killed daemon is no longer alive; commands then fail with its words") {
  Scratch scratch;
  MpsDaemon daemon(Options(scratch));
  REQUIRE(daemon.Start().ok());
  std::string answer;
  REQUIRE(daemon.Command("start_server -uid 1000", &answer).ok());
  REQUIRE(daemon.Command("get_server_list", &answer).ok());
  CHECK(answer == std::to_string(daemon.pid() + 1) + "\n");

  Crash(daemon.pid());
  CHECK_FALSE(daemon.Alive());
  const plugin::PluginStatus status = daemon.Command("get_server_list", &answer);
  CHECK(status.code == TESSERA_UNAVAILABLE);
  CHECK(status.message.find("Cannot find MPS control daemon process") != std::string::npos);
  CHECK(answer.empty());
  CHECK(daemon.Stop().ok());  // nothing left to stop.

  // The directory the dead daemon left is taken over by the next start.
  MpsDaemon restarted(Options(scratch));
  const plugin::PluginStatus started = restarted.Start();
  REQUIRE_MESSAGE(started.ok(), started.message);
  CHECK_FALSE(restarted.adopted());
  CHECK(restarted.Alive());
}

TEST_CASE("mps daemon: no control binary is an error naming the binary") {
  Scratch scratch;
  MpsDaemonOptions options = Options(scratch);
  options.control_binary = "tessera-no-such-mps-control";
  MpsDaemon by_name(options);
  plugin::PluginStatus status = by_name.Start();
  CHECK(status.code == TESSERA_NOT_FOUND);
  CHECK(status.message.find("MPS control binary tessera-no-such-mps-control: not found in PATH") ==
        0);
  std::string answer;
  CHECK(by_name.Command("get_server_list", &answer).code == TESSERA_NOT_FOUND);

  options.control_binary = scratch.Path("bin/nvidia-cuda-mps-control");
  MpsDaemon by_path(options);
  status = by_path.Start();
  CHECK(status.code == TESSERA_NOT_FOUND);
  CHECK(status.message ==
        "MPS control binary " + options.control_binary + ": no such executable file");
  CHECK_FALSE(std::filesystem::exists(options.pipe_dir));  // nothing made before the check.
}

TEST_CASE("mps daemon: one that cannot start is reported with its log") {
  Scratch scratch;
  ScopedEnv fail("TESSERA_FAKE_MPS_FAIL_START", "simulated failure: no usable GPU");
  MpsDaemonOptions options = Options(scratch);
  options.start_timeout = std::chrono::milliseconds(600);
  MpsDaemon daemon(options);
  const plugin::PluginStatus status = daemon.Start();
  CHECK(status.code == TESSERA_UNAVAILABLE);
  CHECK(status.message.find("did not come up within 600 ms") != std::string::npos);
  CHECK(status.message.find("Cannot find MPS control daemon process") != std::string::npos);
  CHECK(status.message.find(options.log_dir + "/control.log: ") != std::string::npos);
  CHECK(status.message.find("simulated failure: no usable GPU") != std::string::npos);
  CHECK_FALSE(daemon.Alive());
}

TEST_CASE("mps daemon: a default the daemon refuses fails the start and stops the daemon") {
  Scratch scratch;
  {
    ScopedEnv refuse("TESSERA_FAKE_MPS_REFUSE", "set_default_device_pinned_mem_limit");
    MpsDaemonOptions options = Options(scratch);
    options.defaults = {50, 8192};
    MpsDaemon daemon(options);
    const plugin::PluginStatus status = daemon.Start();
    CHECK(status.code == TESSERA_UNAVAILABLE);
    CHECK(status.message ==
          "MPS control daemon on " + options.pipe_dir +
              " refused 'set_default_device_pinned_mem_limit " + kUuid +
              " 8192M' (it answered 'Refused: set_default_device_pinned_mem_limit " + kUuid +
              " 8192M'; get_default_device_pinned_mem_limit says '0')");
    CHECK_FALSE(daemon.Alive());
    CHECK_FALSE(ProcessRuns(State(options.pipe_dir)["pid"].get<pid_t>()));
  }
  ScopedEnv refuse("TESSERA_FAKE_MPS_REFUSE", "set_default_active_thread_percentage");
  MpsDaemonOptions options = Options(scratch, "gpu1");
  options.defaults = {50, 0};
  MpsDaemon daemon(options);
  const plugin::PluginStatus status = daemon.Start();
  CHECK(status.code == TESSERA_UNAVAILABLE);
  CHECK(status.message.find("refused 'set_default_active_thread_percentage 50'") !=
        std::string::npos);
  CHECK(status.message.find("get_default_active_thread_percentage says '100.0'") !=
        std::string::npos);
  CHECK_FALSE(daemon.Alive());
}

TEST_CASE("mps daemon: one that ignores quit is killed, and Stop says so") {
  Scratch scratch;
  ScopedEnv refuse("TESSERA_FAKE_MPS_REFUSE", "quit");
  MpsDaemonOptions options = Options(scratch);
  options.stop_timeout = std::chrono::milliseconds(300);
  MpsDaemon daemon(options);
  REQUIRE(daemon.Start().ok());
  const pid_t pid = daemon.pid();
  const plugin::PluginStatus status = daemon.Stop();
  CHECK(status.code == TESSERA_UNAVAILABLE);
  CHECK(status.message == "MPS control daemon " + std::to_string(pid) + " on " + options.pipe_dir +
                              " did not exit within 300 ms of quit; killed");
  CHECK_FALSE(daemon.Alive());
  CHECK_FALSE(ProcessRuns(pid));
}

TEST_CASE("mps daemon: bad options are refused before anything runs") {
  Scratch scratch;
  MpsDaemonOptions options = Options(scratch);
  options.device.clear();
  CHECK(MpsDaemon(options).Start().code == TESSERA_INVALID_ARGUMENT);

  options = Options(scratch);
  options.defaults.active_thread_pct = 0;
  plugin::PluginStatus status = MpsDaemon(options).Start();
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message.find("active_thread_pct") != std::string::npos);

  options = Options(scratch);
  options.pipe_dir = scratch.Path(std::string(100, 'p'));
  status = MpsDaemon(options).Start();
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message.find("over the 107-byte limit of a Unix socket path") != std::string::npos);

  MpsDaemon daemon(Options(scratch));
  std::string answer;
  CHECK(daemon.Command("get_server_list\nquit", &answer).code == TESSERA_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tessera::mps
