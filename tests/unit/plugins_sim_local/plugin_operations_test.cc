// Operations of PluginExecutor (issue 14 item 4): two lanes per plugin, so a slow launch never
// holds up polls and telemetry, in process and isolated; a deadline per kind of call; and
// provisioning requests that end with the plugin's event or at their own deadline, counted by
// the OperationTracker.
#include <doctest/doctest.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "engine/timer_queue.h"
#include "plugins/operation_tracker.h"
#include "plugins/plugin_executor.h"
#include "plugins/plugin_library.h"
#include "plugins/plugin_worker.h"
#include "tessera/v1/plugin.pb.h"
#include "unit/plugins_sim_local/plugin_paths.h"

namespace tessera {
namespace {

using std::chrono::milliseconds;

// build/tests/tessera_unit_tests -> build/tests/plugins/ (tests/plugins/CMakeLists.txt).
std::string TestBackendPath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plugins" /
          "libtessera_plugin_test_backend.so")
      .string();
}

// The decision strand, played by the test: what the executor posts waits here until Drain runs
// it on the test's thread.
struct Strand : ExecutorEvents {
  std::mutex mu;
  std::deque<std::function<void()>> posted;
  TimerQueue timers;
  std::shared_ptr<Clock> clock;
  std::vector<TaskRef> started;
  std::vector<std::pair<TaskRef, int>> exited;
  std::vector<std::string> rejected;  // the reasons.
  std::vector<std::tuple<std::string, bool, std::string>> provisioned;
  std::vector<std::vector<std::string>> provisioned_nodes;  // named by each, in order.
  int readings = 0;
  std::string unhealthy;

  explicit Strand(std::shared_ptr<Clock> c) : clock(std::move(c)) {}

  void Post(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu);
    posted.push_back(std::move(fn));
  }
  void Drain() {
    while (true) {
      std::function<void()> fn;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (posted.empty()) return;
        fn = std::move(posted.front());
        posted.pop_front();
      }
      fn();
    }
  }

  void OnTaskStarted(const TaskRef& task) override { started.push_back(task); }
  void OnTaskExited(const TaskRef& task, int code) override { exited.emplace_back(task, code); }
  void OnTaskLost(const TaskRef&, const std::string&) override {}
  void OnLaunchRejected(const TaskRef&, bool, const std::string& why) override {
    rejected.push_back(why);
  }

  PluginExecutor::Wiring Wiring() {
    PluginExecutor::Wiring w;
    w.post = [this](std::function<void()> fn) { Post(std::move(fn)); };
    w.events = this;
    w.timers = &timers;
    w.clock = clock;
    w.on_unhealthy = [this](const std::string& why) { unhealthy = why; };
    w.telemetry = [this](const v1::GpuTelemetry&) { ++readings; };
    w.on_provisioned = [this](const std::string& id, bool ok, const std::string& why,
                              const std::vector<std::string>& nodes) {
      provisioned.emplace_back(id, ok, why);
      provisioned_nodes.push_back(nodes);
    };
    w.operations = std::make_shared<OperationTracker>();
    return w;
  }
};

LaunchRequest LaunchOf(uint64_t job, const std::string& node) {
  LaunchRequest request;
  request.ref = TaskRef{job, 1, 0};
  request.node = node;
  return request;
}

std::unique_ptr<PluginExecutor> Open(std::shared_ptr<PluginLibrary> library,
                                     const PluginOptions& options, Strand* strand,
                                     std::shared_ptr<OperationTracker>* operations = nullptr) {
  PluginExecutor::Wiring wiring = strand->Wiring();
  if (operations != nullptr) *operations = wiring.operations;
  auto executor = PluginExecutor::Start(std::move(library), options, std::move(wiring));
  REQUIRE(executor.ok());
  REQUIRE((*executor)->LoadInventory().ok());
  REQUIRE((*executor)->LoadLiveTasks().ok());
  REQUIRE((*executor)->StartPlugin().ok());
  return std::move(*executor);
}

