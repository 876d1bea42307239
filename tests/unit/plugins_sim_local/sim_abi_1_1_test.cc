// The sim backend's ABI 1.1 contracts, through the SDK's FakeHost in virtual time: partition
// layouts with results and device names, per-GPU failures, fencing, node groups, provisioning
// with delays and failures, spot interruption notices (provisioned and scripted), and the
// conformance kit's 1.1 checks with a MIG GPU and a node group to provision from.
#include <doctest/doctest.h>

#include <memory>
#include <set>
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

// One managed MIG node, one whole-GPU node, failing partitions on "bad-0", and a spot group
// ("spot", at most 2 nodes, 30 s to provision, interrupted 60 s after joining with a 10 s
// notice) and an on-demand group that is out of capacity ("full").
constexpr const char* kConfig = R"({"groups": [
    {"name_prefix": "mig", "count": 1, "cpu_milli": 64000, "memory_mib": 524288, "gpus": 2,
     "gpu_model": "A100-80GB", "gpu_memory_mib": 81920, "sharing": "GPU_SHARING_MIG",
     "mig_managed": true, "mig_instances": [{"profile": "7g.80gb", "start": 0}]},
    {"name_prefix": "bad", "count": 1, "cpu_milli": 64000, "memory_mib": 524288, "gpus": 1,
     "gpu_model": "A100-80GB", "gpu_memory_mib": 81920, "sharing": "GPU_SHARING_MIG",
     "mig_managed": true, "mig_instances": [{"profile": "7g.80gb", "start": 0}]},
    {"name_prefix": "whole", "count": 1, "cpu_milli": 64000, "memory_mib": 524288, "gpus": 1,
     "gpu_model": "A100-80GB", "gpu_memory_mib": 81920}],
  "failing_partition_nodes": ["bad-0"],
  "capacity": [
    {"nodes": {"name_prefix": "spot", "count": 2, "cpu_milli": 32000, "memory_mib": 262144,
               "gpus": 4, "gpu_model": "L40S", "gpu_memory_mib": 46068},
     "price_per_hour": 3.5, "market": "SPOT", "provision_delay_ms": 30000,
     "interrupt_after_ms": 60000, "interruption_notice_ms": 10000},
    {"nodes": {"name_prefix": "full", "count": 4, "cpu_milli": 32000, "memory_mib": 262144},
     "price_per_hour": 1.0, "provisions_fail": true}]})";

std::unique_ptr<FakeHost> StartSim(const std::string& config = kConfig) {
  std::unique_ptr<FakeHost> host;
  PluginStatus status = FakeHost::Open(testing::PluginPath("sim"), &host);
  REQUIRE_MESSAGE(status.ok(), status.message);
  status = host->Init(config);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return host;
}

v1::BackendEvents Poll(FakeHost& host) {
  v1::BackendEvents events;
  PluginStatus status = host.PollEvents(&events);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return events;
}

v1::NodeSpec NodeNamed(FakeHost& host, const std::string& name) {
  v1::Inventory inventory;
  REQUIRE(host.Inventory(&inventory).ok());
  for (const v1::NodeSpec& node : inventory.nodes()) {
    if (node.name() == name) return node;
  }
  return {};
}

v1::PartitionLayoutRequest MigLayout(const std::string& node, int gpu,
                                     std::vector<std::pair<std::string, int>> instances) {
  v1::PartitionLayoutRequest request;
  request.set_node(node);
  request.set_gpu(gpu);
  request.mutable_layout()->set_sharing(v1::GPU_SHARING_MIG);
  for (const auto& [profile, start] : instances) {
    v1::MigInstance* m = request.mutable_layout()->add_mig_instances();
    m->set_profile(profile);
    m->set_start(start);
  }
  return request;
}

