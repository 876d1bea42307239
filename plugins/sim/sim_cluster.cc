#include "sim_cluster.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace tessera::sim {
namespace {

// The notice EC2 gives before it takes a spot instance back: two minutes.
constexpr int64_t kDefaultInterruptionNoticeMs = 120'000;

plugin::PluginStatus Invalid(std::string message) {
  return plugin::PluginStatus::Error(TESSERA_INVALID_ARGUMENT, std::move(message));
}

bool Blank(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return std::isspace(c) != 0; });
}

// The sharing fields of a group, checked once for all of its GPUs.
plugin::PluginStatus ValidateSharing(const v1::SimulatedNodeGroup& group,
                                     const std::string& field) {
  if (!v1::GpuSharing_IsValid(group.sharing())) {
    return Invalid(field + "sharing: unknown mode " + std::to_string(group.sharing()));
  }
  const bool has_gpus = group.gpus() > 0;
  if (group.sharing() != v1::GPU_SHARING_DEFAULT && !has_gpus) {
    return Invalid(field + "sharing: set, but the group has no GPUs");
  }
  if (group.sharing() == v1::GPU_SHARING_TIME_SLICE &&
      (group.replicas() < 2 || group.replicas() > 1000)) {
    return Invalid(field + "replicas: a time-sliced GPU needs 2..1000 replicas, got " +
                   std::to_string(group.replicas()));
  }
  if (group.sharing() != v1::GPU_SHARING_TIME_SLICE && group.replicas() != 0) {
    return Invalid(field + "replicas: set, but sharing is not GPU_SHARING_TIME_SLICE");
  }
  if (group.sharing() != v1::GPU_SHARING_MIG &&
      (group.mig_instances_size() > 0 || group.mig_managed())) {
    return Invalid(field + "mig_instances: set, but sharing is not GPU_SHARING_MIG");
  }
  if (group.sharing() != v1::GPU_SHARING_VGPU && !group.vgpu_type().empty()) {
    return Invalid(field + "vgpu_type: set, but sharing is not GPU_SHARING_VGPU");
  }
  // Whether a profile exists on the model and the layout fits is the scheduler's check (it owns
  // the MIG tables); the plugin only rejects what is malformed whatever the model.
  for (int j = 0; j < group.mig_instances_size(); ++j) {
    const v1::MigInstance& m = group.mig_instances(j);
    const std::string at = field + "mig_instances[" + std::to_string(j) + "].";
    if (m.profile().empty()) return Invalid(at + "profile: must not be empty");
    if (m.start() < 0 || m.start() > 7) {
      return Invalid(at + "start: must be 0..7, got " + std::to_string(m.start()));
    }
  }
  return plugin::PluginStatus::Ok();
}

plugin::PluginStatus ValidateGroup(const v1::SimulatedNodeGroup& group, const std::string& field) {
  if (group.name_prefix().empty()) return Invalid(field + "name_prefix: must not be empty");
  if (group.count() <= 0) return Invalid(field + "count: must be > 0");
  if (group.cpu_milli() <= 0) return Invalid(field + "cpu_milli: must be > 0");
  if (group.memory_mib() <= 0) return Invalid(field + "memory_mib: must be > 0");
  if (group.gpus() < 0) return Invalid(field + "gpus: must be >= 0");
  if (group.gpus() > kMaxGpusPerNode) {
    return Invalid(field + "gpus: at most " + std::to_string(kMaxGpusPerNode) +
                   " GPUs per node, got " + std::to_string(group.gpus()));
  }
  if (group.gpus() > 0 && group.gpu_model().empty()) {
    return Invalid(field + "gpu_model: required when gpus > 0");
  }
  if (group.gpus() > 0 && group.gpu_memory_mib() <= 0) {
    return Invalid(field + "gpu_memory_mib: must be > 0 when gpus > 0");
  }
  if (group.gpus_per_nvlink_domain() < 0) {
    return Invalid(field + "gpus_per_nvlink_domain: must be >= 0");
  }
  return ValidateSharing(group, field);
}

}  // namespace

v1::SimulatedCluster DefaultCluster() {
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* group = cluster.add_groups();
  group->set_name_prefix("sim");
  group->set_count(2);
  group->set_cpu_milli(64000);
  group->set_memory_mib(512 * 1024);
  group->set_gpus(8);
  group->set_gpu_model("A100-80GB");
  group->set_gpu_memory_mib(80 * 1024);
  return cluster;
}

