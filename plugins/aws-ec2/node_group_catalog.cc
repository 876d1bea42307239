#include "node_group_catalog.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "tessera/gpu/model_names.h"

namespace tessera::aws_ec2 {
namespace {

using plugin::PluginStatus;

PluginStatus Invalid(const std::string& field, const std::string& why) {
  return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, field + ": " + why);
}

// Fills `choice`'s shape from EC2's `info`, or says where the config disagrees.
PluginStatus Resolve(const aws::InstanceTypeInfo& info, const std::string& field,
                     InstanceTypeChoice* choice) {
  int gpus = 0;
  std::string model;
  int64_t gpu_memory_mib = 0;
  for (const aws::InstanceGpu& gpu : info.gpus) {
    gpus += gpu.count;
    model = model_names::FromDeviceName("NVIDIA " + gpu.name, gpu.memory_mib);
    gpu_memory_mib = gpu.memory_mib;
  }
  if (gpus == 0) return Invalid(field, choice->type + " has no GPU (DescribeInstanceTypes)");
  auto check = [&](const char* name, auto configured, auto actual) -> PluginStatus {
    using T = decltype(configured);
    if (configured != T{} && configured != actual) {
      std::string given, real;
      if constexpr (std::is_same_v<T, std::string>) {
        given = configured;
        real = actual;
      } else {
        given = std::to_string(configured);
        real = std::to_string(actual);
      }
      return Invalid(field + "." + name, "configured " + given + " but EC2 says " + choice->type +
                                             " has " + real + " (DescribeInstanceTypes)");
    }
    return PluginStatus::Ok();
  };
  PluginStatus status = check("gpus", choice->gpus, gpus);
  if (status.ok()) status = check("gpu_model", choice->gpu_model, model);
  if (status.ok()) status = check("gpu_memory_mib", choice->gpu_memory_mib, gpu_memory_mib);
  if (status.ok())
    status = check("cpu_milli", choice->cpu_milli, int64_t{info.default_vcpus} * 1000);
  if (status.ok()) status = check("memory_mib", choice->memory_mib, int64_t{info.memory_mib});
  if (!status.ok()) return status;
  choice->gpus = gpus;
  choice->gpu_model = model;
  choice->gpu_memory_mib = gpu_memory_mib;
  choice->cpu_milli = int64_t{info.default_vcpus} * 1000;
  choice->memory_mib = info.memory_mib;
  return PluginStatus::Ok();
}

}  // namespace

PluginStatus BuildCatalog(const Ec2ProviderConfig& config,
                          const std::vector<aws::InstanceTypeInfo>& ec2_types,
                          std::vector<CatalogGroup>* out) {
  std::map<std::string, const aws::InstanceTypeInfo*> by_name;
  for (const aws::InstanceTypeInfo& info : ec2_types) by_name[info.instance_type] = &info;
  std::vector<CatalogGroup> groups;
  for (size_t g = 0; g < config.node_groups.size(); ++g) {
    CatalogGroup entry;
    entry.config = config.node_groups[g];
    const std::string field = "node_groups[" + std::to_string(g) + "]";
    v1::NodeSpec& shape = *entry.group.mutable_shape();
    double price = 0;
    for (size_t t = 0; t < entry.config.instance_types.size(); ++t) {
      InstanceTypeChoice& choice = entry.config.instance_types[t];
      const std::string tf = field + ".instance_types[" + std::to_string(t) + "]";
      auto found = by_name.find(choice.type);
      if (found == by_name.end()) {
        return Invalid(tf + ".type", "EC2 does not list '" + choice.type + "' in " + config.region);
      }
      PluginStatus status = Resolve(*found->second, tf, &choice);
      if (!status.ok()) return status;
      const InstanceTypeChoice& first = entry.config.instance_types[0];
      if (choice.gpus != first.gpus || choice.gpu_model != first.gpu_model) {
        return Invalid(tf, choice.type + " has " + std::to_string(choice.gpus) + " x " +
                               choice.gpu_model + ", " + first.type + " (the group's first) " +
                               std::to_string(first.gpus) + " x " + first.gpu_model +
                               ": the types of a group must offer the same GPUs");
      }
      shape.set_cpu_milli(t == 0 ? choice.cpu_milli
                                 : std::min(shape.cpu_milli(), choice.cpu_milli));
      shape.set_memory_mib(t == 0 ? choice.memory_mib
                                  : std::min(shape.memory_mib(), choice.memory_mib));
      price = std::max(price, choice.on_demand_price_per_hour);
    }
    const InstanceTypeChoice& first = entry.config.instance_types[0];
    int64_t gpu_memory = first.gpu_memory_mib;
    for (const InstanceTypeChoice& c : entry.config.instance_types) {
      gpu_memory = std::min(gpu_memory, c.gpu_memory_mib);
    }
    shape.set_name(entry.config.name);
    for (int i = 0; i < first.gpus; ++i) {
      v1::GpuDevice* gpu = shape.add_gpus();
      gpu->set_index(i);
      gpu->set_model(first.gpu_model);
      gpu->set_memory_mib(gpu_memory);
      gpu->set_healthy(true);
    }
    for (const auto& [key, value] : entry.config.labels) (*shape.mutable_labels())[key] = value;
    (*shape.mutable_labels())[kNodeGroupLabel] = entry.config.name;
    if (entry.config.zones.size() == 1) shape.set_zone(entry.config.zones[0].zone);
    entry.group.set_name(entry.config.name);
    entry.group.set_price_per_hour(entry.config.market == v1::ON_DEMAND ? price : 0);
    entry.group.set_min_nodes(entry.config.min_nodes);
    entry.group.set_max_nodes(entry.config.max_nodes);
    entry.group.set_market(entry.config.market);
    groups.push_back(std::move(entry));
  }
  *out = std::move(groups);
  return PluginStatus::Ok();
}

PluginStatus ApplySpotPrices(const std::vector<aws::SpotPrice>& prices,
                             std::vector<CatalogGroup>* groups) {
  // The newest price of each (type, zone): EC2 lists the history newest first, but say so here.
  std::map<std::pair<std::string, std::string>, const aws::SpotPrice*> newest;
  for (const aws::SpotPrice& price : prices) {
    auto& slot = newest[{price.instance_type, price.availability_zone}];
    if (slot == nullptr || price.timestamp > slot->timestamp) slot = &price;
  }
  for (size_t g = 0; g < groups->size(); ++g) {
    CatalogGroup& entry = (*groups)[g];
    if (entry.config.market != v1::SPOT) continue;
    double highest = -1;
    for (const InstanceTypeChoice& type : entry.config.instance_types) {
      for (const ZoneChoice& zone : entry.config.zones) {
        auto found = newest.find({type.type, zone.zone});
        if (found != newest.end()) highest = std::max(highest, found->second->spot_price_usd);
      }
    }
    const double cap = entry.config.max_spot_price.empty()
                           ? -1
                           : std::strtod(entry.config.max_spot_price.c_str(), nullptr);
    if (highest < 0 && cap < 0) {
      return Invalid("node_groups[" + std::to_string(g) + "]",
                     "EC2 reports no spot price for its types in its zones "
                     "(DescribeSpotPriceHistory) and no max_spot_price is set");
    }
    entry.group.set_price_per_hour(highest < 0 ? cap
                                               : (cap < 0 ? highest : std::min(highest, cap)));
  }
  return PluginStatus::Ok();
}

}  // namespace tessera::aws_ec2