// A launch that takes 1.5 s on the real clock, with polls and telemetry every 50 ms: the readings
// that reach the strand meanwhile. With one lane for every call, none would (the poller waits
// for an idle plugin): the count is what separates the two designs.
int ReadingsDuringSlowLaunch(bool isolate) {
  PluginOptions options;
  options.plugin = TestBackendPath();
  options.config = "launch_delay_ms=1500\ntelemetry=1\n";
  options.poll_interval = milliseconds(50);
  options.isolate = isolate;
  auto library = isolate ? PluginLibrary::LoadIsolated(options.plugin, {}, TESSERA_PLUGIN_HOST_PATH,
                                                       milliseconds(5000))
                         : PluginLibrary::Load(options.plugin, {});
  REQUIRE(library.ok());
  Strand strand(RealClock());
  std::shared_ptr<OperationTracker> operations;
  std::unique_ptr<PluginExecutor> executor = Open(*library, options, &strand, &operations);
  executor->Launch(LaunchOf(1, "test-0"));
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < milliseconds(1400)) {
    std::this_thread::sleep_for(milliseconds(20));
    strand.Drain();
  }
  const int during = strand.readings;
  // The launch itself still completes, as an operation that succeeded.
  CHECK(operations->Counts().kinds[static_cast<int>(OperationKind::kLaunch)].in_flight == 1);
  while (strand.started.empty() && std::chrono::steady_clock::now() - start < milliseconds(5000)) {
    std::this_thread::sleep_for(milliseconds(20));
    strand.Drain();
  }
  CHECK(strand.started.size() == 1);
  CHECK(strand.unhealthy.empty());
  const OperationTracker::KindCounts launches =
      operations->Counts().kinds[static_cast<int>(OperationKind::kLaunch)];
  CHECK(launches.in_flight == 0);
  CHECK(launches.succeeded == 1);
  return during;
}

TEST_CASE("plugin operations: a slow launch does not hold up telemetry, in process") {
  const int readings = ReadingsDuringSlowLaunch(false);
  MESSAGE(readings << " readings during a 1.4 s wait on a 1.5 s launch (50 ms interval)");
  // About 28 on a quiet machine; a loaded CI runner gets fewer, never none.
  CHECK(readings >= 5);
}

TEST_CASE("plugin operations: a slow launch does not hold up telemetry, isolated") {
  const int readings = ReadingsDuringSlowLaunch(true);
  MESSAGE(readings << " readings during a 1.4 s wait on a 1.5 s launch (50 ms interval)");
  CHECK(readings >= 5);
}

TEST_CASE("plugin operations: each kind of call has its own deadline") {
  PluginOptions options;
  options.plugin = TestBackendPath();
  options.config = "launch_delay_ms=400\n";
  options.call_deadline = milliseconds(200);
  auto library = PluginLibrary::Load(options.plugin, {});
  REQUIRE(library.ok());

  SUBCASE("a launch may take longer than call_deadline when launch_deadline allows it") {
    options.launch_deadline = milliseconds(3000);
    Strand strand(RealClock());
    std::unique_ptr<PluginExecutor> executor = Open(*library, options, &strand);
    executor->Launch(LaunchOf(1, "test-0"));
    const auto start = std::chrono::steady_clock::now();
    while (strand.started.empty() &&
           std::chrono::steady_clock::now() - start < milliseconds(3000)) {
      std::this_thread::sleep_for(milliseconds(20));
      strand.Drain();
    }
    CHECK(strand.started.size() == 1);
    CHECK(executor->healthy());
  }
  SUBCASE("a launch past launch_deadline hangs the plugin, named with its own deadline") {
    options.launch_deadline = milliseconds(100);
    Strand strand(RealClock());
    std::shared_ptr<OperationTracker> operations;
    std::unique_ptr<PluginExecutor> executor = Open(*library, options, &strand, &operations);
    executor->Launch(LaunchOf(1, "test-0"));
    const auto start = std::chrono::steady_clock::now();
    while (strand.unhealthy.empty() &&
           std::chrono::steady_clock::now() - start < milliseconds(3000)) {
      std::this_thread::sleep_for(milliseconds(20));
      strand.Drain();
    }
    CHECK(strand.unhealthy ==
          "plugin 'test-backend': on_launch did not return within 100 ms; the call is abandoned");
    const OperationTracker::Snapshot counts = operations->Counts();
    CHECK(counts.kinds[static_cast<int>(OperationKind::kLaunch)].failed == 1);
    CHECK(counts.last_failure.find("launch 1 (job 1.1 task 0): the plugin turned unhealthy") == 0);
  }
}

