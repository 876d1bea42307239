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
// fail, so the checks are known to have teeth. At the end, the same properties on instances
// with several GPU models at different prices, allocated by the queue tree itself.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "fairshare/drf.h"
#include "fairshare/queue_tree.h"
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

namespace tessera {
namespace {

// Weighted multi-model instances: cpu and memory, and GPUs of two or three models, each with
// its own capacity and price (fair_share.gpu_model_weights, 0.25..3). Each user's tasks need
// cpu, memory and GPUs of one model. The allocation is the queue tree's own (one leaf per
// user), so the order is that of priced GPUs: the GPU term of a share is the price of the GPUs
// held over the price of every GPU.
//
// Which properties hold, and in which view. Pareto efficiency is exact. Envy-freeness holds up
// to one task as above (a user can only use the bundle of a user on its own model). Sharing
// incentive holds in the priced view, the one DRF sees, for almost every user, not for all: a
// user gets at least one task fewer than it could run alone on its weighted slice of the cpu,
// the memory and the *priced* GPU capacity (its slice of that price buys slice / price GPUs of
// its model), except for about 1 user in 700, who ends a few tasks shorter (measured: 11 of
// 8,110 users, the worst 9.8% short of its slice; the check bounds them at 1 in 500 and 15%).
// This is measured, not proven:
// users of other models grow in other price steps, and their last tasks can take more of the
// resource that blocks the user than one of its own tasks. And it holds only for users whose
// model still has GPUs left at the end, not for those whose
// model's GPUs ran out: prices pool the GPUs of every model into one resource, so a user on a
// model that others contend for may get less than its slice of that model's GPUs while the
// pool as a whole is not full (a cheap-cpu user's H100s weigh little against the T4s in the
// pool). That is the trade every priced GPU resource makes (Slurm's TRES billing); guarantees
// per model are the tool that protects a queue's share of one model.
struct ModelUser {
  ResourceVector task;  // gpu_milli: GPUs of `model`.
  int model = 0;
  double weight = 1;
};

struct ModelInstance {
  ResourceVector host;         // cpu and memory capacity (gpu unused).
  std::vector<int64_t> gpus;   // capacity of each model, milli-GPUs.
  std::vector<double> prices;  // of each model.
  std::vector<ModelUser> users;
};

ModelInstance RandomModelInstance(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> models_dist(2, 3);
  std::uniform_int_distribution<int> users_dist(2, 5);
  std::uniform_int_distribution<int64_t> capacity_dist(400, 1000);
  std::uniform_int_distribution<int64_t> demand_dist(1, 20);
  std::uniform_int_distribution<int> weight_dist(1, 4);
  std::uniform_int_distribution<int> price_dist(1, 12);  // quarters: 0.25 .. 3.
  ModelInstance in;
  in.host = {capacity_dist(rng), capacity_dist(rng), 0, 0};
  const int models = models_dist(rng);
  for (int m = 0; m < models; ++m) {
    in.gpus.push_back(capacity_dist(rng));
    in.prices.push_back(price_dist(rng) / 4.0);
  }
  const int n = users_dist(rng);
  for (int i = 0; i < n; ++i) {
    ModelUser u;
    u.model = static_cast<int>(rng() % models);
    u.task = {demand_dist(rng) - 1, demand_dist(rng) - 1, demand_dist(rng), 0};
    u.weight = weight_dist(rng);
    in.users.push_back(u);
  }
  return in;
}

struct ModelFill {
  std::vector<int> tasks;
  ResourceVector host_used;
  std::vector<int64_t> gpus_used;
};

bool FitsOne(const ModelInstance& in, const ModelFill& f, const ModelUser& u) {
  return f.host_used[0] + u.task[0] <= in.host[0] && f.host_used[1] + u.task[1] <= in.host[1] &&
         f.gpus_used[u.model] + u.task[2] <= in.gpus[u.model];
}

// Progressive filling through a QueueTree priced by the instance's prices.
ModelFill FillByModel(const ModelInstance& in) {
  GpuModels models;
  std::map<std::string, double> prices;
  GpuModelAmounts capacity;
  int64_t total_gpus = 0;
  for (size_t m = 0; m < in.gpus.size(); ++m) {
    const std::string name = "model-" + std::to_string(m);
    REQUIRE(*models.Intern(name) == static_cast<int>(m));
    prices[name] = in.prices[m];
    capacity.Add(static_cast<int>(m), in.gpus[m]);
    total_gpus += in.gpus[m];
  }
  QueueTree tree(0, &models, prices);
  tree.SetCapacity({in.host[0], in.host[1], total_gpus, 0}, capacity);
  std::vector<QueueId> leaves;
  for (size_t i = 0; i < in.users.size(); ++i) {
    v1::QueueSpec spec;
    spec.set_name("u" + std::to_string(i));
    spec.set_weight(in.users[i].weight);
    leaves.push_back(*tree.Create(spec));
    tree.AddPending(leaves.back(), PendingKey{0, 0, i + 1});
  }
  ModelFill f{std::vector<int>(in.users.size(), 0), {}, std::vector<int64_t>(in.gpus.size(), 0)};
  while (std::optional<QueueId> leaf = tree.PickLeaf()) {
    const size_t i = std::find(leaves.begin(), leaves.end(), *leaf) - leaves.begin();
    const ModelUser& u = in.users[i];
    if (!FitsOne(in, f, u)) {
      tree.BlockOnCapacity(*leaf);
      continue;
    }
    GpuModelAmounts by_model;
    by_model.Add(u.model, u.task[2]);
    tree.AddAllocation(*leaf, u.task, 0, by_model);
    f.host_used += ResourceVector{u.task[0], u.task[1], 0, 0};
    f.gpus_used[u.model] += u.task[2];
    ++f.tasks[i];
  }
  return f;
}

TEST_CASE(
    "drf properties, priced GPU models: Pareto efficiency, envy-freeness and sharing incentive "
    "in the priced view on 3000 random instances") {
  std::mt19937_64 rng(20260619);
  int pool_ran_out = 0;
  int sharing_checked = 0;
  int short_users = 0;     // more than one task short of their priced slice.
  double worst_short = 0;  // the largest such shortfall, as a fraction of the slice.
  for (int n = 0; n < 3000; ++n) {
    const ModelInstance in = RandomModelInstance(rng);
    const ModelFill f = FillByModel(in);
    double total_weight = 0;
    double priced_capacity = 0;
    for (const ModelUser& u : in.users) total_weight += u.weight;
    for (size_t m = 0; m < in.gpus.size(); ++m) priced_capacity += in.prices[m] * in.gpus[m];
    for (size_t i = 0; i < in.users.size(); ++i) {
      const ModelUser& u = in.users[i];
      CHECK_MESSAGE(!FitsOne(in, f, u), "Pareto, instance " << n);
      // Sharing incentive in the priced view.
      const double slice = u.weight / total_weight;
      int64_t alone = std::min(
          u.task[0] > 0 ? static_cast<int64_t>(in.host[0] * slice) / u.task[0] : INT64_MAX,
          u.task[1] > 0 ? static_cast<int64_t>(in.host[1] * slice) / u.task[1] : INT64_MAX);
      alone = std::min(
          alone, static_cast<int64_t>(priced_capacity * slice / in.prices[u.model]) / u.task[2]);
      const bool model_full = f.gpus_used[u.model] + u.task[2] > in.gpus[u.model];
      if (model_full) {
        ++pool_ran_out;
      } else {
        ++sharing_checked;
        if (f.tasks[i] < alone - 1) {
          ++short_users;
          worst_short = std::max(worst_short, 1.0 - (f.tasks[i] + 1.0) / alone);
        }
      }
      // Envy-freeness, up to one task, against users of the same model.
      for (size_t j = 0; j < in.users.size(); ++j) {
        if (j == i || f.tasks[j] == 0 || in.users[j].model != u.model) continue;
        const double ratio = u.weight / in.users[j].weight;
        const ResourceVector bundle = Scaled(in.users[j].task * (f.tasks[j] - 1), ratio);
        const int64_t tolerance = static_cast<int64_t>(std::ceil(ratio));
        CHECK_MESSAGE(TasksIn(bundle, u.task) <= f.tasks[i] + tolerance, "envy, instance " << n);
      }
    }
  }
  // The exception is not the rule: most users end with GPUs of their model left over.
  CHECK(sharing_checked > 2 * pool_ran_out);
  MESSAGE("priced sharing incentive: " << short_users << " of " << sharing_checked
                                       << " users more than one task short, the worst by "
                                       << worst_short * 100 << "%");
  CHECK(short_users * 500 < sharing_checked);
  CHECK(worst_short <= 0.15);
}

TEST_CASE("drf properties, priced GPU models: inflating a demand buys at most crumbs, rarely") {
  std::mt19937_64 rng(778);
  std::uniform_int_distribution<int64_t> inflate(1, 10);
  int gains = 0;
  int max_gain = 0;
  for (int n = 0; n < 2000; ++n) {
    const ModelInstance in = RandomModelInstance(rng);
    const size_t liar = n % in.users.size();
    ModelInstance lie = in;
    lie.users[liar].task[n % 3] += inflate(rng);
    const int gain = FillByModel(lie).tasks[liar] - FillByModel(in).tasks[liar];
    if (gain > 0) ++gains;
    max_gain = std::max(max_gain, gain);
  }
  CHECK(max_gain <= 2);
  CHECK(gains <= 2000 / 100);
}

}  // namespace
}  // namespace tessera
