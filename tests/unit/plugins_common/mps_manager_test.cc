// The MPS daemons of a node's GPUs and their clients (plugins/common/mps/mps_manager.h) against
// the fake nvidia-cuda-mps-control: MPS limits set per client (the environment a task gets,
// lower-wins against the GPU's ceiling), the 48-client cap, a killed daemon found, restarted and
// its clients handed back as lost, adoption by a new instance, and the errors.
#include <doctest/doctest.h>

#include <filesystem>

#include "mps/mps_manager.h"
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

constexpr char kUuid0[] = "GPU-00000000-1111-2222-3333-444444444444";
constexpr char kUuid1[] = "GPU-11111111-1111-2222-3333-444444444444";

MpsManagerOptions Options(const Scratch& scratch) {
  MpsManagerOptions options;
  options.control_binary = FakeControlPath();
  options.pipe_root = scratch.Path("pipe");
  options.log_root = scratch.Path("log");
  options.start_timeout = std::chrono::seconds(5);
  options.stop_timeout = std::chrono::seconds(5);
  return options;
}

void StartGpus(MpsManager& manager, const std::vector<MpsGpu>& gpus) {
  for (const MpsGpu& gpu : gpus) {
    const plugin::PluginStatus status = manager.StartGpu(gpu);
    REQUIRE_MESSAGE(status.ok(), status.message);
  }
}

MpsGrant AdmitOk(MpsManager& manager, const std::string& client, int gpu, MpsLimits limits) {
  MpsGrant grant;
  const plugin::PluginStatus status = manager.Admit(client, gpu, limits, &grant);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return grant;
}

