// The sim backend (plugins/sim) loaded from its shared object and driven through the ABI by the
// SDK's FakeHost in virtual time: config and its errors, task lifetimes, stops with grace, the
// order of polled events, next_event_us, reconcile, MIG layouts, and the conformance kit.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/plugin/conformance.h"
#include "tessera/plugin/fake_host.h"
#include "unit/plugins_sim_local/plugin_paths.h"

namespace tessera {
namespace {

using plugin::FakeHost;
using plugin::PluginStatus;

constexpr int64_t kSecond = 1'000'000;

std::unique_ptr<FakeHost> OpenSim() {
  std::unique_ptr<FakeHost> host;
  PluginStatus status = FakeHost::Open(testing::PluginPath("sim"), &host);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return host;
}

std::unique_ptr<FakeHost> StartSim(const std::string& config = "") {
  std::unique_ptr<FakeHost> host = OpenSim();
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

v1::LaunchTask Launch(uint64_t job, int64_t duration_ms, int exit_code = 0,
                      const std::string& node = "sim-0") {
  v1::LaunchTask launch;
  *launch.mutable_ref() = Ref(job);
  launch.set_node(node);
  launch.add_gpus(0);
  launch.set_gpu_milli(1000);
  launch.mutable_simulation()->set_duration_ms(duration_ms);
  launch.mutable_simulation()->set_exit_code(exit_code);
  return launch;
}

v1::StopTask StopOf(uint64_t job, int64_t grace_ms) {
  v1::StopTask stop;
  *stop.mutable_ref() = Ref(job);
  stop.set_grace_ms(grace_ms);
  return stop;
}

v1::BackendEvents Poll(FakeHost& host) {
  v1::BackendEvents events;
  PluginStatus status = host.PollEvents(&events);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return events;
}

// "S<job>@<seconds after start>" or "X<job>=<code>@<seconds>", to compare event lists at a glance.
std::vector<std::string> Describe(const v1::BackendEvents& events) {
  std::vector<std::string> out;
  for (const v1::BackendEvent& e : events.events()) {
    const std::string at =
        "@" + std::to_string((e.time_us() - FakeHost::kDefaultStartUs) / 1000) + "ms";
    out.push_back(e.kind() == v1::BackendEvent::TASK_STARTED
                      ? "S" + std::to_string(e.ref().job()) + at
                      : "X" + std::to_string(e.ref().job()) + "=" + std::to_string(e.exit_code()) +
                            at);
  }
  return out;
}

std::vector<uint64_t> LiveJobs(FakeHost& host) {
  v1::LiveTasks live;
  REQUIRE(host.Reconcile(&live).ok());
  std::vector<uint64_t> jobs;
  for (const v1::TaskRef& ref : live.tasks()) jobs.push_back(ref.job());
  return jobs;
}

TEST_CASE("sim: an empty config is two nodes of eight A100-80GB") {
  std::unique_ptr<FakeHost> host = StartSim();
  CHECK(host->name() == "sim");
  CHECK(host->Declares(TESSERA_PLUGIN_KIND_EXECUTOR));
  CHECK(host->Declares(TESSERA_PLUGIN_KIND_PARTITIONER));
  CHECK(host->Declares(TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER));  // ABI 1.1: it provisions.
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  REQUIRE(inventory.nodes_size() == 2);
  CHECK(inventory.nodes(0).name() == "sim-0");
  CHECK(inventory.nodes(1).name() == "sim-1");
  for (const v1::NodeSpec& node : inventory.nodes()) {
    CHECK(node.cpu_milli() > 0);
    CHECK(node.memory_mib() > 0);
    REQUIRE(node.gpus_size() == 8);
    for (const v1::GpuDevice& gpu : node.gpus()) {
      CHECK(gpu.model() == "A100-80GB");
      CHECK(gpu.memory_mib() == 81920);
      CHECK(gpu.nvlink_domain() == 0);
      CHECK(gpu.healthy());
    }
  }
}

TEST_CASE("sim: a JSON SimulatedCluster is expanded like the built-in simulation") {
  std::unique_ptr<FakeHost> host = StartSim(R"({"groups": [
      {"namePrefix": "dgx", "count": 2, "cpuMilli": 128000, "memoryMib": 1048576, "gpus": 8,
       "gpuModel": "H100-80GB", "gpuMemoryMib": 81920, "gpusPerNvlinkDomain": 4,
       "labels": {"rack": "r1"}},
      {"name_prefix": "cpu", "count": 1, "cpu_milli": 64000, "memory_mib": 262144},
      {"name_prefix": "ts", "count": 1, "cpu_milli": 8000, "memory_mib": 65536, "gpus": 1,
       "gpu_model": "T4", "gpu_memory_mib": 15360, "sharing": "GPU_SHARING_TIME_SLICE",
       "replicas": 4}]})");
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  REQUIRE(inventory.nodes_size() == 4);
  const v1::NodeSpec& dgx1 = inventory.nodes(1);
  CHECK(dgx1.name() == "dgx-1");
  CHECK(dgx1.labels().at("rack") == "r1");
  REQUIRE(dgx1.gpus_size() == 8);
  CHECK(dgx1.gpus(3).nvlink_domain() == 0);
  CHECK(dgx1.gpus(4).nvlink_domain() == 1);
  CHECK(dgx1.gpus(7).uuid() == "GPU-sim-dgx-1-7");
  CHECK(inventory.nodes(2).name() == "cpu-0");
  CHECK(inventory.nodes(2).gpus_size() == 0);
  CHECK(inventory.nodes(3).gpus(0).sharing() == v1::GPU_SHARING_TIME_SLICE);
  CHECK(inventory.nodes(3).gpus(0).replicas() == 4);
}

TEST_CASE("sim: a bad config is INVALID_ARGUMENT naming the field") {
  const std::string good =
      R"("name_prefix": "n", "count": 1, "cpu_milli": 1000, "memory_mib": 1024)";
  // One good group with `extra` fields.
  auto one = [&](const std::string& extra) { return R"({"groups": [{)" + good + extra + "}]}"; };
  const std::string gpu = R"(, "gpus": 1, "gpu_model": "X", "gpu_memory_mib": 1)";
  struct Case {
    std::string config;
    std::string message;  // the start of the expected message.
  };
  const std::vector<Case> cases = {
      {R"({"groups": [{"name_prefix": "n", "count": 0, "cpu_milli": 1, "memory_mib": 1}]})",
       "groups[0].count: must be > 0"},
      {R"({"groups": [{"count": 1, "cpu_milli": 1, "memory_mib": 1}]})",
       "groups[0].name_prefix: must not be empty"},
      {R"({"groups": [{)" + good + R"(}, {"name_prefix": "m", "count": 1, "memory_mib": 1}]})",
       "groups[1].cpu_milli: must be > 0"},
      {R"({"groups": [{"name_prefix": "n", "count": 1, "cpu_milli": 1}]})",
       "groups[0].memory_mib: must be > 0"},
      {one(R"(, "gpus": -1)"), "groups[0].gpus: must be >= 0"},
      {one(R"(, "gpus": 33, "gpu_model": "X", "gpu_memory_mib": 1)"),
       "groups[0].gpus: at most 32 GPUs per node, got 33"},
      {one(R"(, "gpus": 2, "gpu_memory_mib": 1)"), "groups[0].gpu_model: required when gpus > 0"},
      {one(R"(, "gpus": 2, "gpu_model": "A100-80GB")"),
       "groups[0].gpu_memory_mib: must be > 0 when gpus > 0"},
      {one(gpu + R"(, "gpus_per_nvlink_domain": -2)"),
       "groups[0].gpus_per_nvlink_domain: must be >= 0"},
      {one(gpu + R"(, "sharing": "GPU_SHARING_TIME_SLICE", "replicas": 1)"),
       "groups[0].replicas: a time-sliced GPU needs 2..1000 replicas, got 1"},
      {one(gpu + R"(, "replicas": 3)"),
       "groups[0].replicas: set, but sharing is not GPU_SHARING_TIME_SLICE"},
      {one(gpu + R"(, "mig_instances": [{"profile": "7g.80gb"}])"),
       "groups[0].mig_instances: set, but sharing is not GPU_SHARING_MIG"},
      {one(gpu + R"(, "sharing": "GPU_SHARING_MIG",)" +
           R"( "mig_instances": [{"profile": "1g.10gb", "start": 9}])"),
       "groups[0].mig_instances[0].start: must be 0..7, got 9"},
      {one(R"(, "vgpu_type": "A100-4C")"),
       "groups[0].vgpu_type: set, but sharing is not GPU_SHARING_VGPU"},
      {one(R"(, "sharing": "GPU_SHARING_EXCLUSIVE")"),
       "groups[0].sharing: set, but the group has no GPUs"},
      {R"({"groups": [{)" + good + R"(}, {)" + good + R"(}]})",
       "groups[1].name_prefix: node 'n-0' is already defined by groups[0]"},
      {one(R"(, "cuont": 2)"), "config: not a tessera.v1.SimulatedCluster in protobuf JSON"},
      {"{}", "groups: at least one group is required"},
      {"not json", "config: not a tessera.v1.SimulatedCluster in protobuf JSON"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.config);
    std::unique_ptr<FakeHost> host = OpenSim();
    PluginStatus status = host->Init(c.config);
    CHECK(status.code == TESSERA_INVALID_ARGUMENT);
    CHECK_MESSAGE(status.message.rfind(c.message, 0) == 0, status.message);
  }
}

TEST_CASE("sim: tasks end after their duration, in host time, reported in time order") {
  std::unique_ptr<FakeHost> host = StartSim();
  const int64_t t0 = host->NowUs();
  REQUIRE(host->Launch(Launch(1, 10'000, 0)).ok());
  REQUIRE(host->Launch(Launch(2, 5'000, 7)).ok());
  REQUIRE(host->Launch(Launch(3, 0)).ok());  // runs until stopped.

  v1::BackendEvents events = Poll(*host);
  CHECK(Describe(events) == std::vector<std::string>{"S1@0ms", "S2@0ms", "S3@0ms"});
  CHECK(events.next_event_us() == t0 + 5 * kSecond);
  CHECK(Poll(*host).events_size() == 0);  // nothing is reported twice.

  host->SetNowUs(t0 + 5 * kSecond - 1);
  CHECK(Poll(*host).events_size() == 0);
  host->SetNowUs(t0 + 5 * kSecond);
  events = Poll(*host);
  CHECK(Describe(events) == std::vector<std::string>{"X2=7@5000ms"});
  CHECK(events.next_event_us() == t0 + 10 * kSecond);

  // Task 3 is stopped at 6 s with 2 s of grace: it ends at 8 s, before task 1 (10 s).
  host->SetNowUs(t0 + 6 * kSecond);
  REQUIRE(host->Stop(StopOf(3, 2'000)).ok());
  events = Poll(*host);
  CHECK(events.events_size() == 0);
  CHECK(events.next_event_us() == t0 + 8 * kSecond);

  host->SetNowUs(t0 + 20 * kSecond);
  events = Poll(*host);
  CHECK(Describe(events) == std::vector<std::string>{"X3=143@8000ms", "X1=0@10000ms"});
  CHECK(events.next_event_us() == 0);
  CHECK(LiveJobs(*host).empty());
  CHECK(host->violations().empty());
}

TEST_CASE("sim: with report_telemetry, each GPU reads its task's declared utilisation") {
  // Off by default: no readings.
  std::unique_ptr<FakeHost> quiet = StartSim();
  v1::TelemetryBatch none;
  REQUIRE(quiet->Telemetry(&none).ok());
  CHECK(none.readings_size() == 0);

  std::unique_ptr<FakeHost> host = StartSim(
      R"({"groups":[{"namePrefix":"g","count":1,"cpuMilli":64000,"memoryMib":262144,"gpus":3,)"
      R"("gpuModel":"A100-80GB","gpuMemoryMib":81920}],"reportTelemetry":true})");
  v1::LaunchTask idle = Launch(1, 10'000, 0, "g-0");
  idle.mutable_simulation()->set_gpu_utilization_pct(2.5);
  v1::LaunchTask busy = Launch(2, 0, 0, "g-0");  // utilisation unset: 100.
  busy.set_gpus(0, 1);
  REQUIRE(host->Launch(idle).ok());
  REQUIRE(host->Launch(busy).ok());
  const auto read = [&] {
    v1::TelemetryBatch batch;
    REQUIRE(host->Telemetry(&batch).ok());
    std::vector<double> pct(3, -1);
    for (const v1::GpuTelemetry& r : batch.readings()) {
      CHECK(r.node() == "g-0");
      CHECK(r.time_us() == host->NowUs());
      pct.at(r.gpu()) = r.utilization_pct();
    }
    return pct;
  };
  CHECK(read() == std::vector<double>{2.5, 100, 0});
  // Once task 1 has ended (its exit not polled yet), GPU 0 is idle.
  host->AdvanceUs(10 * kSecond);
  CHECK(read() == std::vector<double>{0, 100, 0});
}

TEST_CASE("sim: a stop ends a task at min(natural end, now + grace)") {
  std::unique_ptr<FakeHost> host = StartSim();
  const int64_t t0 = host->NowUs();
  REQUIRE(host->Launch(Launch(1, 3'000, 5)).ok());
  host->SetNowUs(t0 + 1 * kSecond);
  REQUIRE(host->Stop(StopOf(1, 10'000)).ok());  // the task ends first, on its own.
  v1::BackendEvents events = Poll(*host);
  CHECK(events.next_event_us() == t0 + 3 * kSecond);
  host->SetNowUs(t0 + 30 * kSecond);
  CHECK(Describe(Poll(*host)) == std::vector<std::string>{"X1=5@3000ms"});

  SUBCASE("a shorter second stop wins; a longer one changes nothing") {
    REQUIRE(host->Launch(Launch(2, 0)).ok());
    REQUIRE(host->Stop(StopOf(2, 5'000)).ok());
    REQUIRE(host->Stop(StopOf(2, 1'000)).ok());
    REQUIRE(host->Stop(StopOf(2, 9'000)).ok());
    events = Poll(*host);
    CHECK(events.next_event_us() == t0 + 31 * kSecond);
  }
}

TEST_CASE("sim: a stop with no grace kills at once: start, then exit 137 at the same time") {
  std::unique_ptr<FakeHost> host = StartSim();
  REQUIRE(host->Launch(Launch(4, 60'000)).ok());
  REQUIRE(host->Stop(StopOf(4, 0)).ok());
  CHECK(Describe(Poll(*host)) == std::vector<std::string>{"S4@0ms", "X4=137@0ms"});
}

TEST_CASE("sim: grace 0 after a stop with grace kills at once, and a later grace changes nothing") {
  std::unique_ptr<FakeHost> host = StartSim();
  const int64_t t0 = host->NowUs();
  REQUIRE(host->Launch(Launch(5, 0)).ok());
  REQUIRE(host->Stop(StopOf(5, 5'000)).ok());
  host->SetNowUs(t0 + 1 * kSecond);
  REQUIRE(host->Stop(StopOf(5, 0)).ok());
  REQUIRE(host->Stop(StopOf(5, 5'000)).ok());
  CHECK(Describe(Poll(*host)) == std::vector<std::string>{"S5@0ms", "X5=137@1000ms"});
}

TEST_CASE("sim: launch is idempotent, stop of an unknown task succeeds") {
  std::unique_ptr<FakeHost> host = StartSim();
  REQUIRE(host->Launch(Launch(1, 1'000)).ok());
  REQUIRE(host->Launch(Launch(1, 50'000)).ok());  // the same ref: nothing new runs.
  CHECK(Poll(*host).events_size() == 1);
  CHECK(LiveJobs(*host) == std::vector<uint64_t>{1});
  CHECK(host->Stop(StopOf(99, 1'000)).ok());
  host->AdvanceUs(kSecond);
  CHECK(Describe(Poll(*host)) == std::vector<std::string>{"X1=0@1000ms"});
}

TEST_CASE("sim: reconcile lists the live tasks, not those whose end has passed") {
  std::unique_ptr<FakeHost> host = StartSim();
  REQUIRE(host->Launch(Launch(1, 1'000)).ok());
  REQUIRE(host->Launch(Launch(2, 0)).ok());
  REQUIRE(host->Launch(Launch(3, 0, 0, "sim-1")).ok());
  CHECK(LiveJobs(*host) == std::vector<uint64_t>{1, 2, 3});
  host->AdvanceUs(2 * kSecond);  // task 1 is over, though its exit has not been polled.
  CHECK(LiveJobs(*host) == std::vector<uint64_t>{2, 3});
}

TEST_CASE("sim: a launch on a node not in the inventory is rejected, retryably, alone") {
  std::unique_ptr<FakeHost> host = StartSim();
  CHECK(host->Launch(Launch(1, 0, 0, "nowhere")).ok());
  const v1::BackendEvents events = Poll(*host);
  REQUIRE(events.events_size() == 1);
  CHECK(events.events(0).kind() == v1::BackendEvent::LAUNCH_REJECTED);
  CHECK(events.events(0).ref().job() == 1);
  CHECK(events.events(0).retryable());
  CHECK(events.events(0).message() == "node 'nowhere' is not in the inventory");
}

TEST_CASE("sim: bad launches are refused naming the field") {
  std::unique_ptr<FakeHost> host = StartSim();
  PluginStatus status;
  v1::LaunchTask launch = Launch(2, 0);
  launch.add_gpus(8);
  status = host->Launch(launch);
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "gpus[1]: node 'sim-0' has no GPU 8");
  status = host->Launch(Launch(3, -5));
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "simulation.duration_ms: must be >= 0, got -5");
  CHECK(Poll(*host).events_size() == 0);
  CHECK(LiveJobs(*host).empty());
}

TEST_CASE("sim: a MIG layout of an ABI 1.0 host is applied to the inventory") {
  std::unique_ptr<FakeHost> host = StartSim(R"({"groups": [
      {"name_prefix": "mig", "count": 1, "cpu_milli": 64000, "memory_mib": 524288, "gpus": 2,
       "gpu_model": "A100-80GB", "gpu_memory_mib": 81920, "sharing": "GPU_SHARING_MIG",
       "mig_managed": true, "mig_instances": [{"profile": "7g.80gb", "start": 0}]},
      {"name_prefix": "whole", "count": 1, "cpu_milli": 64000, "memory_mib": 524288, "gpus": 1,
       "gpu_model": "A100-80GB", "gpu_memory_mib": 81920}]})");
  v1::MigLayoutRequest request;
  request.set_node("mig-0");
  request.set_gpu(1);
  v1::MigInstance* a = request.add_layout();
  a->set_profile("3g.40gb");
  a->set_start(0);
  v1::MigInstance* b = request.add_layout();
  b->set_profile("3g.40gb");
  b->set_start(4);
  REQUIRE(host->ApplyMigLayout(request).ok());
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  const v1::NodeSpec& node = inventory.nodes(0);
  REQUIRE(node.gpus(1).mig_instances_size() == 2);
  CHECK(node.gpus(1).mig_instances(1).profile() == "3g.40gb");
  CHECK(node.gpus(1).mig_instances(1).start() == 4);
  CHECK(node.gpus(0).mig_instances_size() == 1);  // the other GPU keeps its layout.

  // ABI 1.0 has no per-GPU result: a layout that fails for its GPU is the call's error.
  request.set_node("nowhere");
  PluginStatus status = host->ApplyMigLayout(request);
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(status.message == "node 'nowhere' is not in the inventory");
  request.set_node("mig-0");
  request.set_gpu(2);
  status = host->ApplyMigLayout(request);
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(status.message == "node 'mig-0' has no GPU 2");
  request.set_node("whole-0");
  request.set_gpu(0);
  status = host->ApplyMigLayout(request);
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(status.message ==
        "GPU 0 of node 'whole-0' is shared as GPU_SHARING_DEFAULT, not GPU_SHARING_MIG");
}

TEST_CASE("sim: passes the SDK's conformance kit") {
  for (const plugin::CheckResult& result : plugin::RunConformance(testing::PluginPath("sim"), "")) {
    CAPTURE(result.name);
    CHECK_MESSAGE(!plugin::FailedItself(result), result.detail);  // not blocked ones: one cause.
  }
}

}  // namespace
}  // namespace tessera