// The sim plugin as a capacity provider, in virtual time: a group that provisions in 90 s, one
// that fails every request.
const char* kCapacityConfig = R"({"groups": [{"name_prefix": "base", "count": 1, "cpu_milli": 8000,
   "memory_mib": 65536, "gpus": 1, "gpu_model": "T4", "gpu_memory_mib": 15360}],
 "capacity": [
  {"nodes": {"name_prefix": "spot", "count": 4, "cpu_milli": 32000, "memory_mib": 262144,
             "gpus": 4, "gpu_model": "L40S", "gpu_memory_mib": 46068},
   "price_per_hour": 3.5, "market": "SPOT", "provision_delay_ms": 90000},
  {"nodes": {"name_prefix": "h100", "count": 2, "cpu_milli": 96000, "memory_mib": 1048576,
             "gpus": 8, "gpu_model": "H100-80GB", "gpu_memory_mib": 81920},
   "price_per_hour": 98.3, "provisions_fail": true}]})";

// Moves the virtual clock to `to_us` in steps, polling the plugin at each (as the engine's
// timers would at the times it names) and running what falls due on the strand.
void RunUntil(Strand* strand, ManualClock* clock, PluginExecutor* executor, int64_t to_us) {
  while (clock->NowUs() < to_us) {
    clock->AdvanceToUs(std::min<int64_t>(to_us, clock->NowUs() + 1'000'000));
    executor->Poll();
    strand->Drain();
    strand->timers.RunDue(clock->NowUs());
    strand->Drain();
  }
}

TEST_CASE("plugin operations: provisioning ends with the plugin's event or at its deadline") {
  auto clock = std::make_shared<ManualClock>();
  Strand strand(clock);
  PluginOptions options;
  options.plugin = testing::PluginPath("sim");
  options.config = kCapacityConfig;
  auto library = PluginLibrary::Load(options.plugin, {});
  REQUIRE(library.ok());
  const int provision = static_cast<int>(OperationKind::kProvision);

  SUBCASE("completed within the deadline") {
    std::shared_ptr<OperationTracker> operations;
    std::unique_ptr<PluginExecutor> executor = Open(*library, options, &strand, &operations);
    const int64_t start = clock->NowUs();
    const uint64_t id = executor->Provision("spot", 2, "burst-1");
    strand.Drain();
    CHECK(operations->Find(id).has_value());
    CHECK(operations->Counts().kinds[provision].in_flight == 1);
    RunUntil(&strand, clock.get(), executor.get(), start + 89'000'000);
    CHECK(strand.provisioned.empty());
    RunUntil(&strand, clock.get(), executor.get(), start + 91'000'000);
    REQUIRE(strand.provisioned.size() == 1);
    CHECK(std::get<0>(strand.provisioned[0]) == "burst-1");
    CHECK(std::get<1>(strand.provisioned[0]));
    // PROVISION_COMPLETED's nodes reach the host: the scheduler takes them as burst nodes by
    // these names, whichever backend they join through.
    CHECK(strand.provisioned_nodes[0] == std::vector<std::string>{"spot-0", "spot-1"});
    CHECK_FALSE(operations->Find(id).has_value());
    CHECK(operations->Counts().kinds[provision].succeeded == 1);
    // The deadline's timer was cancelled: nothing ends the request a second time.
    RunUntil(&strand, clock.get(), executor.get(), start + 700'000'000);
    CHECK(strand.provisioned.size() == 1);
  }
  SUBCASE("past provision_deadline it fails, and the plugin stays healthy") {
    options.provision_deadline = milliseconds(60'000);
    std::shared_ptr<OperationTracker> operations;
    std::unique_ptr<PluginExecutor> executor = Open(*library, options, &strand, &operations);
    const int64_t start = clock->NowUs();
    executor->Provision("spot", 1, "burst-2");
    RunUntil(&strand, clock.get(), executor.get(), start + 61'000'000);
    REQUIRE(strand.provisioned.size() == 1);
    CHECK_FALSE(std::get<1>(strand.provisioned[0]));
    CHECK(std::get<2>(strand.provisioned[0]) ==
          "timed out: no PROVISION_COMPLETED or PROVISION_FAILED within 60000 ms");
    CHECK(operations->Counts().kinds[provision].failed == 1);
    CHECK(operations->Counts().last_failure ==
          "provision 1 (node group spot x 1, request burst-2): timed out: no "
          "PROVISION_COMPLETED or PROVISION_FAILED within 60000 ms");
    // The plugin's late completion ends nothing more.
    RunUntil(&strand, clock.get(), executor.get(), start + 95'000'000);
    CHECK(strand.provisioned.size() == 1);
    CHECK(executor->healthy());
  }
  SUBCASE("the plugin's PROVISION_FAILED fails the request") {
    std::shared_ptr<OperationTracker> operations;
    std::unique_ptr<PluginExecutor> executor = Open(*library, options, &strand, &operations);
    executor->Provision("h100", 1, "burst-3");
    RunUntil(&strand, clock.get(), executor.get(), clock->NowUs() + 2'000'000);
    REQUIRE(strand.provisioned.size() == 1);
    CHECK(std::get<0>(strand.provisioned[0]) == "burst-3");
    CHECK_FALSE(std::get<1>(strand.provisioned[0]));
    CHECK(operations->Counts().kinds[provision].failed == 1);
  }
  SUBCASE("a request the plugin refuses fails at once, without spending the deadline") {
    std::shared_ptr<OperationTracker> operations;
    std::unique_ptr<PluginExecutor> executor = Open(*library, options, &strand, &operations);
    executor->Provision("no-such-group", 1, "burst-4");
    strand.Drain();
    REQUIRE(strand.provisioned.size() == 1);
    CHECK_FALSE(std::get<1>(strand.provisioned[0]));
    CHECK(std::get<2>(strand.provisioned[0]).find("on_provision failed") != std::string::npos);
    CHECK(operations->Counts().kinds[provision].in_flight == 0);
  }
}

TEST_CASE("plugin operations: an executor plugin that provides no capacity refuses to provision") {
  auto clock = std::make_shared<ManualClock>();
  Strand strand(clock);
  PluginOptions options;
  options.plugin = TestBackendPath();
  auto library = PluginLibrary::Load(options.plugin, {});
  REQUIRE(library.ok());
  std::shared_ptr<OperationTracker> operations;
  std::unique_ptr<PluginExecutor> executor = Open(*library, options, &strand, &operations);
  executor->Provision("any", 1, "r-1");
  REQUIRE(strand.provisioned.size() == 1);
  CHECK(std::get<2>(strand.provisioned[0]) ==
        "the plugin is not a capacity provider (it has no on_provision)");
  CHECK(operations->Counts().kinds[static_cast<int>(OperationKind::kProvision)].failed == 1);
}

std::string TestPluginPath(const std::string& name) {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plugins" /
          ("libtessera_plugin_" + name + ".so"))
      .string();
}