TEST_CASE("mps manager: MPS limits set per client, the lower of client and GPU ceiling winning") {
  Scratch scratch;
  MpsManagerOptions options = Options(scratch);
  options.defaults = {50, 4096};  // the GPU-wide ceiling.
  MpsManager manager(options);
  StartGpus(manager, {{0, kUuid0}, {1, kUuid1}, {2, ""}});

  // Each daemon got the ceiling, verified by reading it back.
  for (int gpu : {0, 1, 2}) {
    const std::string pipe = scratch.Path("pipe/gpu" + std::to_string(gpu));
    const nlohmann::json state = State(pipe);
    CHECK(state["default_active_thread_percentage"] == 50.0);
    CHECK(state["default_device_pinned_mem_limit"]["0"] == "4096M");
    CHECK(manager.Daemon(gpu)->pid() == PidFileOf(pipe));
  }
  CHECK(State(scratch.Path("pipe/gpu1"))["visible_devices"] == nlohmann::json::array({kUuid1}));
  CHECK(State(scratch.Path("pipe/gpu2"))["visible_devices"] == nlohmann::json::array({"2"}));

  const MpsGrant narrow = AdmitOk(manager, "7-0-0", 0, {25, 8192});
  CHECK(narrow.effective.active_thread_pct == 25);
  CHECK(narrow.effective.pinned_memory_mib == 4096);
  CHECK(narrow.env ==
        std::map<std::string, std::string>{{"CUDA_MPS_PIPE_DIRECTORY", scratch.Path("pipe/gpu0")},
                                           {"CUDA_MPS_LOG_DIRECTORY", scratch.Path("log/gpu0")},
                                           {"CUDA_VISIBLE_DEVICES", kUuid0},
                                           {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"},
                                           {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=4096M"}});

  const MpsGrant wide = AdmitOk(manager, "8-0-0", 0, {75, 2048});
  CHECK(wide.env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") == "50");
  CHECK(wide.env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") == "0=2048M");

  // Another GPU, another daemon's pipe directory; by index only, the client sees device 0.
  const MpsGrant other = AdmitOk(manager, "9-0-0", 2, {10, 0});
  CHECK(other.env.at("CUDA_MPS_PIPE_DIRECTORY") == scratch.Path("pipe/gpu2"));
  CHECK(other.env.at("CUDA_VISIBLE_DEVICES") == "0");
  CHECK(other.env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") == "10");
  CHECK(other.env.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") == "0=4096M");

  // No ceiling: a client without a memory limit gets no limit variable.
  Scratch open;
  MpsManager unlimited(Options(open));
  StartGpus(unlimited, {{0, kUuid0}});
  const MpsGrant free = AdmitOk(unlimited, "1-0-0", 0, {100, 0});
  CHECK(free.env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") == "100");
  CHECK(free.env.count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") == 0);
}

TEST_CASE("mps manager: at most 48 clients per GPU") {
  Scratch scratch;
  MpsManager manager(Options(scratch));
  StartGpus(manager, {{0, kUuid0}, {1, kUuid1}});
  for (int i = 0; i < kMaxClientsPerGpu; ++i) {
    AdmitOk(manager, "task-" + std::to_string(i), 0, {2, 1024});
  }
  CHECK(manager.ClientCount(0) == 48);
  // Admitting a client again (a repeated launch) takes no second place.
  AdmitOk(manager, "task-7", 0, {2, 1024});
  CHECK(manager.ClientCount(0) == 48);

  MpsGrant grant;
  const plugin::PluginStatus full = manager.Admit("task-48", 0, {2, 1024}, &grant);
  CHECK(full.code == TESSERA_RESOURCE_EXHAUSTED);
  CHECK(full.message ==
        "GPU 0 has 48 MPS clients, the most MPS serves on one GPU (48); retry when one ends");
  CHECK(manager.ClientCount(0) == 48);
  // The cap is per GPU.
  AdmitOk(manager, "task-48", 1, {2, 1024});

  manager.Release("task-3");
  CHECK(manager.ClientCount(0) == 47);
  AdmitOk(manager, "task-49", 0, {2, 1024});
  CHECK(manager.ClientCount(0) == 48);
  manager.Release("never-admitted");
  CHECK(manager.ClientCount(0) == 48);
}

TEST_CASE("mps manager: a killed daemon is restarted and its clients are handed back as lost") {
  Scratch scratch;
  MpsManager manager(Options(scratch));
  StartGpus(manager, {{0, kUuid0}, {1, kUuid1}});
  AdmitOk(manager, "a", 0, {50, 0});
  AdmitOk(manager, "b", 0, {50, 0});
  AdmitOk(manager, "c", 1, {50, 0});
  CHECK(manager.CheckHealth().empty());

  const pid_t dead = manager.Daemon(0)->pid();
  Crash(dead);
  MpsGrant grant;
  const plugin::PluginStatus down = manager.Admit("d", 0, {50, 0}, &grant);
  CHECK(down.code == TESSERA_UNAVAILABLE);
  CHECK(down.message.find("GPU 0: no control daemon running") != std::string::npos);
  const plugin::PluginStatus again = manager.StartGpu({0, kUuid0});
  CHECK(again.code == TESSERA_FAILED_PRECONDITION);
  CHECK(again.message.find("CheckHealth() restarts it") != std::string::npos);

  const std::vector<MpsRestart> restarts = manager.CheckHealth();
  REQUIRE(restarts.size() == 1);
  CHECK(restarts[0].gpu == 0);
  CHECK(restarts[0].old_pid == dead);
  CHECK(restarts[0].lost_clients == std::vector<std::string>{"a", "b"});
  CHECK_MESSAGE(restarts[0].restarted.ok(), restarts[0].restarted.message);
  CHECK(manager.Daemon(0)->Alive());
  CHECK(manager.Daemon(0)->pid() != dead);
  CHECK(manager.Daemon(0)->pid() == PidFileOf(scratch.Path("pipe/gpu0")));
  CHECK(manager.ClientCount(0) == 0);
  CHECK(manager.ClientCount(1) == 1);  // the other GPU's daemon and client are untouched.
  CHECK(manager.CheckHealth().empty());
  // The lost clients are free to come back, here or elsewhere.
  AdmitOk(manager, "a", 1, {50, 0});
  AdmitOk(manager, "d", 0, {50, 0});
}

TEST_CASE("mps manager: a restart that fails is reported, refused to clients, and retried") {
  Scratch scratch;
  MpsManagerOptions options = Options(scratch);
  options.start_timeout = std::chrono::milliseconds(800);  // the failing start waits it out.
  MpsManager manager(options);
  StartGpus(manager, {{0, kUuid0}});
  AdmitOk(manager, "a", 0, {50, 0});
  Crash(manager.Daemon(0)->pid());
  {
    ScopedEnv fail("TESSERA_FAKE_MPS_FAIL_START", "simulated: the GPU fell off the bus");
    std::vector<MpsRestart> restarts = manager.CheckHealth();
    REQUIRE(restarts.size() == 1);
    CHECK(restarts[0].lost_clients == std::vector<std::string>{"a"});
    CHECK(restarts[0].restarted.code == TESSERA_UNAVAILABLE);
    CHECK(restarts[0].restarted.message.find("MPS on GPU 0: ") == 0);
    CHECK(restarts[0].restarted.message.find("simulated: the GPU fell off the bus") !=
          std::string::npos);
    MpsGrant grant;
    const plugin::PluginStatus refused = manager.Admit("b", 0, {50, 0}, &grant);
    CHECK(refused.code == TESSERA_UNAVAILABLE);
    CHECK(refused.message.find("simulated: the GPU fell off the bus") != std::string::npos);
  }
  std::vector<MpsRestart> restarts = manager.CheckHealth();
  REQUIRE(restarts.size() == 1);
  CHECK(restarts[0].lost_clients.empty());  // handed back the first time.
  CHECK_MESSAGE(restarts[0].restarted.ok(), restarts[0].restarted.message);
  AdmitOk(manager, "b", 0, {50, 0});
}

TEST_CASE("mps manager: a new instance adopts the daemons the last one left; StopAll ends them") {
  Scratch scratch;
  pid_t left_running = 0;
  {
    MpsManager first(Options(scratch));
    StartGpus(first, {{0, kUuid0}});
    left_running = first.Daemon(0)->pid();
  }  // destroyed without StopAll, as a backend's Shutdown leaves its tasks.
  CHECK(ProcessRuns(left_running));

  MpsManager second(Options(scratch));
  StartGpus(second, {{0, kUuid0}, {1, kUuid1}});
  CHECK(second.Daemon(0)->adopted());
  CHECK(second.Daemon(0)->pid() == left_running);
  CHECK_FALSE(second.Daemon(1)->adopted());
  // Starting a GPU whose daemon runs is a no-op.
  StartGpus(second, {{0, kUuid0}});
  CHECK(second.Daemon(0)->pid() == left_running);

  AdmitOk(second, "a", 0, {50, 0});
  const pid_t other = second.Daemon(1)->pid();
  const plugin::PluginStatus stopped = second.StopAll();
  CHECK_MESSAGE(stopped.ok(), stopped.message);
  CHECK_FALSE(ProcessRuns(left_running));
  CHECK_FALSE(ProcessRuns(other));
  CHECK(second.ClientCount(0) == 0);
  CHECK_FALSE(std::filesystem::exists(scratch.Path("pipe/gpu0/") + kPidFileName));
  CHECK_FALSE(std::filesystem::exists(scratch.Path("pipe/gpu1/") + kPidFileName));
}

TEST_CASE("mps manager: errors name the GPU, the client or the binary") {
  Scratch scratch;
  MpsManagerOptions options = Options(scratch);
  options.control_binary = "tessera-no-such-mps-control";
  MpsManager missing(options);
  plugin::PluginStatus status = missing.StartGpu({0, kUuid0});
  CHECK(status.code == TESSERA_NOT_FOUND);
  CHECK(status.message.find("MPS on GPU 0: MPS control binary tessera-no-such-mps-control") == 0);
  MpsGrant grant;
  status = missing.Admit("a", 0, {50, 0}, &grant);
  CHECK(status.code == TESSERA_UNAVAILABLE);
  CHECK(status.message.find("tessera-no-such-mps-control") != std::string::npos);

  MpsManager manager(Options(scratch));
  StartGpus(manager, {{0, kUuid0}, {1, kUuid1}});
  status = manager.Admit("a", 5, {50, 0}, &grant);
  CHECK(status.code == TESSERA_NOT_FOUND);
  CHECK(status.message == "GPU 5 does not serve MPS shares on this node");
  status = manager.Admit("a", 0, {0, 0}, &grant);
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "mps.active_thread_pct: must be 1..100, got 0");
  status = manager.Admit("", 0, {50, 0}, &grant);
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  AdmitOk(manager, "a", 0, {50, 0});
  status = manager.Admit("a", 1, {50, 0}, &grant);
  CHECK(status.code == TESSERA_ALREADY_EXISTS);
  CHECK(status.message == "MPS client a is already on GPU 0, not GPU 1");
  CHECK(manager.ClientCount(1) == 0);

  MpsManagerOptions rootless = Options(scratch);
  rootless.pipe_root.clear();
  CHECK(MpsManager(rootless).StartGpu({0, kUuid0}).code == TESSERA_INVALID_ARGUMENT);
  CHECK(manager.StartGpu({-1, ""}).code == TESSERA_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tessera::mps
