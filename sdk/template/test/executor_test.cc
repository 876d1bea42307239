// Unit tests of the template executor through the SDK's FakeHost: the plugin linked in (the
// entry function TESSERA_PLUGIN defines), and the built module loaded as the scheduler loads it.
// PLUGIN_NAME and PLUGIN_PATH come from CMakeLists.txt.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>

#include "tessera/plugin/fake_host.h"

// Defined by TESSERA_PLUGIN in executor.cc.
extern "C" const tessera_plugin_descriptor* tessera_plugin_entry(void);

namespace {

using tessera::plugin::FakeHost;
using tessera::plugin::PluginStatus;
namespace v1 = tessera::v1;

std::unique_ptr<FakeHost> Started(const std::string& config) {
  std::unique_ptr<FakeHost> host;
  const PluginStatus loaded = FakeHost::Load(&tessera_plugin_entry, &host);
  REQUIRE_MESSAGE(loaded.ok(), loaded.message);
  const PluginStatus init = host->Init(config);
  REQUIRE_MESSAGE(init.ok(), init.message);
  return host;
}

// Node n under the default prefix, the plugin's name.
std::string Node(int n) { return std::string(PLUGIN_NAME) + "-" + std::to_string(n); }

v1::TaskRef Ref(uint64_t job) {
  v1::TaskRef ref;
  ref.set_job(job);
  ref.set_attempt(1);
  return ref;
}

TEST_CASE("template: the inventory follows the config") {
  std::unique_ptr<FakeHost> host = Started("node_prefix=box\nnodes=3\ngpus_per_node=2\n");
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  REQUIRE(inventory.nodes_size() == 3);
  CHECK(inventory.nodes(2).name() == "box-2");
  CHECK(inventory.nodes(0).gpus_size() == 2);
  CHECK(host->name() == PLUGIN_NAME);
}

TEST_CASE("template: a bad config is INVALID_ARGUMENT, naming the line and field") {
  std::unique_ptr<FakeHost> host;
  REQUIRE(FakeHost::Load(&tessera_plugin_entry, &host).ok());
  const PluginStatus status = host->Init("nodes=2\ngpus_per_node=99\n");
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message ==
        "gpus_per_node: must be an integer from 0 to 16, got '99' (config line 2)");
  CHECK(host->Init("colour=blue").code == TESSERA_INVALID_ARGUMENT);
}

TEST_CASE("template: a task runs until stopped, and both ends are reported") {
  std::unique_ptr<FakeHost> host = Started("");
  host->SetNowUs(1'000'000);
  v1::LaunchTask launch;
  *launch.mutable_ref() = Ref(42);
  launch.set_node(Node(0));
  REQUIRE(host->Launch(launch).ok());
  REQUIRE(host->Launch(launch).ok());  // idempotent.
  CHECK(host->WaitForEvent(v1::BackendEvent::TASK_STARTED, Ref(42), std::chrono::seconds(1)));

  v1::LiveTasks live;
  REQUIRE(host->Reconcile(&live).ok());
  CHECK(live.tasks_size() == 1);

  host->AdvanceUs(500'000);
  v1::StopTask stop;
  *stop.mutable_ref() = Ref(42);
  REQUIRE(host->Stop(stop).ok());
  const auto exited =
      host->WaitForEvent(v1::BackendEvent::TASK_EXITED, Ref(42), std::chrono::seconds(1));
  REQUIRE(exited);
  CHECK(exited->exit_code() == 143);
  CHECK(exited->time_us() == 1'500'000);
  REQUIRE(host->Reconcile(&live).ok());
  CHECK(live.tasks_size() == 0);
  CHECK(host->Stop(stop).ok());  // already gone.
  CHECK(host->events().size() == 2);
}

// An error from Launch would mark the whole plugin unhealthy; one bad launch fails only its task.
TEST_CASE("template: a launch that cannot run answers Ok and reports its launch rejected") {
  std::unique_ptr<FakeHost> host = Started("nodes=1\ngpus_per_node=2");
  v1::LaunchTask launch;
  *launch.mutable_ref() = Ref(1);
  launch.set_node(Node(1));  // there is only node 0.
  REQUIRE(host->Launch(launch).ok());
  auto rejected =
      host->WaitForEvent(v1::BackendEvent::LAUNCH_REJECTED, Ref(1), std::chrono::seconds(1));
  REQUIRE(rejected);
  CHECK_FALSE(rejected->retryable());
  CHECK(rejected->message() == "no node '" + Node(1) + "'");

  *launch.mutable_ref() = Ref(2);
  launch.set_node(Node(0));
  launch.add_gpus(5);
  REQUIRE(host->Launch(launch).ok());
  rejected = host->WaitForEvent(v1::BackendEvent::LAUNCH_REJECTED, Ref(2), std::chrono::seconds(1));
  REQUIRE(rejected);
  CHECK_FALSE(rejected->retryable());
  int rejections_logged = 0;  // each with its reason, for the plugin's own log.
  for (const FakeHost::LogEntry& log : host->logs()) {
    rejections_logged +=
        log.level == TESSERA_LOG_WARN && log.message.find("rejected: no") != std::string::npos;
  }
  CHECK(rejections_logged == 2);

  v1::LiveTasks live;
  REQUIRE(host->Reconcile(&live).ok());
  CHECK(live.tasks_size() == 0);  // neither runs.
}

TEST_CASE("template: the built module loads and answers like the linked plugin") {
  std::unique_ptr<FakeHost> host;
  const PluginStatus opened = FakeHost::Open(PLUGIN_PATH, &host);
  REQUIRE_MESSAGE(opened.ok(), opened.message);
  REQUIRE(host->Init("nodes=2").ok());
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  CHECK(inventory.nodes_size() == 2);
  host->Shutdown();
  CHECK(host->violations().empty());
}

}  // namespace