TEST_CASE("sim 1.1: a partition result names each MIG instance; kept ones keep their names") {
  std::unique_ptr<FakeHost> host = StartSim();
  const v1::NodeSpec before = NodeNamed(*host, "mig-0");
  REQUIRE(before.gpus(1).instances_size() == 1);
  const std::string whole_uuid = before.gpus(1).instances(0).uuid();
  CHECK(whole_uuid.rfind("MIG-", 0) == 0);
  CHECK(before.gpus(0).instances(0).uuid() != whole_uuid);  // another GPU, another device.

  v1::PartitionLayoutResult result;
  REQUIRE(
      host->ApplyPartitionLayout(MigLayout("mig-0", 1, {{"3g.40gb", 0}, {"3g.40gb", 4}}), &result)
          .ok());
  CHECK(result.error().empty());
  REQUIRE(result.applied().mig_instances_size() == 2);
  REQUIRE(result.instances_size() == 2);
  std::set<std::string> uuids;
  for (const v1::PartitionInstance& i : result.instances()) uuids.insert(i.uuid());
  CHECK(uuids.size() == 2);
  CHECK(uuids.count(whole_uuid) == 0);
  CHECK(result.instances(0).gpu_instance_id() != result.instances(1).gpu_instance_id());
  // The inventory reports the same devices.
  const v1::NodeSpec after = NodeNamed(*host, "mig-0");
  REQUIRE(after.gpus(1).instances_size() == 2);
  CHECK(after.gpus(1).instances(1).uuid() == result.instances(1).uuid());

  // One instance kept, one replaced: the kept one keeps its name and id.
  v1::PartitionLayoutResult next;
  REQUIRE(host->ApplyPartitionLayout(
                  MigLayout("mig-0", 1, {{"3g.40gb", 0}, {"2g.20gb", 4}, {"1g.10gb", 6}}), &next)
              .ok());
  REQUIRE(next.instances_size() == 3);
  CHECK(next.instances(0).uuid() == result.instances(0).uuid());
  CHECK(next.instances(0).gpu_instance_id() == result.instances(0).gpu_instance_id());
  CHECK(next.instances(1).uuid() != result.instances(1).uuid());

  // The same layout again changes nothing.
  v1::PartitionLayoutResult again;
  REQUIRE(host->ApplyPartitionLayout(
                  MigLayout("mig-0", 1, {{"3g.40gb", 0}, {"2g.20gb", 4}, {"1g.10gb", 6}}), &again)
              .ok());
  CHECK(again.SerializeAsString() == next.SerializeAsString());
}

TEST_CASE("sim 1.1: a layout that fails for its GPU is a result, and the GPU keeps its layout") {
  std::unique_ptr<FakeHost> host = StartSim();
  v1::PartitionLayoutResult result;
  REQUIRE(host->ApplyPartitionLayout(MigLayout("bad-0", 0, {{"3g.40gb", 0}}), &result).ok());
  CHECK(result.error() == "partitioning fails on node 'bad-0' (failing_partition_nodes)");
  REQUIRE(result.applied().mig_instances_size() == 1);
  CHECK(result.applied().mig_instances(0).profile() == "7g.80gb");
  CHECK(NodeNamed(*host, "bad-0").gpus(0).mig_instances(0).profile() == "7g.80gb");

  v1::PartitionLayoutResult other;
  REQUIRE(host->ApplyPartitionLayout(MigLayout("whole-0", 0, {{"3g.40gb", 0}}), &other).ok());
  CHECK(other.error() ==
        "GPU 0 of node 'whole-0' is shared as GPU_SHARING_DEFAULT, not GPU_SHARING_MIG");
  REQUIRE(host->ApplyPartitionLayout(MigLayout("gone-0", 0, {}), &other).ok());
  CHECK(other.error() == "node 'gone-0' is not in the inventory");

  // A malformed request is the host's mistake, not the GPU's: an error, naming the field.
  const PluginStatus status =
      host->ApplyPartitionLayout(MigLayout("mig-0", 0, {{"3g.40gb", 9}}), &other);
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "layout.mig_instances[0].start: must be 0..7, got 9");
}

TEST_CASE("sim 1.1: a request with an epoch below the highest seen is fenced") {
  std::unique_ptr<FakeHost> host = StartSim();
  v1::StartRequest start;
  start.set_epoch(5);
  REQUIRE(host->Start(start).ok());
  v1::LaunchTask launch;
  launch.mutable_ref()->set_job(1);
  launch.mutable_ref()->set_attempt(1);
  launch.set_node("whole-0");
  launch.set_epoch(4);
  PluginStatus status = host->Launch(launch);
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(status.message == "launch: fenced: request epoch 4 is below epoch 5 of a newer scheduler");
  launch.set_epoch(6);  // a newer scheduler: admitted, and now the mark.
  CHECK(host->Launch(launch).ok());
  v1::StopTask stop;
  *stop.mutable_ref() = launch.ref();
  stop.set_epoch(5);
  CHECK(host->Stop(stop).code == TESSERA_FAILED_PRECONDITION);
  stop.set_epoch(0);  // no epoch (a host that sets none): always admitted.
  CHECK(host->Stop(stop).ok());
}

