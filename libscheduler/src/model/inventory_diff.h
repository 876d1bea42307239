// InventoryDiff: what changed between two reports of a backend's nodes.
//
// A backend reports its whole inventory (on_inventory), at start and again whenever it says the
// inventory changed (a cloud node joined, a Kubernetes node was deleted, a GPU's MIG layout was
// changed by hand). The scheduler applies the difference, not the report: a node in both
// reports with the same spec is left alone, so its running tasks and its flags stay as they are.
//
//   InventoryDiff diff = DiffInventory(previous, current);
//   // diff.added: new names; diff.changed: same name, another spec; diff.removed: names gone.
//
// Each list is in name order, so applying a diff is deterministic whatever order the backend
// listed its nodes in. A name listed twice in one report counts once (the last spec wins), as
// the engine would refuse the second anyway.
#pragma once

#include <string>
#include <vector>

#include "tessera/v1/node.pb.h"

namespace tessera {

struct InventoryDiff {
  std::vector<v1::NodeSpec> added;
  // The new spec of each. Whether it changes what the scheduler uses is the engine's to judge:
  // a MIG layout the scheduler applied itself comes back as a changed report, for instance.
  std::vector<v1::NodeSpec> changed;
  std::vector<std::string> removed;

  bool empty() const { return added.empty() && changed.empty() && removed.empty(); }
};

InventoryDiff DiffInventory(const std::vector<v1::NodeSpec>& before,
                            const std::vector<v1::NodeSpec>& after);

}  // namespace tessera