// A MIG launch asked for while its GPU's re-partition is under way (on the real clock it may
// well be: the partition call runs on the plugin's lane, its result comes back later) waits for
// the result and goes out with the instance's device. Here the partitioner is another
// backend's plugin, wired to the owner as SchedulerImpl wires them.
TEST_CASE("plugin operations: a MIG launch waits for its GPU's partition result") {
  auto clock = std::make_shared<ManualClock>();
  Strand strand(clock);
  PluginOptions owner_options;
  owner_options.plugin = TestBackendPath();
  owner_options.config = "nodes=1\nmig=1\nreject_with_devices=1\n";
  auto owner_library = PluginLibrary::Load(owner_options.plugin, {});
  REQUIRE(owner_library.ok());
  std::unique_ptr<PluginExecutor> owner = Open(*owner_library, owner_options, &strand);

  PluginOptions partitioner_options;
  partitioner_options.plugin = TestPluginPath("partitioner");
  auto partitioner_library = PluginLibrary::Load(partitioner_options.plugin, {});
  REQUIRE(partitioner_library.ok());
  PluginExecutor::Wiring wiring = strand.Wiring();
  wiring.on_foreign_partition_started = [&](const std::string& node, int gpu) {
    owner->PartitionUnderWay(node, gpu);
  };
  wiring.on_foreign_partition_result = [&](const std::string& node, int gpu,
                                           const v1::PartitionLayoutResult& result) {
    owner->TakePartitionResult(node, gpu, result);
  };
  auto partitioner = PluginExecutor::Start(*partitioner_library, partitioner_options, wiring);
  REQUIRE(partitioner.ok());

  v1::MigInstance three;
  three.set_profile("3g.40gb");
  three.set_start(4);
  (*partitioner)->ApplyMigLayout("test-0", 0, {three});
  LaunchRequest launch = LaunchOf(1, "test-0");
  launch.gpus = {0};
  v1::GpuPartition partition;
  partition.set_sharing(v1::GPU_SHARING_MIG);
  partition.set_mig_profile("3g.40gb");
  partition.set_mig_start(4);
  launch.partition = partition;
  owner->Launch(launch);
  LaunchRequest stopped = launch;
  stopped.ref = TaskRef{2, 1, 0};
  owner->Launch(stopped);
  owner->Stop(stopped.ref, 0);  // never reached the plugin: it ends here.
  // The result reaches the owner; the waiting launch goes out, naming the new instance (sent at
  // once, it would have named none: "devices: ; mig:  gi 0 ci 0").
  strand.Drain();
  REQUIRE(strand.rejected.size() == 1);
  CHECK(strand.rejected[0] ==
        "devices: MIG-part-test-0-0-3g.40gb-4; mig: MIG-part-test-0-0-3g.40gb-4 gi 1 ci 0");
  REQUIRE(strand.exited.size() == 1);
  CHECK(strand.exited[0].first == stopped.ref);
  CHECK(strand.exited[0].second == PluginExecutor::kStoppedBeforeLaunchExitCode);
}