v1::NodeSpec ExpandNode(const v1::SimulatedNodeGroup& group, int index) {
  v1::NodeSpec node;
  node.set_name(group.name_prefix() + "-" + std::to_string(index));
  node.set_cpu_milli(group.cpu_milli());
  node.set_memory_mib(group.memory_mib());
  *node.mutable_labels() = group.labels();
  *node.mutable_taints() = group.taints();
  node.set_zone(group.zone());
  for (int d = 0; d < group.gpus(); ++d) {
    v1::GpuDevice* gpu = node.add_gpus();
    gpu->set_index(d);
    gpu->set_model(group.gpu_model());
    gpu->set_memory_mib(group.gpu_memory_mib());
    gpu->set_nvlink_domain(group.gpus_per_nvlink_domain() > 0 ? d / group.gpus_per_nvlink_domain()
                                                              : 0);
    gpu->set_uuid("GPU-sim-" + node.name() + "-" + std::to_string(d));
    gpu->set_healthy(true);
    gpu->set_sharing(group.sharing());
    gpu->set_replicas(group.replicas());
    *gpu->mutable_mig_instances() = group.mig_instances();
    gpu->set_mig_managed(group.mig_managed());
    gpu->set_vgpu_type(group.vgpu_type());
  }
  return node;
}

namespace {

// The nodes of `group`, <prefix>-<first + i>.
void ExpandGroup(const v1::SimulatedNodeGroup& group, int first, std::vector<v1::NodeSpec>* nodes) {
  for (int i = 0; i < group.count(); ++i) nodes->push_back(ExpandNode(group, first + i));
}

plugin::PluginStatus ExpandChanges(const v1::SimulatedCluster& cluster,
                                   std::vector<NodeChange>* changes) {
  for (int c = 0; c < cluster.changes_size(); ++c) {
    const v1::SimulatedNodeChange& change = cluster.changes(c);
    const std::string field = "changes[" + std::to_string(c) + "].";
    if (change.at_ms() < 0) return Invalid(field + "at_ms: must be >= 0");
    if (change.first_index() < 0) return Invalid(field + "first_index: must be >= 0");
    NodeChange& out = changes->emplace_back();
    out.at_ms = change.at_ms();
    if (change.has_join() && change.join().count() > 0) {
      plugin::PluginStatus status = ValidateGroup(change.join(), field + "join.");
      if (!status.ok()) return status;
      ExpandGroup(change.join(), change.first_index(), &out.join);
    }
    for (int l = 0; l < change.leave_size(); ++l) {
      if (change.leave(l).empty()) {
        return Invalid(field + "leave[" + std::to_string(l) + "]: must not be empty");
      }
      out.leave.push_back(change.leave(l));
    }
    for (int e = 0; e < change.evict_size(); ++e) {
      if (change.evict(e).empty()) {
        return Invalid(field + "evict[" + std::to_string(e) + "]: must not be empty");
      }
      out.evict.push_back(change.evict(e));
    }
    for (int i = 0; i < change.interrupt_size(); ++i) {
      if (change.interrupt(i).empty()) {
        return Invalid(field + "interrupt[" + std::to_string(i) + "]: must not be empty");
      }
      out.interrupt.push_back(change.interrupt(i));
    }
    if (change.notice_ms() < 0) return Invalid(field + "notice_ms: must be >= 0");
    out.notice_ms = change.notice_ms() > 0 ? change.notice_ms() : kDefaultInterruptionNoticeMs;
    if (out.join.empty() && out.leave.empty() && out.evict.empty() && out.interrupt.empty()) {
      return Invalid(field +
                     "join, leave, evict, interrupt: a change must add, remove, evict or "
                     "interrupt at least one node");
    }
  }
  std::stable_sort(changes->begin(), changes->end(),
                   [](const NodeChange& a, const NodeChange& b) { return a.at_ms < b.at_ms; });
  return plugin::PluginStatus::Ok();
}

plugin::PluginStatus ExpandCapacity(const v1::SimulatedCluster& cluster,
                                    std::vector<CapacityGroup>* groups) {
  std::set<std::string> names;
  for (int c = 0; c < cluster.capacity_size(); ++c) {
    const v1::SimulatedCapacityGroup& config = cluster.capacity(c);
    const std::string field = "capacity[" + std::to_string(c) + "].";
    plugin::PluginStatus status = ValidateGroup(config.nodes(), field + "nodes.");
    if (!status.ok()) return status;
    if (!names.insert(config.nodes().name_prefix()).second) {
      return Invalid(field + "nodes.name_prefix: group '" + config.nodes().name_prefix() +
                     "' is defined twice");
    }
    if (config.price_per_hour() < 0) return Invalid(field + "price_per_hour: must be >= 0");
    if (config.min_nodes() < 0 || config.min_nodes() > config.nodes().count()) {
      return Invalid(field + "min_nodes: must be between 0 and nodes.count (" +
                     std::to_string(config.nodes().count()) + "), got " +
                     std::to_string(config.min_nodes()));
    }
    if (config.provision_delay_ms() < 0) {
      return Invalid(field + "provision_delay_ms: must be >= 0");
    }
    if (config.interrupt_after_ms() < 0) {
      return Invalid(field + "interrupt_after_ms: must be >= 0");
    }
    if (config.interruption_notice_ms() < 0) {
      return Invalid(field + "interruption_notice_ms: must be >= 0");
    }
    const v1::CapacityMarket market =
        config.market() == v1::CAPACITY_MARKET_UNSPECIFIED ? v1::ON_DEMAND : config.market();
    if (config.interrupt_after_ms() > 0 && market != v1::SPOT) {
      return Invalid(field + "interrupt_after_ms: only spot capacity is interrupted");
    }
    CapacityGroup& group = groups->emplace_back();
    group.nodes = config.nodes();
    group.group.set_name(config.nodes().name_prefix());
    *group.group.mutable_shape() = ExpandNode(config.nodes(), 0);
    group.group.mutable_shape()->set_name(config.nodes().name_prefix());
    group.group.set_price_per_hour(config.price_per_hour());
    group.group.set_min_nodes(config.min_nodes());
    group.group.set_max_nodes(config.nodes().count());
    group.group.set_market(market);
    group.provision_delay_ms = config.provision_delay_ms();
    group.provisions_fail = config.provisions_fail();
    group.interrupt_after_ms = config.interrupt_after_ms();
    group.interruption_notice_ms = config.interruption_notice_ms() > 0
                                       ? config.interruption_notice_ms()
                                       : kDefaultInterruptionNoticeMs;
  }
  return plugin::PluginStatus::Ok();
}

}  // namespace

