// The conformance kit's checks of what ABI 1.1 added (abi.h, plugin.proto): on_start after the
// first inventory and reconcile, launches that carry the new fields, partition layouts with a
// result, node groups, and asynchronous provisioning that ends with an event. A plugin built for
// ABI 1.0 has none of the calls, and these checks skip for it.
#pragma once

#include <set>
#include <string>

#include "google/protobuf/util/message_differencer.h"
#include "tessera/plugin/conformance_context.h"

namespace tessera::plugin::conformance_detail {

inline std::string CheckStartAfterInit(Context& c) {
  if (c.host->descriptor().tessera_plugin_on_start == nullptr) {
    throw Skip{"no on_start (a plugin of ABI 1.0, or one with nothing to start)"};
  }
  c.Init();
  if (c.host->Declares(TESSERA_PLUGIN_KIND_EXECUTOR)) {
    v1::Inventory inventory;
    ExpectOk(c.host->Inventory(&inventory), "on_inventory before on_start");
    v1::LiveTasks live;
    ExpectOk(c.host->Reconcile(&live), "on_reconcile before on_start");
  }
  v1::StartRequest start;
  start.set_epoch(7);
  ExpectOk(c.host->Start(start), "on_start(StartRequest{epoch 7})");
  return "on_start answers OK after on_init" +
         std::string(c.host->Declares(TESSERA_PLUGIN_KIND_EXECUTOR)
                         ? ", on_inventory and on_reconcile"
                         : "");
}

inline std::string CheckLaunchWithAbi11Fields(Context& c) {
  c.RequireExecutor();
  c.Init();
  const std::string node = c.Node();
  const v1::TaskRef ref = c.Ref(0);
  v1::LaunchTask launch = c.Task(ref, node);
  launch.set_queue("conformance/leaf");
  launch.set_priority(100);
  (*launch.mutable_labels())["team"] = "conformance";
  launch.set_time_limit_s(600);
  launch.set_epoch(3);
  ExpectOk(c.host->Launch(launch),
           c.LaunchOf(ref, node) + " with queue, priority, labels, time_limit_s and epoch set");
  const bool started = c.AwaitEvent(v1::BackendEvent::TASK_STARTED, ref);
  const bool rejected =
      c.host->WaitForEvent(v1::BackendEvent::LAUNCH_REJECTED, ref, milliseconds(0)).has_value();
  Expect(started || rejected, "no BackendEvent of kind TASK_STARTED or LAUNCH_REJECTED for " +
                                  c.Describe(ref) + " within the event timeout");
  v1::StopTask stop = c.Stop(ref);
  stop.set_epoch(3);
  ExpectOk(c.host->Stop(stop), c.StopOf(ref) + " with epoch 3");
  return started ? "the task started" : "the task was rejected (LAUNCH_REJECTED), not an error";
}

// The first managed MIG GPU of the inventory: its node, index and layout.
struct MigGpu {
  std::string node;
  int gpu = -1;
  v1::PartitionLayout layout;
};
inline std::optional<MigGpu> FindMigGpu(Context& c) {
  if (!c.host->Declares(TESSERA_PLUGIN_KIND_EXECUTOR)) return std::nullopt;
  v1::Inventory inventory;
  ExpectOk(c.host->Inventory(&inventory), "on_inventory");
  for (const v1::NodeSpec& node : inventory.nodes()) {
    for (const v1::GpuDevice& gpu : node.gpus()) {
      if (gpu.sharing() != v1::GPU_SHARING_MIG) continue;
      MigGpu found{node.name(), gpu.index(), {}};
      found.layout.set_sharing(v1::GPU_SHARING_MIG);
      *found.layout.mutable_mig_instances() = gpu.mig_instances();
      return found;
    }
  }
  return std::nullopt;
}

inline std::string CheckPartitionLayoutResult(Context& c) {
  if (!c.host->Declares(TESSERA_PLUGIN_KIND_PARTITIONER)) throw Skip{"not a partitioner"};
  if (c.host->descriptor().tessera_plugin_on_apply_partition_layout == nullptr) {
    throw Skip{"no on_apply_partition_layout (a partitioner of ABI 1.0)"};
  }
  c.Init();
  const std::optional<MigGpu> gpu = FindMigGpu(c);
  if (!gpu) throw Skip{"no MIG GPU in the plugin's own inventory to shape"};
  // The layout the GPU has already: safe on real hardware, and it must be idempotent.
  v1::PartitionLayoutRequest request;
  request.set_node(gpu->node);
  request.set_gpu(gpu->gpu);
  *request.mutable_layout() = gpu->layout;
  request.set_epoch(1);
  const std::string what = "on_apply_partition_layout(node '" + gpu->node + "', gpu " +
                           std::to_string(gpu->gpu) + ", its current layout of " +
                           std::to_string(gpu->layout.mig_instances_size()) + " instances)";
  for (int round = 0; round < 2; ++round) {
    v1::PartitionLayoutResult result;
    ExpectOk(c.host->ApplyPartitionLayout(request, &result), what);
    Expect(result.error().empty(),
           "PartitionLayoutResult.error from " + what + " is '" + OneLine(result.error()) + "'");
    Expect(google::protobuf::util::MessageDifferencer::Equals(result.applied(), gpu->layout),
           "PartitionLayoutResult.applied from " + what + " differs from the layout asked for: " +
               OneLine(result.applied().ShortDebugString()));
    std::set<std::string> uuids;
    for (const v1::PartitionInstance& instance : result.instances()) {
      Expect(!instance.uuid().empty(), "PartitionLayoutResult.instances[].uuid from " + what +
                                           " is empty for " + instance.mig().profile());
      Expect(uuids.insert(instance.uuid()).second, "PartitionLayoutResult.instances[].uuid '" +
                                                       instance.uuid() + "' from " + what +
                                                       " names two instances");
    }
    Expect(
        result.instances_size() == 0 || result.instances_size() == gpu->layout.mig_instances_size(),
        "PartitionLayoutResult.instances from " + what + " lists " +
            std::to_string(result.instances_size()) + " devices for " +
            std::to_string(gpu->layout.mig_instances_size()) + " instances");
  }
  return "the current layout applied twice, the same result each time";
}

inline std::string CheckNodeGroups(Context& c) {
  if (!c.host->Declares(TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER)) {
    throw Skip{"not a capacity provider"};
  }
  if (c.host->descriptor().tessera_plugin_on_node_groups == nullptr) {
    throw Skip{"no on_node_groups (a capacity provider of ABI 1.0)"};
  }
  c.Init();
  v1::NodeGroups groups;
  ExpectOk(c.host->NodeGroups(&groups), "on_node_groups");
  std::set<std::string> names;
  for (const v1::NodeGroup& g : groups.groups()) {
    const std::string field = "NodeGroups.groups['" + g.name() + "']";
    Expect(!g.name().empty(), "NodeGroups.groups[].name from on_node_groups is empty");
    Expect(names.insert(g.name()).second, field + " is listed twice");
    Expect(g.price_per_hour() >= 0, field + ".price_per_hour is negative");
    Expect(g.min_nodes() >= 0 && g.max_nodes() >= g.min_nodes(),
           field + ": min_nodes " + std::to_string(g.min_nodes()) + ", max_nodes " +
               std::to_string(g.max_nodes()) + " (want 0 <= min_nodes <= max_nodes)");
    Expect(g.market() != v1::CAPACITY_MARKET_UNSPECIFIED, field + ".market is unspecified");
    Expect(g.shape().cpu_milli() > 0 && g.shape().memory_mib() > 0,
           field + ".shape has no cpu_milli or memory_mib");
  }
  return std::to_string(groups.groups_size()) + " node groups, each well-formed";
}

inline std::string CheckProvisionEndsWithEvent(Context& c) {
  if (!c.host->Declares(TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER)) {
    throw Skip{"not a capacity provider"};
  }
  if (c.options.provision_node_group.empty()) {
    throw Skip{"--provision-group not given (provisioning may cost money)"};
  }
  c.Init();
  v1::ProvisionRequest request;
  request.set_node_group(c.options.provision_node_group);
  request.set_count(1);
  request.set_request_id("tessera-conformance-" + std::to_string(c.job_base));
  request.set_epoch(1);
  const std::string what = "on_provision(ProvisionRequest{node_group '" + request.node_group() +
                           "', count 1, request_id '" + request.request_id() + "'})";
  ExpectOk(c.host->Provision(request, nullptr), what);
  ExpectOk(c.host->Provision(request, nullptr), "a second " + what);
  auto ended = [&](const v1::BackendEvent& e) {
    return (e.kind() == v1::BackendEvent::PROVISION_COMPLETED ||
            e.kind() == v1::BackendEvent::PROVISION_FAILED) &&
           e.request_id() == request.request_id();
  };
  std::optional<v1::BackendEvent> end;
  const auto give_up = SteadyClock::now() + c.options.event_timeout;
  while (!end && SteadyClock::now() < give_up) {
    // A capacity provider that is not an executor has no on_poll_events: it emits its events.
    v1::BackendEvents polled;
    if (c.host->Declares(TESSERA_PLUGIN_KIND_EXECUTOR)) {
      ExpectOk(c.host->PollEvents(&polled), "on_poll_events");
    }
    end = c.host->WaitForEvent(ended, milliseconds(0));
    if (end) break;
    if (polled.next_event_us() > c.host->NowUs()) {
      c.host->SetNowUs(polled.next_event_us());
    } else {
      c.host->AdvanceUs(1'000'000);
    }
    end = c.host->WaitForEvent(ended, milliseconds(50));
  }
  Expect(end.has_value(), "no PROVISION_COMPLETED or PROVISION_FAILED event with request_id '" +
                              request.request_id() + "' within the event timeout");
  int endings = 0;
  for (const v1::BackendEvent& e : c.host->events()) endings += ended(e) ? 1 : 0;
  Expect(endings == 1, std::to_string(endings) + " PROVISION_* events for request_id '" +
                           request.request_id() + "' sent twice: the same id must provision once");
  if (end->kind() == v1::BackendEvent::PROVISION_FAILED) {
    return "provisioning failed with an event: " + OneLine(end->message());
  }
  Expect(end->nodes_size() == 1, "PROVISION_COMPLETED.nodes lists " +
                                     std::to_string(end->nodes_size()) + " nodes for count 1");
  v1::DeprovisionRequest give_back;
  *give_back.mutable_nodes() = end->nodes();
  ExpectOk(c.host->Deprovision(give_back), "on_deprovision of the provisioned node");
  return "one node provisioned and given back";
}

}  // namespace tessera::plugin::conformance_detail
