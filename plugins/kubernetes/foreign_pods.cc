#include "foreign_pods.h"

#include <algorithm>
#include <optional>

#include "json_fields.h"
#include "quantity.h"

namespace tessera::kubernetes {
namespace {

using nlohmann::json;

std::optional<int64_t> MilliOf(const json& value) {
  if (value.is_string()) return QuantityMilli(value.get<std::string>());
  if (value.is_number_integer()) return QuantityMilli(std::to_string(value.get<int64_t>()));
  return std::nullopt;
}

// One container's request per resource: its requests, and its limits where it has no request.
ResourceMilli ContainerRequest(const json& container) {
  ResourceMilli out;
  const json& resources = ObjectAt(container, "resources");
  for (const char* part : {"limits", "requests"}) {  // requests last: they win.
    for (const auto& [name, value] : ObjectAt(resources, part).items()) {
      if (const std::optional<int64_t> milli = MilliOf(value); milli && *milli > 0) {
        out[name] = *milli;
      }
    }
  }
  return out;
}

const json& ArrayAt(const json& object, const char* key) {
  static const json kEmpty = json::array();
  const json& v = FieldAt(object, key);
  return v.is_array() ? v : kEmpty;
}

}  // namespace

ResourceMilli PodRequestMilli(const json& pod) {
  const json& spec = ObjectAt(pod, "spec");
  ResourceMilli total;
  for (const json& container : ArrayAt(spec, "containers")) {
    for (const auto& [name, milli] : ContainerRequest(container)) total[name] += milli;
  }
  // Init containers run one at a time before the others: the largest one bounds them.
  for (const json& container : ArrayAt(spec, "initContainers")) {
    for (const auto& [name, milli] : ContainerRequest(container)) {
      total[name] = std::max(total[name], milli);
    }
  }
  for (const auto& [name, value] : ObjectAt(spec, "overhead").items()) {
    if (const std::optional<int64_t> milli = MilliOf(value); milli && *milli > 0) {
      total[name] += *milli;
    }
  }
  return total;
}

json AllocatableLess(const json& node, const ResourceMilli& used) {
  json out = node;
  if (!out.is_object() || !out.contains("status") || !out["status"].is_object()) return out;
  json& allocatable = out["status"]["allocatable"];
  if (!allocatable.is_object()) return out;
  for (const auto& [name, milli] : used) {
    const auto it = allocatable.find(name);
    if (it == allocatable.end()) continue;  // nothing offered of it to take from.
    const std::optional<int64_t> offered = MilliOf(*it);
    if (!offered) continue;  // NodeFromKube says why the node is not offered.
    // Whole units where it is whole ("274877906944", not "...000m"): reading thousandths back
    // goes through a decimal fraction that would lose a MiB to rounding.
    const int64_t left = std::max<int64_t>(0, *offered - milli);
    *it = left % 1000 == 0 ? std::to_string(left / 1000) : MilliQuantity(left);
  }
  return out;
}

std::vector<std::string> ForeignPods::Update(const json& pod, bool deleted) {
  const json& metadata = MetadataOf(pod);
  const std::string uid = StringAt(metadata, "uid");
  if (uid.empty()) return {};
  const std::string node = StringAt(ObjectAt(pod, "spec"), "nodeName");
  const std::string phase = StringAt(ObjectAt(pod, "status"), "phase");
  if (deleted || node.empty() || phase == "Succeeded" || phase == "Failed") return Forget(uid);
  ResourceMilli request = PodRequestMilli(pod);
  std::vector<std::string> changed;
  auto it = pods_.find(uid);
  if (it != pods_.end()) {
    if (it->second.node == node && it->second.request == request) return {};
    Add(it->second.node, it->second.request, -1);
    changed.push_back(it->second.node);
    pods_.erase(it);
  }
  Add(node, request, +1);
  if (changed.empty() || changed[0] != node) changed.push_back(node);
  pods_[uid] = Counted{node, std::move(request)};
  return changed;
}

std::vector<std::string> ForeignPods::Forget(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return {};
  const std::string node = it->second.node;
  Add(node, it->second.request, -1);
  pods_.erase(it);
  return {node};
}

const ResourceMilli* ForeignPods::On(const std::string& node) const {
  const auto it = used_.find(node);
  return it == used_.end() ? nullptr : &it->second;
}

void ForeignPods::Add(const std::string& node, const ResourceMilli& request, int sign) {
  ResourceMilli& used = used_[node];
  for (const auto& [name, milli] : request) {
    used[name] += sign * milli;
    if (used[name] <= 0) used.erase(name);
  }
  if (used.empty()) used_.erase(node);
}

}  // namespace tessera::kubernetes
