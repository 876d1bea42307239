// Progressive filling with a DrfSorter: the allocation DRF makes when users submit identical
// tasks without end. Used by the fairness tests to check DRF's properties on many instances.
#pragma once

#include <vector>

#include "fairshare/drf_sorter.h"
#include "model/resource_vector.h"

namespace tessera::testing {

struct DrfUser {
  ResourceVector task;  // what one task needs.
  double weight = 1.0;
  int max_tasks = 1 << 30;  // how many tasks the user has.
};

// Serves the user with the smallest weighted dominant share while its next task fits; a user
// whose task no longer fits stops competing. Returns the number of tasks each user gets.
template <typename Sorter = DrfSorter>
std::vector<int> ProgressiveFilling(const ResourceVector& capacity,
                                    const std::vector<DrfUser>& users) {
  Sorter sorter;
  sorter.SetCapacity(capacity);
  std::vector<int> tasks(users.size(), 0);
  for (size_t i = 0; i < users.size(); ++i) {
    sorter.Add(static_cast<uint32_t>(i), users[i].weight);
    if (users[i].max_tasks > 0) sorter.Activate(static_cast<uint32_t>(i));
  }
  ResourceVector used;
  while (auto next = sorter.First()) {
    const DrfUser& u = users[*next];
    if (!(used + u.task).FitsWithin(capacity)) {
      sorter.Deactivate(*next);
      continue;
    }
    used += u.task;
    ++tasks[*next];
    const ResourceVector held = u.task * tasks[*next];
    sorter.UpdateAllocation(*next, held, held);
    if (tasks[*next] >= u.max_tasks) sorter.Deactivate(*next);
  }
  return tasks;
}

}  // namespace tessera::testing