plugin::PluginStatus ExpandCluster(const v1::SimulatedCluster& cluster,
                                   std::vector<v1::NodeSpec>* nodes) {
  std::vector<v1::NodeSpec> expanded;
  std::map<std::string, int> defined_by;  // node name -> group index.
  for (int g = 0; g < cluster.groups_size(); ++g) {
    const v1::SimulatedNodeGroup& group = cluster.groups(g);
    const std::string field = "groups[" + std::to_string(g) + "].";
    plugin::PluginStatus status = ValidateGroup(group, field);
    if (!status.ok()) return status;
    const size_t first = expanded.size();
    ExpandGroup(group, 0, &expanded);
    for (size_t i = first; i < expanded.size(); ++i) {
      auto [it, inserted] = defined_by.emplace(expanded[i].name(), g);
      if (!inserted) {
        return Invalid(field + "name_prefix: node '" + expanded[i].name() +
                       "' is already defined by groups[" + std::to_string(it->second) + "]");
      }
    }
  }
  *nodes = std::move(expanded);
  return plugin::PluginStatus::Ok();
}

plugin::PluginStatus ParseSimConfig(const std::string& config, SimConfig* out) {
  if (Blank(config)) return ExpandCluster(DefaultCluster(), &out->nodes);
  v1::SimulatedCluster cluster;
  // Unknown fields are errors: a misspelt key must not silently fall back to a default.
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(config, &cluster, options);
  if (!status.ok()) {
    return Invalid("config: not a tessera.v1.SimulatedCluster in protobuf JSON: " +
                   std::string(status.message()));
  }
  if (cluster.groups_size() == 0) {
    return Invalid(
        "groups: at least one group is required (an empty config means the default "
        "cluster)");
  }
  plugin::PluginStatus expanded = ExpandCluster(cluster, &out->nodes);
  if (!expanded.ok()) return expanded;
  out->rejecting_nodes = {cluster.rejecting_nodes().begin(), cluster.rejecting_nodes().end()};
  out->rejections_final = cluster.rejections_final();
  out->failing_partition_nodes = {cluster.failing_partition_nodes().begin(),
                                  cluster.failing_partition_nodes().end()};
  out->report_telemetry = cluster.report_telemetry();
  plugin::PluginStatus capacity = ExpandCapacity(cluster, &out->capacity);
  if (!capacity.ok()) return capacity;
  return ExpandChanges(cluster, &out->changes);
}

}  // namespace tessera::sim