TEST_CASE("sim 1.1: node groups describe the configured capacity") {
  std::unique_ptr<FakeHost> host = StartSim();
  v1::NodeGroups groups;
  REQUIRE(host->NodeGroups(&groups).ok());
  REQUIRE(groups.groups_size() == 2);
  const v1::NodeGroup& spot = groups.groups(0);
  CHECK(spot.name() == "spot");
  CHECK(spot.market() == v1::SPOT);
  CHECK(spot.max_nodes() == 2);
  CHECK(spot.price_per_hour() == 3.5);
  CHECK(spot.shape().gpus_size() == 4);
  CHECK(spot.shape().gpus(0).model() == "L40S");
  CHECK(groups.groups(1).market() == v1::ON_DEMAND);  // unspecified means on-demand.
}

TEST_CASE("sim 1.1: provisioning ends after its delay; the same request_id provisions once") {
  std::unique_ptr<FakeHost> host = StartSim();
  v1::ProvisionRequest request;
  request.set_node_group("spot");
  request.set_count(2);
  request.set_request_id("r1");
  REQUIRE(host->Provision(request, nullptr).ok());
  REQUIRE(host->Provision(request, nullptr).ok());  // again: nothing more.
  v1::BackendEvents events = Poll(*host);
  CHECK(events.events_size() == 0);
  CHECK(events.next_event_us() == FakeHost::kDefaultStartUs + 30 * kSecond);
  host->SetNowUs(events.next_event_us());
  events = Poll(*host);
  REQUIRE(events.events_size() == 2);
  CHECK(events.events(0).kind() == v1::BackendEvent::INVENTORY_CHANGED);
  const v1::BackendEvent& done = events.events(1);
  CHECK(done.kind() == v1::BackendEvent::PROVISION_COMPLETED);
  CHECK(done.request_id() == "r1");
  REQUIRE(done.nodes_size() == 2);
  CHECK(done.nodes(0) == "spot-0");
  CHECK(NodeNamed(*host, "spot-1").gpus_size() == 4);

  // The group is full now: another node fails, after the same delay.
  request.set_request_id("r2");
  request.set_count(1);
  REQUIRE(host->Provision(request, nullptr).ok());
  host->AdvanceUs(30 * kSecond);
  events = Poll(*host);
  REQUIRE(events.events_size() == 1);
  CHECK(events.events(0).kind() == v1::BackendEvent::PROVISION_FAILED);
  CHECK(events.events(0).message() ==
        "node group 'spot' is at its max_nodes 2 (2 there or on their way)");

  // A group out of capacity fails every request.
  request.set_node_group("full");
  request.set_request_id("r3");
  REQUIRE(host->Provision(request, nullptr).ok());
  events = Poll(*host);  // no delay configured: due now.
  REQUIRE(events.events_size() == 1);
  CHECK(events.events(0).kind() == v1::BackendEvent::PROVISION_FAILED);
  CHECK(events.events(0).message() == "node group 'full' has no capacity (provisions_fail)");

  // Bad requests name their field.
  request.set_node_group("nope");
  request.set_request_id("r4");
  PluginStatus status = host->Provision(request, nullptr);
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "node_group: no node group 'nope'");
  request.set_node_group("spot");
  request.set_count(0);
  status = host->Provision(request, nullptr);
  CHECK(status.message == "count: must be > 0, got 0");
  v1::DeprovisionRequest give_back;
  give_back.add_nodes("whole-0");
  status = host->Deprovision(give_back);
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "nodes[0]: 'whole-0' is not a node this provider added");
}

TEST_CASE("sim 1.1: a spot node gets its notice, then leaves with its tasks") {
  std::unique_ptr<FakeHost> host = StartSim();
  v1::ProvisionRequest request;
  request.set_node_group("spot");
  request.set_count(1);
  request.set_request_id("r1");
  REQUIRE(host->Provision(request, nullptr).ok());
  host->AdvanceUs(30 * kSecond);
  Poll(*host);
  v1::LaunchTask launch;
  launch.mutable_ref()->set_job(3);
  launch.mutable_ref()->set_attempt(1);
  launch.set_node("spot-0");
  REQUIRE(host->Launch(launch).ok());
  Poll(*host);  // TASK_STARTED.
  host->AdvanceUs(60 * kSecond);
  v1::BackendEvents events = Poll(*host);
  REQUIRE(events.events_size() == 1);
  const v1::BackendEvent& notice = events.events(0);
  CHECK(notice.kind() == v1::BackendEvent::SPOT_INTERRUPTION);
  CHECK(notice.node() == "spot-0");
  CHECK(notice.deadline_us() == host->NowUs() + 10 * kSecond);
  CHECK(events.next_event_us() == notice.deadline_us());
  host->SetNowUs(notice.deadline_us());
  events = Poll(*host);
  REQUIRE(events.events_size() == 1);
  CHECK(events.events(0).kind() == v1::BackendEvent::INVENTORY_CHANGED);
  CHECK(NodeNamed(*host, "spot-0").name().empty());
  v1::LiveTasks live;
  REQUIRE(host->Reconcile(&live).ok());
  CHECK(live.tasks_size() == 0);  // gone with the node, without an exit status.
}

