// DiffRelist: what changed while a watch was away. After a 410 the list-watch loop relists, and
// the consumer must see exactly the events it missed, none twice: objects in the new list it did
// not know are added, objects whose resourceVersion changed are modified, objects it knew that
// the list lacks were deleted (handed over in their last known state, as a DELETED event
// would carry), and an object whose uid changed under the same name was deleted and made anew
// (deleted, then added). Objects are keyed by namespace/name. Pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::kube {

// Objects by "namespace/name" ("name" for cluster-scoped ones).
using ObjectStore = std::map<std::string, nlohmann::json>;

std::string ObjectKey(const nlohmann::json& object);

struct RelistDiff {
  std::vector<nlohmann::json> added;
  std::vector<nlohmann::json> modified;
  std::vector<nlohmann::json> deleted;
  bool empty() const { return added.empty() && modified.empty() && deleted.empty(); }
};

RelistDiff DiffRelist(const ObjectStore& known, const std::vector<nlohmann::json>& listed);

}  // namespace tessera::kube
