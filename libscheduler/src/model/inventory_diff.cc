#include "model/inventory_diff.h"

#include <map>

#include <google/protobuf/util/message_differencer.h>

namespace tessera {
namespace {

using google::protobuf::util::MessageDifferencer;

std::map<std::string, const v1::NodeSpec*> ByName(const std::vector<v1::NodeSpec>& nodes) {
  std::map<std::string, const v1::NodeSpec*> out;
  for (const v1::NodeSpec& node : nodes) out[node.name()] = &node;
  return out;
}

}  // namespace

InventoryDiff DiffInventory(const std::vector<v1::NodeSpec>& before,
                            const std::vector<v1::NodeSpec>& after) {
  const std::map<std::string, const v1::NodeSpec*> old_nodes = ByName(before);
  const std::map<std::string, const v1::NodeSpec*> new_nodes = ByName(after);
  InventoryDiff diff;
  for (const auto& [name, spec] : new_nodes) {
    auto old = old_nodes.find(name);
    if (old == old_nodes.end()) {
      diff.added.push_back(*spec);
    } else if (!MessageDifferencer::Equals(*old->second, *spec)) {
      diff.changed.push_back(*spec);
    }
  }
  for (const auto& [name, spec] : old_nodes) {
    if (new_nodes.count(name) == 0) diff.removed.push_back(name);
  }
  return diff;
}

}  // namespace tessera
