// The MIG layout planner (mig_layout_planner.h): worked cases for each rule, the layout table
// against an independent enumeration, and random GPUs checked against a brute-force oracle.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "placement/mig_layout_planner.h"

namespace tessera {
namespace {

using mig::Instance;
using mig::ProfileKind;

constexpr ProfileKind k1g = ProfileKind::k1Slice;
constexpr ProfileKind k2g = ProfileKind::k2Slice;
constexpr ProfileKind k3g = ProfileKind::k3Slice;
constexpr ProfileKind k4g = ProfileKind::k4Slice;
constexpr ProfileKind k7g = ProfileKind::k7Slice;

struct Held {
  Instance instance;
  bool busy = false;
  int64_t drain_cost = -1;
};

MigGpuView Gpu(const std::vector<Held>& held) {
  MigGpuView gpu;
  for (const Held& h : held) {
    gpu.instances.push_back(h.instance);
    gpu.busy.push_back(h.busy);
    gpu.drain_cost.push_back(h.drain_cost);
  }
  return gpu;
}

Held Free(ProfileKind kind, uint8_t start) { return {{kind, start}, false, -1}; }
Held Busy(ProfileKind kind, uint8_t start, int64_t drain_cost = -1) {
  return {{kind, start}, true, drain_cost};
}

using Layout = std::vector<Instance>;

TEST_CASE("mig layout planner: an empty GPU gets the two 3-slice instances at 0 and 4") {
  const std::vector<ProfileKind> wanted = {k3g, k3g};
  const auto plan = PlanMigLayout(MigGpuView{}, wanted, 0);
  REQUIRE(plan.has_value());
  CHECK(plan->layout == Layout{{k3g, 0}, {k3g, 4}});
  CHECK(plan->satisfied == 2);
  CHECK(plan->drained.empty());
  CHECK(plan->drain_cost == 0);
}

TEST_CASE("mig layout planner: a free 7-slice instance is re-partitioned for a small request") {
  const std::vector<ProfileKind> wanted = {k1g};
  const auto plan = PlanMigLayout(Gpu({Free(k7g, 0)}), wanted, 0);
  REQUIRE(plan.has_value());
  // Destroying a free instance drains nothing. The 1g goes where a 4g can still be added.
  CHECK(plan->layout == Layout{{k1g, 6}});
  CHECK(plan->satisfied == 1);
  CHECK(plan->drained.empty());
}

TEST_CASE("mig layout planner: a busy instance stays and the request takes the rest") {
  const std::vector<ProfileKind> wanted = {k3g};
  const auto plan = PlanMigLayout(Gpu({Busy(k4g, 0, 10)}), wanted, 1000);
  REQUIRE(plan.has_value());
  CHECK(plan->layout == Layout{{k4g, 0}, {k3g, 4}});
  CHECK(plan->satisfied == 1);
  CHECK(plan->drained.empty());
  CHECK(plan->drain_cost == 0);
}

TEST_CASE("mig layout planner: free instances that are not in the way are kept") {
  const std::vector<ProfileKind> wanted = {k3g};
  const auto plan = PlanMigLayout(Gpu({Free(k2g, 0), Free(k2g, 2)}), wanted, 0);
  REQUIRE(plan.has_value());
  CHECK(plan->layout == Layout{{k2g, 0}, {k2g, 2}, {k3g, 4}});
}

TEST_CASE("mig layout planner: a busy instance that may not be drained blocks the only place") {
  SUBCASE("the whole GPU") {
    const std::vector<ProfileKind> wanted = {k1g};
    CHECK_FALSE(PlanMigLayout(Gpu({Busy(k7g, 0)}), wanted, 1'000'000).has_value());
  }
  SUBCASE("the one place a 4-slice instance may start") {
    const std::vector<ProfileKind> wanted = {k4g};
    CHECK_FALSE(PlanMigLayout(Gpu({Busy(k1g, 2), Free(k1g, 5)}), wanted, 1'000'000).has_value());
  }
}

TEST_CASE("mig layout planner: a busy instance is drained when its cost is within the limit") {
  const std::vector<ProfileKind> wanted = {k3g};
  const MigGpuView gpu = Gpu({Busy(k7g, 0, 100)});
  const auto plan = PlanMigLayout(gpu, wanted, 100);
  REQUIRE(plan.has_value());
  CHECK(plan->layout == Layout{{k3g, 4}});
  CHECK(plan->drained == std::vector<int>{0});
  CHECK(plan->drain_cost == 100);
  CHECK(plan->satisfied == 1);
  // Over the limit, or with draining forbidden, there is no plan.
  CHECK_FALSE(PlanMigLayout(gpu, wanted, 99).has_value());
  CHECK_FALSE(PlanMigLayout(gpu, wanted, -1).has_value());
}

TEST_CASE("mig layout planner: the cheapest drain wins, and a free instance costs nothing") {
  const std::vector<ProfileKind> wanted = {k3g};
  auto plan = PlanMigLayout(Gpu({Busy(k2g, 0, 50), Busy(k2g, 4, 10)}), wanted, 100);
  REQUIRE(plan.has_value());
  CHECK(plan->layout == Layout{{k2g, 0}, {k3g, 4}});
  CHECK(plan->drained == std::vector<int>{1});
  CHECK(plan->drain_cost == 10);

  plan = PlanMigLayout(Gpu({Busy(k2g, 0, 50), Free(k2g, 4)}), wanted, 100);
  REQUIRE(plan.has_value());
  CHECK(plan->layout == Layout{{k2g, 0}, {k3g, 4}});
  CHECK(plan->drained.empty());
  CHECK(plan->drain_cost == 0);

  // Huge costs do not overflow the sum: each alone is within the limit, both together are not.
  const int64_t big = int64_t{1} << 62;
  plan = PlanMigLayout(Gpu({Busy(k3g, 0, big), Busy(k3g, 4, big)}), std::vector{k4g, k3g}, big + 1);
  REQUIRE(plan.has_value());
  CHECK(plan->layout == Layout{{k4g, 0}, {k3g, 4}});
  CHECK(plan->drained == std::vector<int>{0});
  CHECK(plan->satisfied == 1);
}

TEST_CASE("mig layout planner: earlier wanted entries come first") {
  SUBCASE("the 4-slice request first") {
    const std::vector<ProfileKind> wanted = {k4g, k3g, k3g};
    const auto plan = PlanMigLayout(MigGpuView{}, wanted, 0);
    REQUIRE(plan.has_value());
    CHECK(plan->layout == Layout{{k4g, 0}, {k3g, 4}});
    CHECK(plan->satisfied == 2);
  }
  SUBCASE("the 3-slice requests first") {
    const std::vector<ProfileKind> wanted = {k3g, k3g, k4g};
    const auto plan = PlanMigLayout(MigGpuView{}, wanted, 0);
    REQUIRE(plan.has_value());
    CHECK(plan->layout == Layout{{k3g, 0}, {k3g, 4}});
    CHECK(plan->satisfied == 2);
  }
  SUBCASE("one large request before many small ones") {
    const std::vector<ProfileKind> wanted = {k7g, k1g, k1g, k1g};
    const auto plan = PlanMigLayout(MigGpuView{}, wanted, 0);
    REQUIRE(plan.has_value());
    CHECK(plan->layout == Layout{{k7g, 0}});
    CHECK(plan->satisfied == 1);
  }
}

TEST_CASE("mig layout planner: no plan when the current layout does as well") {
  const MigGpuView gpu = Gpu({Free(k3g, 0), Free(k3g, 4)});
  CHECK_FALSE(PlanMigLayout(gpu, std::vector{k3g}, 0).has_value());
  CHECK_FALSE(PlanMigLayout(gpu, std::vector{k3g, k3g}, 0).has_value());
  // Two 3g and a 1g do not fit together (9 memory slices): no layout does better than now.
  CHECK_FALSE(PlanMigLayout(gpu, std::vector{k3g, k3g, k1g}, 1000).has_value());
  // Nothing wanted, nothing to do.
  CHECK_FALSE(PlanMigLayout(gpu, std::span<const ProfileKind>{}, 1000).has_value());
  // Only a strictly larger count is a plan: the 4g would displace the free 3g a task can use now.
  CHECK_FALSE(
      PlanMigLayout(Gpu({Free(k3g, 0), Busy(k3g, 4)}), std::vector{k4g, k3g}, 0).has_value());
}

TEST_CASE("mig layout planner: a busy instance is not drained to hand its twin to a request") {
  // The busy 3g could be drained and recreated free, which would be preemption.
  const MigGpuView gpu = Gpu({Busy(k3g, 0, 1), Busy(k3g, 4, 1)});
  CHECK_FALSE(PlanMigLayout(gpu, std::vector{k3g}, 1000).has_value());
}

// A layout as comparable numbers, for sets of layouts.
std::vector<int> Key(const Layout& layout) {
  std::vector<int> key;
  for (const Instance& instance : layout) {
    key.push_back(instance.start * mig::kNumProfileKinds + static_cast<int>(instance.kind));
  }
  std::sort(key.begin(), key.end());
  return key;
}

// An enumeration independent of the planner's: each allowed placement in or out, in a fixed
// order, pruning as soon as the layout is invalid (a subset of a valid layout is valid).
void EnumerateByPlacement(const std::vector<Instance>& placements, size_t next, Layout& layout,
                          std::set<std::vector<int>>& out) {
  if (next == placements.size()) {
    out.insert(Key(layout));
    return;
  }
  EnumerateByPlacement(placements, next + 1, layout, out);
  layout.push_back(placements[next]);
  if (mig::IsValidLayout(layout)) EnumerateByPlacement(placements, next + 1, layout, out);
  layout.pop_back();
}

TEST_CASE("mig layout planner: the layout table holds every valid layout once") {
  const std::span<const Layout> layouts = ValidMigLayouts();
  std::set<std::vector<int>> seen;
  for (const Layout& layout : layouts) {
    CHECK(mig::IsValidLayout(layout));
    CHECK(std::is_sorted(layout.begin(), layout.end(),
                         [](const Instance& a, const Instance& b) { return a.start < b.start; }));
    seen.insert(Key(layout));
  }
  CHECK(seen.size() == layouts.size());

  std::vector<Instance> placements;
  for (int k = 0; k < mig::kNumProfileKinds; ++k) {
    const auto kind = static_cast<ProfileKind>(k);
    for (int start = 0; start < mig::kMemorySlices; ++start) {
      if ((mig::Shape(kind).allowed_starts >> start) & 1) {
        placements.push_back({kind, static_cast<uint8_t>(start)});
      }
    }
  }
  std::set<std::vector<int>> expected;
  Layout scratch;
  EnumerateByPlacement(placements, 0, scratch, expected);
  CHECK(seen == expected);
  CHECK(layouts.size() == 2319);
}

// What the oracle knows of one candidate layout for one GPU.
struct Judged {
  bool allowed = false;
  std::vector<bool> matched;
  int count = 0;
  int64_t drain_cost = 0;
};

// The rules of mig_layout_planner.h, written out plainly: busy instances missing from `layout`
// are drained, which needs cost >= 0 each and a total within the limit; the wanted entries match,
// in order, the free instances of their kind.
Judged Judge(const MigGpuView& gpu, const Layout& layout, std::span<const ProfileKind> wanted,
             int64_t max_drain_cost) {
  Judged j;
  bool drains = false;
  Layout occupied;
  for (size_t i = 0; i < gpu.instances.size(); ++i) {
    if (!gpu.busy[i]) continue;
    if (std::find(layout.begin(), layout.end(), gpu.instances[i]) != layout.end()) {
      occupied.push_back(gpu.instances[i]);
      continue;
    }
    if (gpu.drain_cost[i] < 0) return j;
    drains = true;
    j.drain_cost += gpu.drain_cost[i];  // the test's costs are small.
  }
  if (drains && j.drain_cost > max_drain_cost) return j;
  j.allowed = true;
  std::vector<Instance> free;
  for (const Instance& instance : layout) {
    if (std::find(occupied.begin(), occupied.end(), instance) == occupied.end()) {
      free.push_back(instance);
    }
  }
  for (ProfileKind kind : wanted) {
    auto it = std::find_if(free.begin(), free.end(),
                           [kind](const Instance& instance) { return instance.kind == kind; });
    j.matched.push_back(it != free.end());
    if (it != free.end()) {
      free.erase(it);
      ++j.count;
    }
  }
  return j;
}

TEST_CASE("mig layout planner: random GPUs against a brute-force oracle") {
  std::mt19937 rng(20240611);
  const std::span<const Layout> layouts = ValidMigLayouts();
  const std::vector<int64_t> limits = {-1, 0, 30, 100, 1000};
  int plans = 0;
  int drains = 0;
  for (int round = 0; round < 300; ++round) {
    const Layout& current = layouts[rng() % layouts.size()];
    MigGpuView gpu;
    for (const Instance& instance : current) {
      gpu.instances.push_back(instance);
      gpu.busy.push_back(rng() % 2 == 0);
      gpu.drain_cost.push_back(rng() % 4 == 0 ? -1 : static_cast<int64_t>(rng() % 60));
    }
    std::vector<ProfileKind> wanted(rng() % 6);
    for (ProfileKind& kind : wanted) kind = static_cast<ProfileKind>(rng() % mig::kNumProfileKinds);
    const int64_t max_drain_cost = limits[rng() % limits.size()];
    CAPTURE(round);

    const auto plan = PlanMigLayout(gpu, wanted, max_drain_cost);
    const Judged now = Judge(gpu, current, wanted, max_drain_cost);
    REQUIRE(now.allowed);
    // The best the oracle finds among layouts that do strictly better than now.
    std::optional<Judged> best;
    for (const Layout& layout : layouts) {
      Judged j = Judge(gpu, layout, wanted, max_drain_cost);
      if (!j.allowed || j.count <= now.count) continue;
      if (!best || j.matched > best->matched ||
          (j.matched == best->matched && j.drain_cost < best->drain_cost)) {
        best = j;
      }
    }
    REQUIRE(plan.has_value() == best.has_value());
    if (!plan) continue;
    ++plans;
    drains += !plan->drained.empty();

    CHECK(mig::IsValidLayout(plan->layout));
    const Judged got = Judge(gpu, plan->layout, wanted, max_drain_cost);
    REQUIRE(got.allowed);
    CHECK(got.matched == best->matched);
    CHECK(got.drain_cost == best->drain_cost);
    CHECK(plan->satisfied == got.count);
    CHECK(plan->drain_cost == got.drain_cost);
    // Drained: exactly the busy instances the new layout lacks; the others are where they were.
    std::vector<int> missing;
    for (size_t i = 0; i < gpu.instances.size(); ++i) {
      const bool kept = std::find(plan->layout.begin(), plan->layout.end(), gpu.instances[i]) !=
                        plan->layout.end();
      if (gpu.busy[i] && !kept) missing.push_back(static_cast<int>(i));
    }
    CHECK(plan->drained == missing);
  }
  // The random inputs exercise both plans and drains, not only nullopt.
  CHECK(plans > 30);
  CHECK(drains > 5);
}

}  // namespace
}  // namespace tessera
