// The local backend on NVIDIA GPUs: its shared object driven through the ABI by the SDK's
// FakeHost, with the fake libnvidia-ml.so.1 in place of the driver (config key nvml_library).
// What it reports (models, UUIDs, MIG layouts adopted, which layouts the scheduler may change,
// time slices), MIG layouts carried out and refused, the MIG UUID a task sees, a restart that
// finds the same instances, telemetry with XID errors, a node without a driver, and the
// conformance kit.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.h"
#include "tessera/plugin/conformance.h"
#include "tessera/plugin/fake_host.h"
#include "unit/plugins_common/fake_mps_fixture.h"
#include "unit/plugins_common/fake_nvml_fixture.h"
#include "unit/plugins_sim_local/plugin_paths.h"

namespace tessera {
namespace {

using nvml::fake::FakeGpus;
using plugin::FakeHost;
using plugin::PluginStatus;
using json = nlohmann::json;

constexpr const char* kNode = "gpu-node";

// One H100 in MIG mode laid out as 7 x 1g.10gb, one A100-80GB without MIG.
const std::string kGpus =
    R"({"gpus": [)" + nvml::fake::H100InSevenSmall() + R"(, {"model": "A100-80GB"}]})";

std::string Config(const testing::TempDir& dir, const std::string& extra = "") {
  return "node_name = " + std::string(kNode) + "\nstate_dir = " + dir.path().string() +
         "\npoll_interval_ms = 10\nnvml_library = " + nvml::fake::FakePath() +
         "\ncuda_runtime_library = /nonexistent\n" + extra;
}

std::unique_ptr<FakeHost> Start(const std::string& config) {
  std::unique_ptr<FakeHost> host;
  PluginStatus status = FakeHost::Open(testing::PluginPath("local"), &host);
  REQUIRE_MESSAGE(status.ok(), status.message);
  status = host->Init(config);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return host;
}

v1::NodeSpec InventoryOf(FakeHost& host) {
  v1::Inventory inventory;
  REQUIRE(host.Inventory(&inventory).ok());
  REQUIRE(inventory.nodes_size() == 1);
  return inventory.nodes(0);
}

std::string Layout(const v1::GpuDevice& gpu) {
  std::string text;
  for (const v1::MigInstance& m : gpu.mig_instances()) {
    text += (text.empty() ? "" : " ") + m.profile() + "@" + std::to_string(m.start());
  }
  return text;
}

v1::PartitionLayoutRequest MigRequest(int gpu, std::vector<std::pair<std::string, int>> layout) {
  v1::PartitionLayoutRequest request;
  request.set_node(kNode);
  request.set_gpu(gpu);
  request.mutable_layout()->set_sharing(v1::GPU_SHARING_MIG);
  for (const auto& [profile, start] : layout) {
    v1::MigInstance* m = request.mutable_layout()->add_mig_instances();
    m->set_profile(profile);
    m->set_start(start);
  }
  return request;
}

const std::vector<std::pair<std::string, int>> kWithThreeSlices = {
    {"1g.10gb", 0}, {"1g.10gb", 1}, {"1g.10gb", 2}, {"1g.10gb", 3}, {"3g.40gb", 4}};

// Runs `script` as task `job` with `setup` applied to the launch; returns what it printed.
std::string RunTask(FakeHost& host, const testing::TempDir& dir, uint64_t job,
                    const std::string& script, const std::function<void(v1::LaunchTask&)>& setup) {
  v1::LaunchTask launch;
  launch.mutable_ref()->set_job(job);
  launch.mutable_ref()->set_attempt(1);
  launch.set_node(kNode);
  launch.set_cpu_milli(100);
  launch.set_memory_mib(16);
  const std::string out = (dir.path() / ("out-" + std::to_string(job))).string();
  launch.add_command("/bin/sh");
  launch.add_command("-c");
  launch.add_command(script + " > " + out);
  setup(launch);
  REQUIRE(host.Launch(launch).ok());
  const auto exited = host.WaitForEvent(
      [&](const v1::BackendEvent& e) {
        return e.ref().job() == job && (e.kind() == v1::BackendEvent::TASK_EXITED ||
                                        e.kind() == v1::BackendEvent::LAUNCH_REJECTED);
      },
      std::chrono::seconds(10));
  REQUIRE(exited.has_value());
  if (exited->kind() == v1::BackendEvent::LAUNCH_REJECTED) return "rejected: " + exited->message();
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE(
    "local on NVML: the inventory names the GPUs, adopts MIG layouts and says who may change "
    "them") {
  FakeGpus gpus(kGpus);
  testing::TempDir dir("local-nvidia");
  std::unique_ptr<FakeHost> host = Start(Config(dir, "mig_managed = 0\ntime_slice_gpus = 1\n"));
  CHECK(host->Declares(TESSERA_PLUGIN_KIND_PARTITIONER));
  const v1::NodeSpec node = InventoryOf(*host);
  REQUIRE(node.gpus_size() == 2);
  const v1::GpuDevice& h100 = node.gpus(0);
  CHECK(h100.model() == "H100-80GB");
  CHECK(h100.uuid().rfind("GPU-", 0) == 0);
  CHECK(h100.sharing() == v1::GPU_SHARING_MIG);
  CHECK(h100.mig_managed());
  CHECK(Layout(h100) == "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 1g.10gb@6");
  REQUIRE(h100.instances_size() == 7);
  CHECK(h100.instances(6).uuid().rfind("MIG-", 0) == 0);
  const v1::GpuDevice& a100 = node.gpus(1);
  CHECK(a100.model() == "A100-80GB");
  CHECK(a100.sharing() == v1::GPU_SHARING_TIME_SLICE);
  CHECK(a100.replicas() == 4);

  SUBCASE("without mig_managed the layout is the operator's") {
    std::unique_ptr<FakeHost> fixed = Start(Config(dir));
    CHECK_FALSE(InventoryOf(*fixed).gpus(0).mig_managed());
    v1::PartitionLayoutResult result;
    REQUIRE(fixed->ApplyPartitionLayout(MigRequest(0, kWithThreeSlices), &result).ok());
    CHECK(result.error() == "GPU 0's MIG layout is fixed by the operator (not in mig_managed)");
    CHECK(result.applied().mig_instances_size() == 7);
  }
}

TEST_CASE("local on NVML: a MIG layout is carried out and the task sees its instance's MIG UUID") {
  FakeGpus gpus(kGpus);
  testing::TempDir dir("local-nvidia");
  std::unique_ptr<FakeHost> host = Start(Config(dir, "mig_managed = all\n"));
  v1::PartitionLayoutResult result;
  REQUIRE(host->ApplyPartitionLayout(MigRequest(0, kWithThreeSlices), &result).ok());
  REQUIRE(result.error() == "");
  REQUIRE(result.instances_size() == 5);
  const std::string uuid = result.instances(4).uuid();
  CHECK(uuid.rfind("MIG-", 0) == 0);
  // The inventory says so too, and the driver has a 3-slice GPU instance (profile ID 9).
  CHECK(Layout(InventoryOf(*host).gpus(0)) == "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
  int three_slice = 0;
  const json driver_state = json::parse(gpus.Read());
  for (const json& gi : driver_state["gpus"][0]["gpu_instances"]) {
    three_slice += gi["profile_id"].get<int>() == 9 ? 1 : 0;
  }
  CHECK(three_slice == 1);

  auto mig_share = [](const std::string& profile, int start, const std::string& host_uuid) {
    return [=](v1::LaunchTask& launch) {
      launch.add_gpus(0);
      launch.mutable_partition()->set_sharing(v1::GPU_SHARING_MIG);
      launch.mutable_partition()->set_mig_profile(profile);
      launch.mutable_partition()->set_mig_start(start);
      if (!host_uuid.empty()) launch.mutable_mig()->set_uuid(host_uuid);
    };
  };
  SUBCASE("the UUID the host passes") {
    CHECK(RunTask(*host, dir, 1, "echo $CUDA_VISIBLE_DEVICES", mig_share("3g.40gb", 4, uuid)) ==
          uuid + "\n");
  }
  SUBCASE("a host of ABI 1.0 passes none: the backend finds it by placement") {
    CHECK(RunTask(*host, dir, 2, "echo $CUDA_VISIBLE_DEVICES", mig_share("3g.40gb", 4, "")) ==
          uuid + "\n");
  }
  SUBCASE("an instance the GPU does not have is rejected, naming it") {
    CHECK(RunTask(*host, dir, 3, "true", mig_share("1g.10gb", 5, "")) ==
          "rejected: partition: GPU 0 of node 'gpu-node' has no usable MIG instance 1g.10gb at "
          "memory slice 5");
  }
  SUBCASE("whole GPUs are named by UUID") {
    const std::string a100 = InventoryOf(*host).gpus(1).uuid();
    CHECK(RunTask(*host, dir, 4, "echo $CUDA_VISIBLE_DEVICES",
                  [](v1::LaunchTask& launch) { launch.add_gpus(1); }) == a100 + "\n");
  }
  SUBCASE("a new instance after a restart finds the same instances and UUIDs") {
    host.reset();
    std::unique_ptr<FakeHost> second = Start(Config(dir, "mig_managed = all\n"));
    const v1::GpuDevice gpu = InventoryOf(*second).gpus(0);
    CHECK(Layout(gpu) == "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
    REQUIRE(gpu.instances_size() == 5);
    CHECK(gpu.instances(4).uuid() == uuid);
    // Asking for the layout it has changes nothing.
    const std::string driver = gpus.Read();
    v1::PartitionLayoutResult again;
    REQUIRE(second->ApplyPartitionLayout(MigRequest(0, kWithThreeSlices), &again).ok());
    CHECK(again.error() == "");
    CHECK(gpus.Read() == driver);
  }
}

TEST_CASE("local on NVML: a layout that fails midway is rolled back and the result says so") {
  FakeGpus gpus(kGpus);
  json state = json::parse(gpus.Read());
  state["faults"] =
      json::array({{{"call", "nvmlGpuInstanceCreateComputeInstance"}, {"error", 999}}});
  gpus.Write(state.dump());
  testing::TempDir dir("local-nvidia");
  std::unique_ptr<FakeHost> host = Start(Config(dir, "mig_managed = all\n"));
  v1::PartitionLayoutResult result;
  REQUIRE(host->ApplyPartitionLayout(MigRequest(0, kWithThreeSlices), &result).ok());
  CHECK(result.error() ==
        "creating the compute instance of 3g.40gb at memory slice 4: Unknown Error; rolled back");
  CHECK(Layout(InventoryOf(*host).gpus(0)) ==
        "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 1g.10gb@6");
  CHECK(result.instances_size() == 7);

  SUBCASE("a host of ABI 1.0 gets the failure as the call's error") {
    v1::MigLayoutRequest request;
    request.set_node(kNode);
    request.set_gpu(1);
    request.add_layout()->set_profile("7g.80gb");
    const PluginStatus status = host->ApplyMigLayout(request);
    CHECK(status.code == TESSERA_FAILED_PRECONDITION);
    CHECK(status.message == "GPU 1 is not in MIG mode (mig_enable turns it on at start)");
    request.set_gpu(0);
    request.clear_layout();
    for (int start = 0; start < 7; ++start) {
      v1::MigInstance* m = request.add_layout();
      m->set_profile("1g.10gb");
      m->set_start(start);
    }
    CHECK(host->ApplyMigLayout(request).ok());  // the layout it has: nothing to do.
  }
  SUBCASE("a GPU not in MIG mode is refused, and its mode left alone") {
    v1::PartitionLayoutResult refused;
    REQUIRE(host->ApplyPartitionLayout(MigRequest(1, {{"7g.80gb", 0}}), &refused).ok());
    CHECK(refused.error() == "GPU 1 is not in MIG mode (mig_enable turns it on at start)");
    CHECK(json::parse(gpus.Read())["gpus"][1].value("mig_current", 0) == 0);
  }
}

TEST_CASE("local on NVML: mig_enable turns MIG on where the GPU allows it, else says it waits") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-40GB"}, {"model": "A100-40GB", "processes": 1}]})");
  testing::TempDir dir("local-nvidia");
  std::unique_ptr<FakeHost> host = Start(Config(dir, "mig_enable = all\n"));
  const v1::NodeSpec node = InventoryOf(*host);
  CHECK(node.gpus(0).sharing() == v1::GPU_SHARING_MIG);
  CHECK(node.gpus(1).sharing() == v1::GPU_SHARING_DEFAULT);  // busy: pending until a reset.
  bool warned = false;
  for (const auto& entry : host->logs()) {
    warned |= entry.message.find("mig_enable: GPU 1 (A100-40GB): MIG mode is pending") !=
              std::string::npos;
  }
  CHECK(warned);
}

TEST_CASE("local on NVML: telemetry reports readings and each XID error once") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-80GB", "temperature_c": 71}]})");
  testing::TempDir dir("local-nvidia");
  std::unique_ptr<FakeHost> host = Start(Config(dir));
  v1::TelemetryBatch first;
  REQUIRE(host->Telemetry(&first).ok());
  REQUIRE(first.readings_size() == 1);
  CHECK(first.readings(0).node() == kNode);
  CHECK(first.readings(0).temperature_c() == 71);
  CHECK(first.readings(0).xid_errors_size() == 0);
  json state = json::parse(gpus.Read());
  state["gpus"][0]["xid_events"] = json::array({79});
  gpus.Write(state.dump());
  v1::TelemetryBatch second;
  REQUIRE(host->Telemetry(&second).ok());
  REQUIRE(second.readings(0).xid_errors_size() == 1);
  CHECK(second.readings(0).xid_errors(0) == 79);
  v1::TelemetryBatch third;
  REQUIRE(host->Telemetry(&third).ok());
  CHECK(third.readings(0).xid_errors_size() == 0);
}

TEST_CASE("local on NVML: no driver is a CPU-only node that cannot be partitioned") {
  ::unsetenv("TESSERA_FAKE_NVML_STATE");  // the fake then answers DRIVER_NOT_LOADED.
  testing::TempDir dir("local-nvidia");
  std::unique_ptr<FakeHost> host = Start(Config(dir));
  CHECK(InventoryOf(*host).gpus_size() == 0);
  bool said = false;
  for (const auto& entry : host->logs()) {
    said |= entry.message.find("NVML did not start: Driver Not Loaded") != std::string::npos;
  }
  CHECK(said);
  v1::PartitionLayoutResult result;
  REQUIRE(host->ApplyPartitionLayout(MigRequest(0, {{"7g.80gb", 0}}), &result).ok());
  CHECK(result.error() == "node 'gpu-node' has no NVML: its GPUs cannot be re-partitioned");
}

TEST_CASE("local on NVML: GPU lists in the config are checked, naming the key") {
  testing::TempDir dir("local-nvidia");
  std::unique_ptr<FakeHost> host;
  REQUIRE(FakeHost::Open(testing::PluginPath("local"), &host).ok());
  PluginStatus status = host->Init(Config(dir, "mig_managed = first\n"));
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message ==
        "mig_managed: 'first' is not a GPU index or range, got 'first' (expected none, all, or "
        "GPU indices like 0,2-3)");
  REQUIRE(FakeHost::Open(testing::PluginPath("local"), &host).ok());
  status = host->Init(Config(dir, "time_slice_replicas = 1\n"));
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message.find("time_slice_replicas: must be an integer from 2 to 1000") == 0);
}

