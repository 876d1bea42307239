// The fake nvidia-cuda-mps-control, run as a backend runs the real one: what it shares with the
// real tool (daemon and client modes, the pipe and log directories, the PID file, a second
// daemon refused, a dead one's directory taken over, the commands and their refusals) is
// pinned here, so that the MPS code's tests stand on a known stand-in.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "unit/plugins_common/fake_mps_fixture.h"

namespace tessera::mps {
namespace {

using fake::Crash;
using fake::PidFileOf;
using fake::ProcessRuns;
using fake::RunFake;
using fake::Scratch;
using fake::State;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Starts a daemon with `-d` and waits until a client reaches it.
void StartFakeDaemon(const std::string& pipe, const std::string& log,
                     const std::vector<std::string>& env = {}) {
  const ControlResult started = RunFake({"-d"}, pipe, log, "", env);
  REQUIRE_MESSAGE(started.exit_status == 0, started.err);
  for (int i = 0; i < 250; ++i) {
    if (RunFake({}, pipe, log, "get_server_list\n").exit_status == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("the fake daemon on " << pipe << " never answered");
}

TEST_CASE("fake mps: a client with no daemon says so and exits non-zero") {
  Scratch scratch;
  const ControlResult result =
      RunFake({}, scratch.Path("pipe"), scratch.Path("log"), "get_server_list\n");
  CHECK(result.exit_status == 1);
  CHECK(result.err == "Cannot find MPS control daemon process\n");
  CHECK(result.out.empty());
}

TEST_CASE("fake mps: -d daemonizes into its own pipe and log directories; quit ends it") {
  Scratch scratch;
  const std::string pipe = scratch.Path("pipe");
  const std::string log = scratch.Path("log");
  StartFakeDaemon(pipe, log);

  const pid_t pid = PidFileOf(pipe);
  CHECK(ProcessRuns(pid));
  CHECK(std::filesystem::is_socket(pipe + "/control"));
  const std::string control_log = ReadFile(log + "/control.log");
  CHECK(control_log.find("Control") != std::string::npos);
  CHECK(control_log.find("Starting control daemon using socket " + pipe + "/control") !=
        std::string::npos);
  CHECK(control_log.find("Cmd:get_server_list") != std::string::npos);

  const ControlResult quit = RunFake({}, pipe, log, "quit\n");
  CHECK(quit.exit_status == 0);
  for (int i = 0; i < 250 && ProcessRuns(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CHECK_FALSE(ProcessRuns(pid));
  // As the real daemon: the PID file goes, the socket stays behind.
  CHECK_FALSE(std::filesystem::exists(pipe + "/" + kPidFileName));
  CHECK(std::filesystem::exists(pipe + "/control"));
  CHECK(RunFake({}, pipe, log, "get_server_list\n").exit_status == 1);
}

TEST_CASE("fake mps: a second daemon on the same pipe directory is refused") {
  Scratch scratch;
  const std::string pipe = scratch.Path("pipe");
  const std::string log = scratch.Path("log");
  StartFakeDaemon(pipe, log);
  const pid_t first = PidFileOf(pipe);

  const ControlResult second = RunFake({"-d"}, pipe, log);
  CHECK(second.exit_status == 1);
  CHECK(second.err == "An instance of this daemon is already running\n");
  CHECK(PidFileOf(pipe) == first);
  CHECK(ProcessRuns(first));

  // Another pipe directory is another daemon.
  StartFakeDaemon(scratch.Path("pipe2"), scratch.Path("log2"));
  CHECK(PidFileOf(scratch.Path("pipe2")) != first);
}

TEST_CASE("fake mps: a killed daemon leaves its files, and a new one takes the directory over") {
  Scratch scratch;
  const std::string pipe = scratch.Path("pipe");
  const std::string log = scratch.Path("log");
  StartFakeDaemon(pipe, log);
  const pid_t dead = PidFileOf(pipe);
  Crash(dead);
  CHECK(PidFileOf(pipe) == dead);  // stale, as the real one's after kill -9.
  CHECK(RunFake({}, pipe, log, "get_server_list\n").exit_status == 1);

  StartFakeDaemon(pipe, log);
  CHECK(PidFileOf(pipe) != dead);
  CHECK(ProcessRuns(PidFileOf(pipe)));
}

TEST_CASE("fake mps: commands answer as the tool does, and refusals leave the state as it was") {
  Scratch scratch;
  const std::string pipe = scratch.Path("pipe");
  const std::string log = scratch.Path("log");
  StartFakeDaemon(pipe, log, {"CUDA_VISIBLE_DEVICES=GPU-1111aaaa-0000-0000-0000-000000000000"});

  auto ask = [&](const std::string& line) {
    const ControlResult result = RunFake({}, pipe, log, line + "\n");
    REQUIRE(result.exit_status == 0);
    return result.out;
  };
  CHECK(ask("get_default_active_thread_percentage") == "100.0\n");
  CHECK(ask("set_default_active_thread_percentage 25") == "25.0\n");
  CHECK(ask("get_default_active_thread_percentage") == "25.0\n");
  CHECK(ask("set_default_active_thread_percentage 0") == "Invalid percentage: 0\n");
  CHECK(ask("set_default_active_thread_percentage 101") == "Invalid percentage: 101\n");
  CHECK(ask("set_default_active_thread_percentage half") == "Invalid percentage: half\n");
  CHECK(ask("get_default_active_thread_percentage") == "25.0\n");

  // Devices by ordinal or UUID (prefix) among the daemon's CUDA_VISIBLE_DEVICES.
  CHECK(ask("get_default_device_pinned_mem_limit 0") == "0\n");
  CHECK(ask("set_default_device_pinned_mem_limit 0 8192M").empty());
  CHECK(ask("get_default_device_pinned_mem_limit GPU-1111aaaa") == "8192M\n");
  CHECK(ask("set_default_device_pinned_mem_limit 1 2G") == "Invalid device: 1\n");
  CHECK(ask("set_default_device_pinned_mem_limit GPU-2222 2G") == "Invalid device: GPU-2222\n");
  CHECK(ask("set_default_device_pinned_mem_limit 0 8192") == "Invalid memory limit value: 8192\n");
  CHECK(ask("get_default_device_pinned_mem_limit 0") == "8192M\n");

  // Servers take the defaults when they start; per-server commands need a server's PID.
  CHECK(ask("get_server_list").empty());
  CHECK(ask("set_active_thread_percentage 12345 50") == "Server 12345 not found\n");
  CHECK(ask("start_server -uid 1000").empty());
  const std::string server = ask("get_server_list");
  REQUIRE_FALSE(server.empty());
  const std::string server_pid = server.substr(0, server.size() - 1);
  CHECK(ask("get_server_status " + server_pid) == "ACTIVE\n");
  CHECK(ask("get_active_thread_percentage " + server_pid) == "25.0\n");
  CHECK(ask("set_active_thread_percentage " + server_pid + " 50") == "50.0\n");
  CHECK(ask("set_device_pinned_mem_limit " + server_pid + " 0 2G").empty());
  CHECK(ask("get_device_pinned_mem_limit " + server_pid + " 0") == "2G\n");
  CHECK(ask("get_client_list " + server_pid).empty());

  CHECK(ask("set_default_active_thread_percentage") ==
        "Usage: set_default_active_thread_percentage <percentage>\n");
  CHECK(ask("make_coffee now") == "Unknown command: make_coffee now\n");

  const nlohmann::json state = State(pipe);
  CHECK(state["default_active_thread_percentage"] == 25.0);
  CHECK(state["default_device_pinned_mem_limit"]["0"] == "8192M");
  REQUIRE(state["servers"].size() == 1);
  CHECK(state["servers"][0]["uid"] == 1000);
  CHECK(state["servers"][0]["active_thread_percentage"] == 50.0);
  CHECK(state["servers"][0]["device_pinned_mem_limit"]["0"] == "2G");
  CHECK(state["visible_devices"][0] == "GPU-1111aaaa-0000-0000-0000-000000000000");
  CHECK(state["commands"].back() == "make_coffee now");

  // Several commands on one stdin, answered in order.
  const ControlResult batch =
      RunFake({}, pipe, log, "get_default_active_thread_percentage\nget_server_list\nquit\n");
  CHECK(batch.exit_status == 0);
  CHECK(batch.out == "25.0\n" + server);
}

TEST_CASE("fake mps: a daemon that cannot start logs why and exits") {
  Scratch scratch;
  const std::string pipe = scratch.Path("pipe");
  const std::string log = scratch.Path("log");
  const ControlResult started =
      RunFake({"-d"}, pipe, log, "", {"TESSERA_FAKE_MPS_FAIL_START=no GPU is visible"});
  CHECK(started.exit_status == 0);  // -d returns once it has forked.
  for (int i = 0; i < 250; ++i) {
    if (ReadFile(log + "/control.log").find("no GPU is visible") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(ReadFile(log + "/control.log").find("no GPU is visible") != std::string::npos);
  CHECK(RunFake({}, pipe, log, "get_server_list\n").exit_status == 1);
}

}  // namespace
}  // namespace tessera::mps