TEST_CASE("sim 1.1: a scripted interruption notices, then the node leaves") {
  std::unique_ptr<FakeHost> host = StartSim(R"({"groups": [
      {"name_prefix": "a", "count": 2, "cpu_milli": 8000, "memory_mib": 16384}],
    "changes": [{"at_ms": 1000, "interrupt": ["a-1"], "notice_ms": 5000}]})");
  host->AdvanceUs(kSecond);
  v1::BackendEvents events = Poll(*host);
  REQUIRE(events.events_size() == 1);
  CHECK(events.events(0).kind() == v1::BackendEvent::SPOT_INTERRUPTION);
  CHECK(events.events(0).node() == "a-1");
  CHECK(events.next_event_us() == host->NowUs() + 5 * kSecond);
  host->SetNowUs(events.next_event_us());
  events = Poll(*host);
  REQUIRE(events.events_size() == 1);
  CHECK(events.events(0).kind() == v1::BackendEvent::INVENTORY_CHANGED);
  CHECK(NodeNamed(*host, "a-1").name().empty());
  CHECK(NodeNamed(*host, "a-0").name() == "a-0");
}

TEST_CASE("sim 1.1: bad capacity and interruption configs name the field") {
  std::unique_ptr<FakeHost> host;
  REQUIRE(FakeHost::Open(testing::PluginPath("sim"), &host).ok());
  const std::string group =
      R"({"groups": [{"name_prefix": "a", "count": 1, "cpu_milli": 8000, "memory_mib": 16384}],)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("capacity": [{"nodes": {"name_prefix": "c", "count": 1, "cpu_milli": 1,
           "memory_mib": 1}, "min_nodes": 2}]})",
       "capacity[0].min_nodes: must be between 0 and nodes.count (1), got 2"},
      {R"("capacity": [{"nodes": {"name_prefix": "c", "count": 1, "cpu_milli": 1,
           "memory_mib": 1}, "interrupt_after_ms": 5}]})",
       "capacity[0].interrupt_after_ms: only spot capacity is interrupted"},
      {R"("capacity": [{"nodes": {"name_prefix": "c", "count": 0, "cpu_milli": 1,
           "memory_mib": 1}}]})",
       "capacity[0].nodes.count: must be > 0"},
      {R"("capacity": [{"nodes": {"name_prefix": "c", "count": 1, "cpu_milli": 1,
           "memory_mib": 1}, "price_per_hour": -1}]})",
       "capacity[0].price_per_hour: must be >= 0"},
      {R"("changes": [{"at_ms": 1, "interrupt": [""]}]})",
       "changes[0].interrupt[0]: must not be empty"},
      {R"("changes": [{"at_ms": 1, "interrupt": ["a-0"], "notice_ms": -1}]})",
       "changes[0].notice_ms: must be >= 0"},
  };
  for (const auto& c : cases) {
    // Not a structured binding: clang (the sanitizer builds) cannot capture one in CAPTURE.
    const std::string& rest = c.first;
    const std::string& message = c.second;
    CAPTURE(rest);
    const PluginStatus status = host->Init(group + rest);
    CHECK(status.code == TESSERA_INVALID_ARGUMENT);
    CHECK(status.message == message);
  }
}

TEST_CASE("sim 1.1: passes the conformance kit's ABI 1.1 checks, provisioning included") {
  plugin::ConformanceOptions options;
  options.provision_node_group = "spot";
  std::set<std::string> passed;
  for (const plugin::CheckResult& result :
       plugin::RunConformance(testing::PluginPath("sim"), kConfig, options)) {
    CAPTURE(result.name);
    CHECK_MESSAGE(!plugin::FailedItself(result), result.detail);
    if (result.passed && !result.skipped) passed.insert(result.name);
  }
  for (const char* check :
       {"start_after_init", "launch_with_abi_1_1_fields", "partition_layout_result", "node_groups",
        "provision_ends_with_event"}) {
    CAPTURE(check);
    CHECK(passed.count(check) == 1);
  }
}

}  // namespace
}  // namespace tessera
