#include "ec2_provider_config.h"

#include <boost/beast/core/detail/base64.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

namespace tessera::aws_ec2 {
namespace {

using nlohmann::json;
using plugin::PluginStatus;

PluginStatus Invalid(const std::string& field, const std::string& why) {
  return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, field + ": " + why);
}

// Refuses keys of `object` not in `known`, naming the first.
PluginStatus OnlyKnown(const json& object, const std::string& field,
                       const std::set<std::string>& known) {
  for (const auto& [key, value] : object.items()) {
    if (known.count(key) != 0) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return Invalid(field.empty() ? key : field + "." + key, "unknown field (known: " + list + ")");
  }
  return PluginStatus::Ok();
}

PluginStatus String(const json& object, const std::string& field, const std::string& key,
                    std::string* out) {
  auto found = object.find(key);
  if (found == object.end()) return PluginStatus::Ok();
  if (!found->is_string()) return Invalid(field + key, "must be a string");
  *out = found->get<std::string>();
  return PluginStatus::Ok();
}

PluginStatus Integer(const json& object, const std::string& field, const std::string& key,
                     int64_t low, int64_t high, int64_t* out) {
  auto found = object.find(key);
  if (found == object.end()) return PluginStatus::Ok();
  if (!found->is_number_integer() || found->get<int64_t>() < low || found->get<int64_t>() > high) {
    return Invalid(field + key, "must be an integer from " + std::to_string(low) + " to " +
                                    std::to_string(high) + ", got " + found->dump());
  }
  *out = found->get<int64_t>();
  return PluginStatus::Ok();
}

PluginStatus Int(const json& object, const std::string& field, const std::string& key, int low,
                 int high, int* out) {
  int64_t value = *out;
  PluginStatus status = Integer(object, field, key, low, high, &value);
  *out = static_cast<int>(value);
  return status;
}

PluginStatus Bool(const json& object, const std::string& field, const std::string& key, bool* out) {
  auto found = object.find(key);
  if (found == object.end()) return PluginStatus::Ok();
  if (!found->is_boolean()) return Invalid(field + key, "must be true or false");
  *out = found->get<bool>();
  return PluginStatus::Ok();
}

#define RETURN_IF_ERROR(expr)          \
  do {                                 \
    PluginStatus status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (false)

PluginStatus ParseInstanceType(const json& item, const std::string& field,
                               InstanceTypeChoice* out) {
  if (item.is_string()) {
    out->type = item.get<std::string>();
  } else if (item.is_object()) {
    RETURN_IF_ERROR(OnlyKnown(item, field,
                              {"type", "on_demand_price_per_hour", "gpus", "gpu_model",
                               "gpu_memory_mib", "cpu_milli", "memory_mib"}));
    RETURN_IF_ERROR(String(item, field + ".", "type", &out->type));
    if (auto price = item.find("on_demand_price_per_hour"); price != item.end()) {
      if (!price->is_number() || price->get<double>() < 0) {
        return Invalid(field + ".on_demand_price_per_hour", "must be a number >= 0");
      }
      out->on_demand_price_per_hour = price->get<double>();
    }
    RETURN_IF_ERROR(Int(item, field + ".", "gpus", 0, 64, &out->gpus));
    RETURN_IF_ERROR(String(item, field + ".", "gpu_model", &out->gpu_model));
    RETURN_IF_ERROR(Integer(item, field + ".", "gpu_memory_mib", 0, 1 << 24, &out->gpu_memory_mib));
    RETURN_IF_ERROR(Integer(item, field + ".", "cpu_milli", 0, 1'000'000'000, &out->cpu_milli));
    RETURN_IF_ERROR(Integer(item, field + ".", "memory_mib", 0, 1LL << 32, &out->memory_mib));
  } else {
    return Invalid(field, "must be an instance type name or an object with \"type\"");
  }
  if (out->type.empty()) return Invalid(field + ".type", "must not be empty");
  return PluginStatus::Ok();
}

PluginStatus ReadUserData(const std::string& path, const std::string& field, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Invalid(field, "cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  const std::string raw = text.str();
  if (raw.size() > 16 * 1024) return Invalid(field, "'" + path + "' is over EC2's 16 KiB limit");
  out->resize(boost::beast::detail::base64::encoded_size(raw.size()));
  out->resize(boost::beast::detail::base64::encode(out->data(), raw.data(), raw.size()));
  return PluginStatus::Ok();
}

PluginStatus ParseGroup(const json& item, const std::string& field, NodeGroupConfig* out) {
  if (!item.is_object()) return Invalid(field, "must be an object");
  RETURN_IF_ERROR(
      OnlyKnown(item, field,
                {"name", "market", "instance_types", "zones", "image_id", "launch_template",
                 "max_spot_price", "min_nodes", "max_nodes", "labels", "user_data_file"}));
  const std::string f = field + ".";
  RETURN_IF_ERROR(String(item, f, "name", &out->name));
  if (out->name.empty()) return Invalid(f + "name", "must not be empty");
  std::string market;
  RETURN_IF_ERROR(String(item, f, "market", &market));
  if (market == "spot") {
    out->market = v1::SPOT;
  } else if (market == "on-demand") {
    out->market = v1::ON_DEMAND;
  } else {
    return Invalid(f + "market", "must be \"spot\" or \"on-demand\", got \"" + market + "\"");
  }
  auto types = item.find("instance_types");
  if (types == item.end() || !types->is_array() || types->empty()) {
    return Invalid(f + "instance_types", "must be a non-empty list");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < types->size(); ++i) {
    InstanceTypeChoice choice;
    const std::string tf = f + "instance_types[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(ParseInstanceType((*types)[i], tf, &choice));
    if (!seen.insert(choice.type).second) return Invalid(tf, "'" + choice.type + "' listed twice");
    if (out->market == v1::ON_DEMAND && choice.on_demand_price_per_hour < 0) {
      return Invalid(tf + ".on_demand_price_per_hour",
                     "required in an on-demand group (USD per hour of " + choice.type + ")");
    }
    out->instance_types.push_back(std::move(choice));
  }
  auto zones = item.find("zones");
  if (zones == item.end() || !zones->is_array() || zones->empty()) {
    return Invalid(f + "zones", "must be a non-empty list");
  }
  for (size_t i = 0; i < zones->size(); ++i) {
    const json& z = (*zones)[i];
    const std::string zf = f + "zones[" + std::to_string(i) + "]";
    ZoneChoice zone;
    if (z.is_string()) {
      zone.zone = z.get<std::string>();
    } else if (z.is_object()) {
      RETURN_IF_ERROR(OnlyKnown(z, zf, {"zone", "subnet"}));
      RETURN_IF_ERROR(String(z, zf + ".", "zone", &zone.zone));
      RETURN_IF_ERROR(String(z, zf + ".", "subnet", &zone.subnet_id));
    } else {
      return Invalid(zf, "must be a zone name or an object with \"zone\"");
    }
    if (zone.zone.empty()) return Invalid(zf + ".zone", "must not be empty");
    out->zones.push_back(std::move(zone));
  }
  RETURN_IF_ERROR(String(item, f, "image_id", &out->image_id));
  if (auto t = item.find("launch_template"); t != item.end()) {
    if (!t->is_object()) return Invalid(f + "launch_template", "must be an object");
    RETURN_IF_ERROR(OnlyKnown(*t, f + "launch_template", {"id", "name", "version"}));
    aws::LaunchTemplateRef ref;
    RETURN_IF_ERROR(String(*t, f + "launch_template.", "id", &ref.id));
    RETURN_IF_ERROR(String(*t, f + "launch_template.", "name", &ref.name));
    RETURN_IF_ERROR(String(*t, f + "launch_template.", "version", &ref.version));
    if (ref.id.empty() == ref.name.empty()) {
      return Invalid(f + "launch_template", "give exactly one of \"id\" and \"name\"");
    }
    out->launch_template = ref;
  }
  if (out->image_id.empty() && !out->launch_template) {
    return Invalid(f + "image_id", "give an image_id or a launch_template");
  }
  RETURN_IF_ERROR(String(item, f, "max_spot_price", &out->max_spot_price));
  if (!out->max_spot_price.empty()) {
    if (out->market != v1::SPOT) return Invalid(f + "max_spot_price", "only for a spot group");
    char* end = nullptr;
    const double price = std::strtod(out->max_spot_price.c_str(), &end);
    if (*end != '\0' || !(price > 0)) {
      return Invalid(f + "max_spot_price", "must be a price in USD > 0, as \"2.50\"");
    }
  }
  RETURN_IF_ERROR(Int(item, f, "min_nodes", 0, 10000, &out->min_nodes));
  RETURN_IF_ERROR(Int(item, f, "max_nodes", 0, 10000, &out->max_nodes));
  if (out->max_nodes < 1 || out->max_nodes < out->min_nodes) {
    return Invalid(f + "max_nodes", "must be >= 1 and >= min_nodes (" +
                                        std::to_string(out->min_nodes) + "), got " +
                                        std::to_string(out->max_nodes));
  }
  if (auto labels = item.find("labels"); labels != item.end()) {
    if (!labels->is_object()) return Invalid(f + "labels", "must be an object of strings");
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) return Invalid(f + "labels." + key, "must be a string");
      out->labels[key] = value.get<std::string>();
    }
  }
  std::string user_data_file;
  RETURN_IF_ERROR(String(item, f, "user_data_file", &user_data_file));
  if (!user_data_file.empty()) {
    RETURN_IF_ERROR(ReadUserData(user_data_file, f + "user_data_file", &out->user_data_base64));
  }
  return PluginStatus::Ok();
}

}  // namespace

PluginStatus ParseEc2ProviderConfig(const std::string& text, Ec2ProviderConfig* out) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Invalid("config", "not valid JSON");
  if (!root.is_object()) return Invalid("config", "must be a JSON object");
  RETURN_IF_ERROR(OnlyKnown(
      root, "",
      {"cluster", "region", "endpoint", "ca_file", "credentials", "join", "poll_interval_ms",
       "max_attempts", "initial_backoff_ms", "max_backoff_ms", "node_groups"}));
  Ec2ProviderConfig config;
  RETURN_IF_ERROR(String(root, "", "cluster", &config.cluster));
  if (config.cluster.empty()) {
    return Invalid("cluster",
                   "required: the tessera:cluster tag that marks this provider's "
                   "instances (unique per scheduler)");
  }
  RETURN_IF_ERROR(String(root, "", "region", &config.region));
  if (config.region.empty()) return Invalid("region", "must not be empty");
  RETURN_IF_ERROR(String(root, "", "endpoint", &config.endpoint));
  RETURN_IF_ERROR(String(root, "", "ca_file", &config.ca_file));
  if (auto c = root.find("credentials"); c != root.end()) {
    if (!c->is_object()) return Invalid("credentials", "must be an object");
    RETURN_IF_ERROR(
        OnlyKnown(*c, "credentials", {"profile", "shared_credentials_file", "imds_endpoint"}));
    RETURN_IF_ERROR(String(*c, "credentials.", "profile", &config.credentials.profile));
    RETURN_IF_ERROR(String(*c, "credentials.", "shared_credentials_file",
                           &config.credentials.shared_credentials_file));
    RETURN_IF_ERROR(String(*c, "credentials.", "imds_endpoint", &config.credentials.imds_endpoint));
  }
  if (auto j = root.find("join"); j != root.end()) {
    if (!j->is_object()) return Invalid("join", "must be an object");
    RETURN_IF_ERROR(OnlyKnown(*j, "join", {"kubeconfig", "context", "in_cluster", "timeout_s"}));
    RETURN_IF_ERROR(String(*j, "join.", "kubeconfig", &config.join.kubeconfig));
    RETURN_IF_ERROR(String(*j, "join.", "context", &config.join.context));
    RETURN_IF_ERROR(Bool(*j, "join.", "in_cluster", &config.join.in_cluster));
    RETURN_IF_ERROR(Integer(*j, "join.", "timeout_s", 1, 86400, &config.join.timeout_s));
  }
  RETURN_IF_ERROR(Integer(root, "", "poll_interval_ms", 10, 600'000, &config.poll_interval_ms));
  RETURN_IF_ERROR(Int(root, "", "max_attempts", 1, 20, &config.max_attempts));
  RETURN_IF_ERROR(Integer(root, "", "initial_backoff_ms", 1, 60'000, &config.initial_backoff_ms));
  RETURN_IF_ERROR(Integer(root, "", "max_backoff_ms", 1, 600'000, &config.max_backoff_ms));
  auto groups = root.find("node_groups");
  if (groups == root.end() || !groups->is_array() || groups->empty()) {
    return Invalid("node_groups", "must be a non-empty list");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < groups->size(); ++i) {
    NodeGroupConfig group;
    const std::string field = "node_groups[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(ParseGroup((*groups)[i], field, &group));
    if (!names.insert(group.name).second) {
      return Invalid(field + ".name", "'" + group.name + "' is the name of an earlier group");
    }
    config.node_groups.push_back(std::move(group));
  }
  *out = std::move(config);
  return PluginStatus::Ok();
}

}  // namespace tessera::aws_ec2