TEST_CASE("operation tracker: ids, one end each, and what failed last") {
  OperationTracker tracker;
  const uint64_t a = tracker.Begin(OperationKind::kLaunch, "job 1.1 task 0", 0, 5'000'000);
  const uint64_t b = tracker.Begin(OperationKind::kStop, "job 2.1 task 0", 0, 1'000'000);
  const uint64_t c = tracker.Begin(OperationKind::kProvision, "node group g x 1", 0, 60'000'000);
  CHECK(a == 1);
  CHECK(b == 2);
  CHECK(tracker.End(a, true));
  CHECK_FALSE(tracker.End(a, false, "again"));  // it ended already.
  const std::vector<Operation> expired = tracker.ExpireDue(2'000'000);
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].id == b);
  OperationTracker::Snapshot counts = tracker.Counts();
  CHECK(counts.kinds[static_cast<int>(OperationKind::kLaunch)].succeeded == 1);
  CHECK(counts.kinds[static_cast<int>(OperationKind::kStop)].failed == 1);
  CHECK(counts.last_failure == "stop 2 (job 2.1 task 0): timed out after 1000 ms");
  CHECK(tracker.FailAll("the plugin turned unhealthy") == 1);
  CHECK_FALSE(tracker.Find(c).has_value());
  counts = tracker.Counts();
  CHECK(counts.kinds[static_cast<int>(OperationKind::kProvision)].in_flight == 0);
  CHECK(counts.last_failure == "provision 3 (node group g x 1): the plugin turned unhealthy");
}

TEST_CASE("plugin worker: a call's own deadline, not the worker's, decides when it hangs") {
  std::mutex mu;
  std::string hung;  // what on_hung said, from the watchdog's thread.
  auto reported = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return hung;
  };
  PluginWorker worker("p", milliseconds(50), [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    hung = why;
  });
  // Longer than the worker's default, within its own.
  CHECK(worker
            .RunAndWait(
                "slow", [] { std::this_thread::sleep_for(milliseconds(150)); }, milliseconds(2000))
            .ok());
  CHECK(reported().empty());
  CHECK_FALSE(worker.hung());
  // The waiter may return before the worker has put the slow call down; a call queued before
  // that waits for it too (its wait includes the slow call's deadline).
  for (int i = 0; i < 100 && worker.InFlight() > 0; ++i)
    std::this_thread::sleep_for(milliseconds(5));
  // Past its own.
  const Status late = worker.RunAndWait(
      "late", [] { std::this_thread::sleep_for(milliseconds(400)); }, milliseconds(100));
  CHECK_FALSE(late.ok());
  // The waiter gives up at the deadline; the watchdog, timing the same deadline, reports it.
  for (int i = 0; i < 100 && reported().empty(); ++i) std::this_thread::sleep_for(milliseconds(10));
  CHECK(worker.hung());
  CHECK(reported() == "plugin 'p': late did not return within 100 ms; the call is abandoned");
}

}  // namespace
}  // namespace tessera