TEST_CASE("local on NVML: an MPS GPU has its control daemon, and each client its limits") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-80GB"}, {"model": "A100-80GB"}]})");
  testing::TempDir dir("local-nvidia");
  mps::fake::Scratch pipes;  // short paths for the daemons' sockets; kills them at the end.
  const std::string config =
      Config(dir, "mps_gpus = 1\nmps_control = " + mps::fake::FakeControlPath() +
                      "\nmps_pipe_dir = " + pipes.Path("pipe") +
                      "\nmps_log_dir = " + pipes.Path("log") + "\n");
  std::unique_ptr<FakeHost> host = Start(config);
  const v1::NodeSpec node = InventoryOf(*host);
  CHECK(node.gpus(0).sharing() == v1::GPU_SHARING_DEFAULT);
  CHECK(node.gpus(1).sharing() == v1::GPU_SHARING_MPS);
  const std::string pipe_dir = pipes.Path("pipe") + "/gpu1";
  const pid_t daemon = mps::fake::PidFileOf(pipe_dir);
  REQUIRE(mps::fake::ProcessRuns(daemon));

  auto share = [](int thread_pct, int64_t memory_mib) {
    return [=](v1::LaunchTask& launch) {
      launch.add_gpus(1);
      launch.mutable_partition()->set_sharing(v1::GPU_SHARING_MPS);
      launch.mutable_mps()->set_active_thread_pct(thread_pct);
      launch.mutable_mps()->set_pinned_memory_mib(memory_mib);
    };
  };
  const std::string script =
      "echo $CUDA_MPS_PIPE_DIRECTORY $CUDA_VISIBLE_DEVICES $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE "
      "$CUDA_MPS_PINNED_DEVICE_MEM_LIMIT";
  CHECK(RunTask(*host, dir, 1, script, share(30, 2048)) ==
        pipe_dir + " " + node.gpus(1).uuid() + " 30 0=2048M\n");
  CHECK(RunTask(*host, dir, 2, script, share(70, 8192)) ==
        pipe_dir + " " + node.gpus(1).uuid() + " 70 0=8192M\n");

  SUBCASE("a crashed control daemon is restarted and its tasks are lost") {
    v1::LaunchTask launch;
    launch.mutable_ref()->set_job(3);
    launch.mutable_ref()->set_attempt(1);
    launch.set_node(kNode);
    launch.set_cpu_milli(100);
    launch.set_memory_mib(16);
    for (const char* arg : {"/bin/sh", "-c", "exec sleep 60"}) launch.add_command(arg);
    share(50, 1024)(launch);
    REQUIRE(host->Launch(launch).ok());
    REQUIRE(
        host->WaitForEvent(v1::BackendEvent::TASK_STARTED, launch.ref(), std::chrono::seconds(10)));
    mps::fake::Crash(daemon);
    const auto lost =
        host->WaitForEvent(v1::BackendEvent::TASK_LOST, launch.ref(), std::chrono::seconds(15));
    REQUIRE(lost.has_value());
    CHECK(lost->message() == "the MPS control daemon of GPU 1 died");
    const pid_t again = mps::fake::PidFileOf(pipe_dir);
    CHECK(again != daemon);
    CHECK(mps::fake::ProcessRuns(again));
    // The killed task ends without a TASK_EXITED of its own: the host has it as lost.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (const v1::BackendEvent& event : host->events()) {
      CHECK_FALSE((event.kind() == v1::BackendEvent::TASK_EXITED && event.ref().job() == 3));
    }
  }
  SUBCASE("a restarted backend takes its running MPS tasks back as clients") {
    v1::LaunchTask launch;
    launch.mutable_ref()->set_job(4);
    launch.mutable_ref()->set_attempt(1);
    launch.set_node(kNode);
    launch.set_cpu_milli(100);
    launch.set_memory_mib(16);
    for (const char* arg : {"/bin/sh", "-c", "exec sleep 60"}) launch.add_command(arg);
    share(50, 1024)(launch);
    REQUIRE(host->Launch(launch).ok());
    REQUIRE(
        host->WaitForEvent(v1::BackendEvent::TASK_STARTED, launch.ref(), std::chrono::seconds(10)));
    host.reset();  // the task and its daemon keep running.
    host = Start(config);
    v1::Inventory inventory;  // as a host asks after a restart (it starts the monitor).
    REQUIRE(host->Inventory(&inventory).ok());
    // Only a task the new instance counts as the daemon's client is lost with it.
    mps::fake::Crash(mps::fake::PidFileOf(pipe_dir));
    const auto lost =
        host->WaitForEvent(v1::BackendEvent::TASK_LOST, launch.ref(), std::chrono::seconds(15));
    REQUIRE(lost.has_value());
    CHECK(lost->message() == "the MPS control daemon of GPU 1 died");
  }
  SUBCASE("no control binary: the GPU is offered whole, and the log says why") {
    host.reset();
    std::unique_ptr<FakeHost> plain =
        Start(Config(dir, "mps_gpus = 1\nmps_control = /nonexistent/nvidia-cuda-mps-control\n"));
    CHECK(InventoryOf(*plain).gpus(1).sharing() == v1::GPU_SHARING_DEFAULT);
    bool said = false;
    for (const auto& entry : plain->logs()) {
      said |= entry.message.find(
                  "mps_gpus: GPU 1 offered whole: its MPS control daemon did not "
                  "start: ") != std::string::npos;
    }
    CHECK(said);
  }
}

TEST_CASE("local on NVML: the conformance kit passes with MIG GPUs") {
  FakeGpus gpus(kGpus);
  testing::TempDir dir("local-nvidia");
  for (const plugin::CheckResult& result :
       plugin::RunConformance(testing::PluginPath("local"), Config(dir, "mig_managed = all\n"))) {
    CAPTURE(result.name);
    CHECK_MESSAGE(!plugin::FailedItself(result), result.detail);
  }
}

}  // namespace
}  // namespace tessera
