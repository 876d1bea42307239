// The queue tree per GPU model: guarantees, borrowing limits and caps for one model, prices
// that make an H100 count above a T4 in the order and in decayed usage, reclaim that takes back
// only the models a guarantee covers, and prices that change nothing on a one-model cluster.
#include <doctest/doctest.h>

#include <random>

#include "fairshare/queue_tree.h"

namespace tessera {
namespace {

const ResourceVector kGpu{0, 0, 1000, 0};
constexpr int64_t kHour = 3600LL * 1000 * 1000;

v1::QueueSpec Queue(const std::string& name) {
  v1::QueueSpec spec;
  spec.set_name(name);
  return spec;
}

v1::GpuModelQuota* ModelQuota(v1::QueueSpec& spec, const std::string& model) {
  v1::GpuModelQuota* q = spec.add_gpu_models();
  q->set_model(model);
  return q;
}

GpuModelAmounts On(int model, int64_t milli) {
  GpuModelAmounts a;
  a.Add(model, milli);
  return a;
}

// A tree over a cluster of 8 H100s and 8 T4s, H100 priced 2, T4 0.5 (unless `weights`).
struct MixedCluster {
  explicit MixedCluster(std::map<std::string, double> weights = {{"H100-80GB", 2.0}, {"T4", 0.5}},
                        int64_t half_life_us = 0)
      : h100(*models.Intern("H100-80GB")),
        t4(*models.Intern("T4")),
        tree(half_life_us, &models, weights) {
    GpuModelAmounts by_model = On(h100, 8000);
    by_model.Add(t4, 8000);
    tree.SetCapacity({0, 0, 16000, 0}, by_model);
  }
  void Hold(QueueId q, int model, int gpus, int64_t now = 0) {
    tree.AddAllocation(q, kGpu * gpus, now, On(model, 1000LL * gpus));
  }
  GpuModels models;
  int h100;
  int t4;
  QueueTree tree;
};

TEST_CASE("gpu model quotas: a cap on one model refuses that model only, at any level") {
  MixedCluster c;
  v1::QueueSpec org = Queue("org");
  ModelQuota(org, "H100-80GB")->set_cap_gpu_milli(3000);
  const QueueId o = *c.tree.Create(org);
  v1::QueueSpec team = Queue("org/team");
  v1::GpuModelQuota* t4 = ModelQuota(team, "T4");
  t4->set_guarantee_gpu_milli(1000);
  t4->set_borrowing_limit_gpu_milli(1000);
  const QueueId leaf = *c.tree.Create(team);
  const QueueId free = *c.tree.Create(Queue("free"));
  CHECK(c.tree.HasModelLimits(leaf));
  CHECK_FALSE(c.tree.HasModelLimits(free));

  c.Hold(leaf, c.h100, 3);
  std::optional<QuotaViolation> v = c.tree.CheckModelQuota(leaf, c.h100, 1000);
  REQUIRE(v);
  CHECK(v->queue == o);
  CHECK(v->cap);
  CHECK(v->model == c.h100);
  CHECK(c.tree.CheckModelQuota(leaf, c.t4, 2000) == std::nullopt);
  // T4: guarantee 1 + borrowing 1 = 2 on the leaf.
  v = c.tree.CheckModelQuota(leaf, c.t4, 3000);
  REQUIRE(v);
  CHECK(v->queue == leaf);
  CHECK_FALSE(v->cap);
  // The limits on any model are untouched by the per-model ones.
  CHECK(c.tree.CheckQuota(leaf, kGpu * 10) == std::nullopt);
  // Releasing an H100 makes room again.
  c.tree.SubtractAllocation(leaf, kGpu, 0, On(c.h100, 1000));
  CHECK(c.tree.CheckModelQuota(leaf, c.h100, 1000) == std::nullopt);
}

TEST_CASE("gpu model quotas: prices order queues, an H100 above a T4") {
  MixedCluster priced;
  const QueueId h = *priced.tree.Create(Queue("h"));
  const QueueId t = *priced.tree.Create(Queue("t"));
  priced.Hold(h, priced.h100, 1);
  priced.Hold(t, priced.t4, 1);
  // Priced capacity 8 x 2 + 8 x 0.5 = 20: one H100 is 2/20 of it, one T4 0.5/20.
  CHECK(priced.tree.DominantShareOf(h) == doctest::Approx(0.1));
  CHECK(priced.tree.DominantShareOf(t) == doctest::Approx(0.025));
  priced.tree.AddPending(h, PendingKey{0, 0, 1});
  priced.tree.AddPending(t, PendingKey{0, 0, 2});
  CHECK(priced.tree.PickLeaf() == t);
  const v1::QueueStatus status = priced.tree.StatusOf(h);
  CHECK(status.weighted_gpu_share() == doctest::Approx(0.1));
  REQUIRE(status.gpu_models_size() == 1);
  CHECK(status.gpu_models(0).model() == "H100-80GB");
  CHECK(status.gpu_models(0).allocated_gpu_milli() == 1000);
  CHECK(status.gpu_models(0).capacity_gpu_milli() == 8000);
  CHECK(status.gpu_models(0).share() == doctest::Approx(0.125));
  CHECK(status.gpu_models(0).weight() == doctest::Approx(2.0));

  // Without prices a GPU is a GPU: 1/16 each, and the tie goes to the lower id.
  MixedCluster plain(std::map<std::string, double>{});
  const QueueId h2 = *plain.tree.Create(Queue("h"));
  const QueueId t2 = *plain.tree.Create(Queue("t"));
  plain.Hold(h2, plain.h100, 1);
  plain.Hold(t2, plain.t4, 1);
  CHECK(plain.tree.DominantShareOf(h2) == plain.tree.DominantShareOf(t2));
  plain.tree.AddPending(h2, PendingKey{0, 0, 1});
  plain.tree.AddPending(t2, PendingKey{0, 0, 2});
  CHECK(plain.tree.PickLeaf() == h2);
}

TEST_CASE("gpu model quotas: decayed usage accumulates in priced units") {
  MixedCluster c({{"H100-80GB", 2.0}, {"T4", 0.5}}, kHour);
  const QueueId h = *c.tree.Create(Queue("h"));
  const QueueId t = *c.tree.Create(Queue("t"));
  c.Hold(h, c.h100, 2);
  c.Hold(t, c.t4, 2);
  c.tree.SubtractAllocation(h, kGpu * 2, 3 * kHour, On(c.h100, 2000));
  c.tree.SubtractAllocation(t, kGpu * 2, 3 * kHour, On(c.t4, 2000));
  c.tree.RefreshUsage(3 * kHour);
  // The same GPU-hours, four times the price.
  const double h_share = c.tree.DominantShareOf(h);
  const double t_share = c.tree.DominantShareOf(t);
  CHECK(h_share > 0);
  CHECK(h_share == doctest::Approx(4 * t_share).epsilon(0.001));
}

TEST_CASE("gpu model quotas: prices change nothing on a cluster of one model") {
  // The same history through a tree with a price for the one model and a tree without: every
  // share is the same double and the order the same, with and without a usage half-life.
  for (int64_t half_life : {int64_t{0}, kHour}) {
    GpuModels models_a, models_b;
    const int a_model = *models_a.Intern("H100-80GB");
    const int b_model = *models_b.Intern("H100-80GB");
    QueueTree priced(half_life, &models_a, {{"H100-80GB", 2.1}});
    QueueTree plain(half_life, &models_b, {});
    priced.SetCapacity({64000, 0, 24000, 0}, On(a_model, 24000));
    plain.SetCapacity({64000, 0, 24000, 0}, On(b_model, 24000));
    std::vector<QueueId> queues;
    for (const char* name : {"a", "b", "c", "d"}) {
      queues.push_back(*priced.Create(Queue(name)));
      REQUIRE(*plain.Create(Queue(name)) == queues.back());
    }
    std::mt19937_64 rng(19);
    std::vector<int> held(queues.size(), 0);
    int64_t now = 0;
    for (int step = 0; step < 400; ++step) {
      now += static_cast<int64_t>(rng() % (kHour / 4));
      const size_t q = rng() % queues.size();
      const int gpus = 1 + static_cast<int>(rng() % 3);
      const int64_t cpu = 1000 * (1 + static_cast<int64_t>(rng() % 4));
      const ResourceVector task{cpu * gpus, 0, 250LL * gpus, 0};  // fractions of a GPU too.
      const bool add = held[q] < 6 && (held[q] == 0 || rng() % 2 == 0);
      if (add) {
        priced.AddAllocation(queues[q], task, now, On(a_model, task.gpu_milli()));
        plain.AddAllocation(queues[q], task, now, On(b_model, task.gpu_milli()));
        held[q] += 1;
      } else {
        // Every add holds at least 1000 milli-cores and 250 milli-GPUs, so taking that much
        // back per add never leaves a queue holding less than nothing.
        const ResourceVector back{1000, 0, 250, 0};
        priced.SubtractAllocation(queues[q], back, now, On(a_model, 250));
        plain.SubtractAllocation(queues[q], back, now, On(b_model, 250));
        held[q] -= 1;
      }
      if (step % 7 == 0) {
        priced.RefreshUsage(now);
        plain.RefreshUsage(now);
      }
      for (QueueId id : queues) {
        REQUIRE(priced.DominantShareOf(id) == plain.DominantShareOf(id));
        priced.AddPending(id, PendingKey{0, 0, id});
        plain.AddPending(id, PendingKey{0, 0, id});
      }
      REQUIRE(priced.PickLeaf() == plain.PickLeaf());
      for (QueueId id : queues) {
        priced.RemovePending(id, PendingKey{0, 0, id});
        plain.RemovePending(id, PendingKey{0, 0, id});
      }
    }
  }
}

TEST_CASE("gpu model quotas: a guarantee on a model orders and reclaims that model") {
  MixedCluster c;
  v1::QueueSpec owed_spec = Queue("owed");
  ModelQuota(owed_spec, "H100-80GB")->set_guarantee_gpu_milli(4000);
  const QueueId owed = *c.tree.Create(owed_spec);
  v1::QueueSpec any_spec = Queue("any");
  any_spec.mutable_guarantee()->set_gpu_milli(2000);
  const QueueId any = *c.tree.Create(any_spec);
  v1::QueueSpec borrower_spec = Queue("borrower");
  ModelQuota(borrower_spec, "H100-80GB")->set_guarantee_gpu_milli(2000);
  const QueueId borrower = *c.tree.Create(borrower_spec);
  auto none = [](QueueId) { return ResourceCharge(); };
  const ModelMask both = (ModelMask{1} << c.h100) | (ModelMask{1} << c.t4);

  // Below its H100 guarantee: first in line, and owed H100s, not T4s.
  c.Hold(owed, c.h100, 1);
  CHECK(c.tree.BelowGuarantee(owed));
  std::optional<ReclaimClaim> claim = c.tree.ReclaimingQueue(owed, kGpu, both, none);
  REQUIRE(claim);
  CHECK(claim->queue == owed);
  CHECK(claim->models == (ModelMask{1} << c.h100));
  CHECK(c.tree.ReclaimingQueue(owed, kGpu, ModelMask{1} << c.t4, none) == std::nullopt);
  // What is already coming to it counts: with 3 H100s on the way, a fourth is not owed.
  auto three_coming = [&](QueueId q) {
    return q == owed ? ResourceCharge{kGpu * 3, On(c.h100, 3000)} : ResourceCharge();
  };
  CHECK(c.tree.ReclaimingQueue(owed, kGpu, both, three_coming) == std::nullopt);
  c.Hold(owed, c.h100, 3);
  CHECK_FALSE(c.tree.BelowGuarantee(owed));
  CHECK(c.tree.ReclaimingQueue(owed, kGpu, both, none) == std::nullopt);

  // A guarantee on any model claims every model.
  claim = c.tree.ReclaimingQueue(any, kGpu, both, none);
  REQUIRE(claim);
  CHECK(claim->models == kEveryModel);

  // A victim's queue gives back only what it holds beyond its guarantee, model by model.
  c.Hold(borrower, c.h100, 3);
  c.Hold(borrower, c.t4, 2);
  CHECK(c.tree.MayReclaimFrom(borrower, owed, kGpu, On(c.h100, 1000)));
  CHECK_FALSE(c.tree.MayReclaimFrom(borrower, owed, kGpu * 2, On(c.h100, 2000)));
  CHECK(c.tree.MayReclaimFrom(borrower, owed, kGpu * 2, On(c.t4, 2000)));
}

TEST_CASE("gpu model quotas: an unknown model weighs 1 and GPUs without a model too") {
  GpuModels models;
  const int known = *models.Intern("H100-80GB");
  const int unknown = *models.Intern("Z9");
  QueueTree tree(0, &models, {{"H100-80GB", 3.0}});
  GpuModelAmounts capacity = On(known, 1000);
  capacity.Add(unknown, 1000);
  tree.SetCapacity({0, 0, 3000, 0}, capacity);  // a third GPU of no model.
  const QueueId a = *tree.Create(Queue("a"));
  const QueueId b = *tree.Create(Queue("b"));
  tree.AddAllocation(a, kGpu, 0, On(unknown, 1000));
  tree.AddAllocation(b, kGpu, 0);
  // Priced capacity 3 + 1 + 1 = 5.
  CHECK(tree.DominantShareOf(a) == doctest::Approx(0.2));
  CHECK(tree.DominantShareOf(b) == doctest::Approx(0.2));
}

}  // namespace
}  // namespace tessera
