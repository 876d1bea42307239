#include "placement/mig_layout_planner.h"

#include <algorithm>
#include <array>
#include <utility>

#include "common/check.h"

namespace tessera {
namespace {

using mig::Instance;
using mig::ProfileKind;

// Walks the memory slices from 0 up: at each position either an instance of some kind starts
// there (and the walk continues after its placement) or the slice is left unassigned. A layout
// is reached by exactly one walk, so each appears once, its instances sorted by start.
void EnumerateFrom(int position, std::vector<Instance>& layout,
                   std::vector<std::vector<Instance>>& out) {
  if (position >= mig::kMemorySlices) {
    out.push_back(layout);
    return;
  }
  for (int k = 0; k < mig::kNumProfileKinds; ++k) {
    const auto kind = static_cast<ProfileKind>(k);
    layout.push_back({kind, static_cast<uint8_t>(position)});
    if (mig::IsValidLayout(layout)) {
      EnumerateFrom(position + mig::Shape(kind).memory_slices, layout, out);
    }
    layout.pop_back();
  }
  EnumerateFrom(position + 1, layout, out);
}

bool Contains(std::span<const Instance> layout, const Instance& instance) {
  return std::find(layout.begin(), layout.end(), instance) != layout.end();
}

// What the tie-breaks need of a layout, independent of the GPU being planned.
struct LayoutTraits {
  int unassigned_compute = 0;
  // Compute slices of the largest instance that could still be added without moving anything:
  // of two layouts that serve the same tasks, keep room for the bigger future request.
  int largest_addable = 0;
};

const std::vector<LayoutTraits>& Traits() {
  static const std::vector<LayoutTraits> traits = [] {
    const std::span<const std::vector<Instance>> layouts = ValidMigLayouts();
    std::vector<LayoutTraits> out(layouts.size());
    std::vector<Instance> grown;
    for (size_t i = 0; i < layouts.size(); ++i) {
      int compute = 0;
      for (const Instance& instance : layouts[i])
        compute += mig::Shape(instance.kind).compute_slices;
      out[i].unassigned_compute = mig::kComputeSlices - compute;
      for (int k = 0; k < mig::kNumProfileKinds; ++k) {
        const auto kind = static_cast<ProfileKind>(k);
        for (int start = 0; start < mig::kMemorySlices; ++start) {
          grown = layouts[i];
          grown.push_back({kind, static_cast<uint8_t>(start)});
          if (mig::IsValidLayout(grown)) {
            out[i].largest_addable =
                std::max(out[i].largest_addable, mig::Shape(kind).compute_slices);
          }
        }
      }
    }
    return out;
  }();
  return traits;
}

// Matches `wanted` in order against the free instances of `layout` (those not in `occupied`),
// kind for kind. Returns how many entries matched; `matched` says which.
int MatchWanted(std::span<const Instance> layout, std::span<const Instance> occupied,
                std::span<const ProfileKind> wanted, std::vector<bool>& matched) {
  std::array<int, mig::kNumProfileKinds> free{};
  for (const Instance& instance : layout) {
    if (!Contains(occupied, instance)) ++free[static_cast<int>(instance.kind)];
  }
  matched.assign(wanted.size(), false);
  int count = 0;
  for (size_t j = 0; j < wanted.size(); ++j) {
    int& available = free[static_cast<int>(wanted[j])];
    if (available > 0) {
      --available;
      matched[j] = true;
      ++count;
    }
  }
  return count;
}

// One candidate layout scored against the GPU being planned.
struct Score {
  std::vector<bool> matched;
  int64_t drain_cost = 0;
  int changes = 0;
  int unassigned_compute = 0;
  int largest_addable = 0;
};

// True when `a` is at least as good a plan as `b`. Candidates are visited in enumeration order,
// so on equal scores the later one wins: it leaves the low memory slices, where the 4-slice and
// 7-slice instances must start, unassigned the longest.
bool AtLeastAsGood(const Score& a, const Score& b) {
  if (a.matched != b.matched) return a.matched > b.matched;
  if (a.drain_cost != b.drain_cost) return a.drain_cost < b.drain_cost;
  if (a.changes != b.changes) return a.changes < b.changes;
  if (a.unassigned_compute != b.unassigned_compute) {
    return a.unassigned_compute > b.unassigned_compute;
  }
  return a.largest_addable >= b.largest_addable;
}

}  // namespace

std::span<const std::vector<Instance>> ValidMigLayouts() {
  static const std::vector<std::vector<Instance>> layouts = [] {
    std::vector<std::vector<Instance>> out;
    std::vector<Instance> layout;
    EnumerateFrom(0, layout, out);
    return out;
  }();
  return layouts;
}

std::optional<MigLayoutPlan> PlanMigLayout(const MigGpuView& gpu,
                                           std::span<const ProfileKind> wanted,
                                           int64_t max_drain_cost) {
  TESSERA_DCHECK(gpu.busy.size() == gpu.instances.size());
  TESSERA_DCHECK(gpu.drain_cost.size() == gpu.instances.size());
  TESSERA_DCHECK(mig::IsValidLayout(gpu.instances));

  std::vector<Instance> busy;
  for (size_t i = 0; i < gpu.instances.size(); ++i) {
    if (gpu.busy[i]) busy.push_back(gpu.instances[i]);
  }
  std::vector<bool> matched;
  const int current = MatchWanted(gpu.instances, busy, wanted, matched);

  const std::span<const std::vector<Instance>> layouts = ValidMigLayouts();
  const std::vector<LayoutTraits>& traits = Traits();
  std::optional<MigLayoutPlan> best;
  Score best_score;
  std::vector<int> drained;
  for (size_t c = 0; c < layouts.size(); ++c) {
    const std::vector<Instance>& layout = layouts[c];
    // Busy instances the candidate keeps stay busy; the others must be drained.
    drained.clear();
    int64_t cost = 0;
    bool allowed = true;
    for (size_t i = 0; i < gpu.instances.size() && allowed; ++i) {
      if (!gpu.busy[i] || Contains(layout, gpu.instances[i])) continue;
      const int64_t d = gpu.drain_cost[i];
      // cost <= max_drain_cost holds throughout, so the subtraction cannot overflow.
      allowed = d >= 0 && max_drain_cost >= 0 && d <= max_drain_cost - cost;
      cost += allowed ? d : 0;
      drained.push_back(static_cast<int>(i));
    }
    if (!allowed) continue;

    Score score;
    const int satisfied = MatchWanted(layout, busy, wanted, score.matched);
    if (satisfied <= current) continue;
    score.drain_cost = cost;
    for (const Instance& instance : gpu.instances) score.changes += !Contains(layout, instance);
    for (const Instance& instance : layout) score.changes += !Contains(gpu.instances, instance);
    score.unassigned_compute = traits[c].unassigned_compute;
    score.largest_addable = traits[c].largest_addable;
    if (best && !AtLeastAsGood(score, best_score)) continue;

    best_score = std::move(score);
    best = MigLayoutPlan{layout, drained, satisfied, cost};
  }
  return best;
}

}  // namespace tessera
