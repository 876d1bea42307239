#include "kube/relist_diff.h"

#include <set>

namespace tessera::kube {

using json = nlohmann::json;

namespace {

std::string Field(const json& object, const json::json_pointer& pointer) {
  return object.value(pointer, std::string());
}

}  // namespace

std::string ObjectKey(const json& object) {
  const std::string name = Field(object, "/metadata/name"_json_pointer);
  const std::string namespace_name = Field(object, "/metadata/namespace"_json_pointer);
  return namespace_name.empty() ? name : namespace_name + "/" + name;
}

RelistDiff DiffRelist(const ObjectStore& known, const std::vector<json>& listed) {
  RelistDiff diff;
  std::set<std::string> seen;
  for (const json& object : listed) {
    const std::string key = ObjectKey(object);
    seen.insert(key);
    const auto before = known.find(key);
    if (before == known.end()) {
      diff.added.push_back(object);
      continue;
    }
    const auto uid = "/metadata/uid"_json_pointer;
    if (Field(before->second, uid) != Field(object, uid)) {
      diff.deleted.push_back(before->second);
      diff.added.push_back(object);
      continue;
    }
    const auto rv = "/metadata/resourceVersion"_json_pointer;
    if (Field(before->second, rv) != Field(object, rv)) diff.modified.push_back(object);
  }
  for (const auto& [key, object] : known) {
    if (seen.count(key) == 0) diff.deleted.push_back(object);
  }
  return diff;
}

}  // namespace tessera::kube
