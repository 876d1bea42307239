// MIG layout planning: how to re-partition one GPU in MIG mode so that pending tasks waiting
// for particular GPU-instance profiles find free instances of those profiles.
//
// A MIG GPU is carved into GPU instances (tessera/gpu/mig_profiles.h). Tasks run on instances; an
// instance a task holds is busy, the others are free. When pending tasks want profiles the
// current layout does not offer free, the GPU can be re-partitioned: free instances are
// destroyed and new ones created, and busy ones may be destroyed too if their task is stopped
// ("drained") first, at a cost the caller states. The planner compares every valid layout of the
// GPU (2,319, most leaving some slices unassigned; enumerated once) and proposes the one that
// offers the most wanted instances free, earlier wanted entries first, while keeping every busy
// instance it does not drain exactly where it is. Among equally good layouts it prefers, in order:
// the lower drain cost; fewer instances destroyed or created; more compute slices left unassigned;
// room for a larger instance to be added later; and finally the layout that leaves the low memory
// slices (where 4-slice and 7-slice instances must start) unassigned the longest, so the result
// is deterministic.
//
// Everything here is a pure function of its arguments; the layout table is built on first use
// (thread-safe static initialisation) and never changes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tessera/gpu/mig_profiles.h"

namespace tessera {

// One GPU in MIG mode as the planner sees it.
struct MigGpuView {
  std::vector<mig::Instance> instances;  // current layout (valid).
  std::vector<bool> busy;                // parallel to instances: a task holds it.
  // Parallel to instances: the cost of stopping the task on a busy instance (e.g. lost
  // GPU-seconds), or -1 when it may not be drained. Ignored for free instances.
  std::vector<int64_t> drain_cost;
};

struct MigLayoutPlan {
  // The proposed full layout, valid and sorted by start. It contains every busy instance that is
  // kept, at its position.
  std::vector<mig::Instance> layout;
  std::vector<int> drained;  // indexes into MigGpuView::instances of busy instances destroyed.
  int satisfied = 0;         // how many of the wanted instances the new layout offers free.
  int64_t drain_cost = 0;    // sum of the drained instances' costs.
};

// Proposes a re-partitioning of `gpu` so that as many `wanted` instances as possible are free in
// the new layout. Each entry of `wanted` is one instance wanted by a pending task; earlier entries
// matter more. Entries are matched to free instances of exactly their kind, in order, so a layout
// satisfying entry i beats one satisfying only later entries, whatever their number.
//
// Busy instances stay where they are unless the layout needs their place; such an instance is
// drained only when its drain_cost is >= 0 and the drained instances' costs add up to at most
// `max_drain_cost` (a negative `max_drain_cost` forbids draining). A busy instance the new
// layout still contains, same kind and start, stays busy: the planner does not drain a task to
// hand its unchanged instance to a wanted entry (that is preemption, not re-partitioning).
//
// Only layouts that satisfy strictly more wanted entries than the current layout's free
// instances already do (counted the same way) are considered; returns nullopt when there is
// none. Preconditions (debug-checked): gpu.instances is a valid layout and busy and drain_cost
// have its size.
std::optional<MigLayoutPlan> PlanMigLayout(const MigGpuView& gpu,
                                           std::span<const mig::ProfileKind> wanted,
                                           int64_t max_drain_cost);

// Every valid layout of one MIG GPU, each sorted by start, the empty layout included, in the
// planner's enumeration order.
std::span<const std::vector<mig::Instance>> ValidMigLayouts();

}  // namespace tessera
