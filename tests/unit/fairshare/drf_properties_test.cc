// The four properties that make DRF the fairness policy of choice (Ghodsi et al., NSDI 2011),
// checked on thousands of random instances with four resources, up to five users and weights
// 1..4, each task a few percent of the cluster.
//
// The paper proves them for divisible tasks. Tasks here are indivisible, so each check allows
// exactly the slack that indivisibility explains, and no more:
//   Pareto efficiency     exact: no user's next task fits in what is left.
//   sharing incentive     a user gets at least one task fewer than it could run alone on its
//                         weighted slice of every resource.
//   envy-freeness         up to one task: user i cannot run more of its tasks with j's bundle
//                         minus one task (scaled by w_i/w_j) than it has, plus ceil(w_i/w_j):
//                         once i is blocked by a nearly full resource r, j may still take the
//                         last units of r, less than one of i's tasks, which the scaling
//                         stretches to at most ceil(w_i/w_j) of i's tasks.
//   strategy-proofness    inflating a demand can at best pick up the last crumbs of a full
//                         resource: the liar gains at most two tasks, and only rarely.
// The last tests run the same checks against allocators that are not DRF and expect them to
// fail, so the checks are known to have teeth.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "fairshare/drf.h"
#include "unit/fairshare/progressive_filling.h"

namespace tessera {
namespace {

using testing::DrfUser;
using testing::ProgressiveFilling;

struct Instance {
  ResourceVector capacity;
  std::vector<DrfUser> users;
};

Instance RandomInstance(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> users_dist(2, 5);
  std::uniform_int_distribution<int64_t> capacity_dist(400, 1000);
  std::uniform_int_distribution<int64_t> demand_dist(0, 20);
  std::uniform_int_distribution<int> weight_dist(1, 4);
  Instance instance;
  for (int r = 0; r < kNumResources; ++r) instance.capacity[r] = capacity_dist(rng);
  const int n = users_dist(rng);
  for (int i = 0; i < n; ++i) {
    DrfUser u;
    do {
      for (int r = 0; r < kNumResources; ++r) u.task[r] = demand_dist(rng);
    } while (u.task.IsZero());
    u.weight = weight_dist(rng);
    instance.users.push_back(u);
  }
  return instance;
}

// How many tasks of `task` fit in `bundle`.
int64_t TasksIn(const ResourceVector& bundle, const ResourceVector& task) {
  int64_t n = INT64_MAX;
  for (int r = 0; r < kNumResources; ++r) {
    if (task[r] > 0) n = std::min(n, bundle[r] / task[r]);
  }
  return n;
}

// A bundle scaled by a ratio of weights, rounded down.
ResourceVector Scaled(const ResourceVector& v, double factor) {
  ResourceVector out;
  for (int r = 0; r < kNumResources; ++r) out[r] = static_cast<int64_t>(v[r] * factor);
  return out;
}

struct Violations {
  int pareto = 0;
  int sharing = 0;
  int envy = 0;
};

Violations Check(const Instance& in, const std::vector<int>& tasks) {
  Violations v;
  ResourceVector used;
  double total_weight = 0;
  for (size_t i = 0; i < in.users.size(); ++i) {
    used += in.users[i].task * tasks[i];
    total_weight += in.users[i].weight;
  }
  for (size_t i = 0; i < in.users.size(); ++i) {
    const DrfUser& u = in.users[i];
    if ((used + u.task).FitsWithin(in.capacity)) ++v.pareto;
    const int64_t alone = TasksIn(Scaled(in.capacity, u.weight / total_weight), u.task);
    if (tasks[i] < alone - 1) ++v.sharing;
    for (size_t j = 0; j < in.users.size(); ++j) {
      if (j == i || tasks[j] == 0) continue;
      const double ratio = u.weight / in.users[j].weight;
      const ResourceVector bundle = Scaled(in.users[j].task * (tasks[j] - 1), ratio);
      const int64_t tolerance = static_cast<int64_t>(std::ceil(ratio));
      if (TasksIn(bundle, u.task) > tasks[i] + tolerance) ++v.envy;
    }
  }
  return v;
}

TEST_CASE(
    "drf properties: Pareto efficiency, sharing incentive and envy-freeness on 3000 random "
    "instances") {
  std::mt19937_64 rng(20260101);
  for (int n = 0; n < 3000; ++n) {
    const Instance in = RandomInstance(rng);
    const Violations v = Check(in, ProgressiveFilling(in.capacity, in.users));
    CHECK_MESSAGE(v.pareto == 0, "instance " << n);
    CHECK_MESSAGE(v.sharing == 0, "instance " << n);
    CHECK_MESSAGE(v.envy == 0, "instance " << n);
  }
}

struct LieOutcome {
  int gains = 0;     // instances where lying bought the liar more real tasks.
  int max_gain = 0;  // the most it bought.
};

// Each user in turn inflates one resource of its demand; counts what that bought. Each
// inflated task still holds one real task, so the liar runs as many real tasks as it gets.
template <typename Allocate>
LieOutcome LieTrials(int instances, Allocate allocate) {
  std::mt19937_64 rng(777);
  std::uniform_int_distribution<int64_t> inflate(1, 10);
  LieOutcome outcome;
  for (int n = 0; n < instances; ++n) {
    const Instance in = RandomInstance(rng);
    const std::vector<int> honest = allocate(in);
    const size_t liar = n % in.users.size();
    Instance lie = in;
    lie.users[liar].task[n % kNumResources] += inflate(rng);
    const int gain = allocate(lie)[liar] - honest[liar];
    if (gain > 0) ++outcome.gains;
    outcome.max_gain = std::max(outcome.max_gain, gain);
  }
  return outcome;
}

TEST_CASE("drf properties: strategy-proofness: inflating a demand buys at most crumbs, rarely") {
  const LieOutcome drf =
      LieTrials(2000, [](const Instance& in) { return ProgressiveFilling(in.capacity, in.users); });
  CHECK(drf.max_gain <= 2);
  CHECK(drf.gains <= 2000 / 100);  // under 1% of the lies pay at all.
}

// Not DRF: orders users by CPU share alone, fair in one resource and blind to the others.
class CpuOnlySorter {
 public:
  void SetCapacity(const ResourceVector& c) { capacity_ = c; }
  void Add(uint32_t id, double weight) {
    held_[id] = {};
    weight_[id] = weight;
  }
  void Activate(uint32_t id) { active_.insert(id); }
  void Deactivate(uint32_t id) { active_.erase(id); }
  void UpdateAllocation(uint32_t id, const ResourceVector& held, const ResourceVector&) {
    held_[id] = held;
  }
  std::optional<uint32_t> First() const {
    std::optional<uint32_t> best;
    for (uint32_t id : active_) {
      if (!best || Key(id) < Key(*best)) best = id;
    }
    return best;
  }

 private:
  double Key(uint32_t id) const {
    return static_cast<double>(held_.at(id)[0]) / static_cast<double>(capacity_[0]) /
           weight_.at(id);
  }
  ResourceVector capacity_;
  std::map<uint32_t, ResourceVector> held_;
  std::map<uint32_t, double> weight_;
  std::set<uint32_t> active_;
};

TEST_CASE("drf properties: the fairness checks catch an allocator that looks at CPU only") {
  std::mt19937_64 rng(20260101);
  int violations = 0;
  for (int n = 0; n < 3000; ++n) {
    const Instance in = RandomInstance(rng);
    const Violations v = Check(in, ProgressiveFilling<CpuOnlySorter>(in.capacity, in.users));
    violations += v.sharing + v.envy;
  }
  CHECK(violations > 100);
}

// Not DRF: serves the biggest demand first, so claiming to be bigger pays.
std::vector<int> BiggestDemandFirst(const Instance& in) {
  std::vector<size_t> order(in.users.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto size = [&](size_t i) { return DominantShare(in.users[i].task, in.capacity, 1.0); };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return size(a) > size(b); });
  std::vector<int> tasks(in.users.size(), 0);
  ResourceVector used;
  for (size_t i : order) {
    while ((used + in.users[i].task).FitsWithin(in.capacity)) {
      used += in.users[i].task;
      ++tasks[i];
    }
  }
  return tasks;
}

TEST_CASE("drf properties: the strategy-proofness check catches a manipulable allocator") {
  const LieOutcome manipulable = LieTrials(2000, BiggestDemandFirst);
  CHECK((manipulable.max_gain > 2 || manipulable.gains > 2000 / 100));
}

}  // namespace
}  // namespace tessera
