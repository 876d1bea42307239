// QueueTree: hierarchical weighted DRF, guarantees, borrowing limits, caps, blocking and
// decayed usage. A small harness plays the engine: every leaf has endless one-GPU jobs and the
// cluster is a pool of GPUs.
#include <doctest/doctest.h>

#include <map>

#include "fairshare/queue_tree.h"

namespace tessera {
namespace {

const ResourceVector kGpu{0, 0, 1000, 0};

v1::QueueSpec Queue(const std::string& name, double weight = 1.0) {
  v1::QueueSpec spec;
  spec.set_name(name);
  spec.set_weight(weight);
  return spec;
}

// Fills a cluster of `gpus` GPUs from the listed leaves, each with endless 1-GPU jobs, and
// returns the GPUs each leaf got.
std::map<std::string, int> Fill(QueueTree& tree, const std::vector<std::string>& leaves, int gpus) {
  uint64_t next_job = 1;
  for (const std::string& leaf : leaves) {
    for (int i = 0; i < gpus + 1; ++i) {
      tree.AddPending(*tree.Find(leaf), PendingKey{0, 0, next_job++});
    }
  }
  int free = gpus;
  std::map<std::string, int> got;
  while (auto leaf = tree.PickLeaf()) {
    if (auto v = tree.CheckQuota(*leaf, kGpu)) {
      tree.BlockOnQuota(*leaf, v->queue);
      continue;
    }
    if (free == 0) {
      tree.BlockOnCapacity(*leaf);
      continue;
    }
    --free;
    tree.AddAllocation(*leaf, kGpu, 0);
    tree.RemovePending(*leaf, *tree.Head(*leaf));
    ++got[tree.Name(*leaf)];
  }
  return got;
}

TEST_CASE("queue tree: DRF is applied level by level, not across all leaves") {
  QueueTree tree;
  tree.SetCapacity({0, 0, 12000, 0});
  REQUIRE(tree.Create(Queue("org1")).ok());
  REQUIRE(tree.Create(Queue("org1/a")).ok());
  REQUIRE(tree.Create(Queue("org1/b")).ok());
  REQUIRE(tree.Create(Queue("org2")).ok());
  REQUIRE(tree.Create(Queue("org2/c")).ok());
  // Flat DRF over three leaves would give 4 each; by level, each org gets 6.
  auto got = Fill(tree, {"org1/a", "org1/b", "org2/c"}, 12);
  CHECK(got["org1/a"] == 3);
  CHECK(got["org1/b"] == 3);
  CHECK(got["org2/c"] == 6);
  CHECK(tree.Allocated(*tree.Find("org1")).gpu_milli() == 6000);
}

TEST_CASE("queue tree: weights split siblings in proportion") {
  QueueTree tree;
  tree.SetCapacity({0, 0, 12000, 0});
  REQUIRE(tree.Create(Queue("heavy", 2.0)).ok());
  REQUIRE(tree.Create(Queue("light", 1.0)).ok());
  auto got = Fill(tree, {"heavy", "light"}, 12);
  CHECK(got["heavy"] == 8);
  CHECK(got["light"] == 4);
}

TEST_CASE("queue tree: a queue below its guarantee is served before the others") {
  QueueTree tree;
  tree.SetCapacity({0, 0, 8000, 0});
  v1::QueueSpec guaranteed = Queue("guaranteed");
  guaranteed.mutable_guarantee()->set_gpu_milli(6000);
  REQUIRE(tree.Create(guaranteed).ok());
  REQUIRE(tree.Create(Queue("other")).ok());
  // Without the guarantee DRF would split 4/4.
  auto got = Fill(tree, {"guaranteed", "other"}, 8);
  CHECK(got["guaranteed"] == 6);
  CHECK(got["other"] == 2);
}

TEST_CASE("queue tree: the borrowing limit stops a queue above guarantee + limit") {
  QueueTree tree;
  tree.SetCapacity({0, 0, 8000, 0});
  v1::QueueSpec q = Queue("borrower");
  q.mutable_guarantee()->set_gpu_milli(2000);
  q.mutable_borrowing_limit()->set_gpu_milli(1000);
  REQUIRE(tree.Create(q).ok());
  // Alone on an idle cluster it still stops at 3 GPUs.
  auto got = Fill(tree, {"borrower"}, 8);
  CHECK(got["borrower"] == 3);
  auto v = tree.CheckQuota(*tree.Find("borrower"), kGpu);
  REQUIRE(v.has_value());
  CHECK_FALSE(v->cap);
  CHECK(v->resource == static_cast<int>(Resource::kGpu));
}

TEST_CASE("queue tree: a cap on a parent limits its whole subtree") {
  QueueTree tree;
  tree.SetCapacity({0, 0, 16000, 0});
  v1::QueueSpec org = Queue("org");
  org.mutable_cap()->set_gpu_milli(5000);
  REQUIRE(tree.Create(org).ok());
  REQUIRE(tree.Create(Queue("org/a")).ok());
  REQUIRE(tree.Create(Queue("org/b")).ok());
  REQUIRE(tree.Create(Queue("free")).ok());
  auto got = Fill(tree, {"org/a", "org/b", "free"}, 16);
  CHECK(got["org/a"] + got["org/b"] == 5);
  CHECK(got["free"] == 11);
  auto v = tree.CheckQuota(*tree.Find("org/a"), kGpu);
  REQUIRE(v.has_value());
  CHECK(tree.Name(v->queue) == "org");
  CHECK(v->cap);
}

TEST_CASE("queue tree: releasing inside a capped subtree unblocks its leaves") {
  QueueTree tree;
  tree.SetCapacity({0, 0, 16000, 0});
  v1::QueueSpec org = Queue("org");
  org.mutable_cap()->set_gpu_milli(2000);
  REQUIRE(tree.Create(org).ok());
  REQUIRE(tree.Create(Queue("org/a")).ok());
  Fill(tree, {"org/a"}, 16);
  const QueueId a = *tree.Find("org/a");
  CHECK(tree.IsBlocked(a));
  CHECK_FALSE(tree.PickLeaf().has_value());
  tree.SubtractAllocation(a, kGpu, 0);
  CHECK_FALSE(tree.IsBlocked(a));
  CHECK(tree.PickLeaf() == a);
}

TEST_CASE("queue tree: capacity-blocked leaves wait for UnblockCapacity; a new head unblocks") {
  QueueTree tree;
  tree.SetCapacity({0, 0, 1000, 0});
  REQUIRE(tree.Create(Queue("q")).ok());
  const QueueId q = *tree.Find("q");
  tree.AddPending(q, PendingKey{0, 10, 1});
  tree.BlockOnCapacity(q);
  CHECK_FALSE(tree.PickLeaf().has_value());
  // A job behind the blocked head changes nothing; a new head might fit.
  tree.AddPending(q, PendingKey{0, 20, 2});
  CHECK_FALSE(tree.PickLeaf().has_value());
  tree.AddPending(q, PendingKey{5, 30, 3});
  CHECK(tree.PickLeaf() == q);
  CHECK(tree.Head(q)->job_id == 3);  // higher priority first.
  tree.BlockOnCapacity(q);
  tree.UnblockCapacity();
  CHECK(tree.PickLeaf() == q);
}

TEST_CASE("queue tree: pending jobs are ordered by priority, then submit time, then id") {
  QueueTree tree;
  REQUIRE(tree.Create(Queue("q")).ok());
  const QueueId q = *tree.Find("q");
  tree.AddPending(q, PendingKey{0, 100, 1});
  tree.AddPending(q, PendingKey{0, 50, 2});
  tree.AddPending(q, PendingKey{10, 200, 3});
  tree.AddPending(q, PendingKey{0, 50, 0});
  std::vector<uint64_t> order;
  while (auto head = tree.Head(q)) {
    order.push_back(head->job_id);
    tree.RemovePending(q, *head);
  }
  CHECK(order == std::vector<uint64_t>{3, 0, 2, 1});
}

TEST_CASE("queue tree: with a half-life, a queue that used a lot lately yields") {
  constexpr int64_t kHour = 3600LL * 1000 * 1000;
  QueueTree decayed(kHour);
  QueueTree plain;
  for (QueueTree* tree : {&decayed, &plain}) {
    tree->SetCapacity({0, 0, 8000, 0});
    REQUIRE(tree->Create(Queue("busy")).ok());
    REQUIRE(tree->Create(Queue("idle")).ok());
    const QueueId busy = *tree->Find("busy");
    // "busy" held all 8 GPUs for two hours, then finished.
    tree->AddAllocation(busy, {0, 0, 8000, 0}, 0);
    tree->SubtractAllocation(busy, {0, 0, 8000, 0}, 2 * kHour);
    tree->RefreshUsage(2 * kHour);
    tree->AddPending(busy, PendingKey{0, 0, 1});
    tree->AddPending(*tree->Find("idle"), PendingKey{0, 0, 2});
  }
  // Both hold nothing now. Plain DRF breaks the tie by id ("busy" was created first);
  // decayed usage remembers and serves "idle" first.
  CHECK(plain.Name(*plain.PickLeaf()) == "busy");
  CHECK(decayed.Name(*decayed.PickLeaf()) == "idle");
  // Two hours at all 8 GPUs with a one-hour half-life: usage rose to 1 - 2^-2 = 3/4 of the
  // cluster; one idle hour later it has halved.
  const QueueId busy = *decayed.Find("busy");
  CHECK(decayed.DominantShareOf(busy) == doctest::Approx(0.75).epsilon(0.001));
  decayed.RefreshUsage(3 * kHour);
  CHECK(decayed.DominantShareOf(busy) == doctest::Approx(0.375).epsilon(0.001));
}

TEST_CASE("queue tree: reclaim follows guarantees up the tree and stops where paths meet") {
  QueueTree tree;
  tree.SetCapacity(ResourceVector{0, 0, 8000, 0});
  v1::QueueSpec team = Queue("team");
  team.mutable_guarantee()->set_gpu_milli(4000);
  const QueueId t = *tree.Create(team);
  const QueueId a = *tree.Create(Queue("team/a"));
  const QueueId b = *tree.Create(Queue("team/b"));
  v1::QueueSpec other_spec = Queue("other");
  other_spec.mutable_guarantee()->set_gpu_milli(2000);
  const QueueId other = *tree.Create(other_spec);
  auto none = [](QueueId) { return ResourceCharge(); };
  auto claimant = [](const std::optional<ReclaimClaim>& c) {
    return c ? std::optional<QueueId>(c->queue) : std::nullopt;
  };
  tree.AddAllocation(b, kGpu * 2, 0);
  tree.AddAllocation(other, kGpu * 6, 0);
  // team/a has no guarantee of its own: its parent's claims for it, while the team stays
  // within 4 GPUs, counting what is already being freed for it.
  CHECK(claimant(tree.ReclaimingQueue(a, kGpu, kEveryModel, none)) == t);
  CHECK(claimant(tree.ReclaimingQueue(a, kGpu, kEveryModel, [&](QueueId q) {
          return q == t ? ResourceCharge{kGpu * 2, {}} : ResourceCharge();
        })) == std::nullopt);
  // A sibling under the same guarantee is no victim; "other" gives back down to its own 2.
  CHECK_FALSE(tree.MayReclaimFrom(b, t, kGpu));
  CHECK(tree.MayReclaimFrom(other, t, kGpu * 4));
  CHECK_FALSE(tree.MayReclaimFrom(other, t, kGpu * 5));
  CHECK(tree.IsWithin(a, t));
  CHECK_FALSE(tree.IsWithin(other, t));
}

TEST_CASE("queue tree: administration errors") {
  QueueTree tree;
  REQUIRE(tree.Create(Queue("a")).ok());
  CHECK(tree.Create(Queue("a")).status().code() == StatusCode::kAlreadyExists);
  CHECK(tree.Create(Queue("missing/child")).status().code() == StatusCode::kNotFound);
  CHECK(tree.Update(Queue("nope")).code() == StatusCode::kNotFound);
  tree.AddPending(*tree.Find("a"), PendingKey{0, 0, 1});
  // A leaf holding jobs cannot become a parent, nor be deleted.
  CHECK(tree.Create(Queue("a/b")).status().code() == StatusCode::kFailedPrecondition);
  CHECK(tree.Delete("a").code() == StatusCode::kFailedPrecondition);
  tree.RemovePending(*tree.Find("a"), PendingKey{0, 0, 1});
  REQUIRE(tree.Create(Queue("a/b")).ok());
  CHECK(tree.Delete("a").code() == StatusCode::kFailedPrecondition);  // has a child.
  CHECK(tree.Delete("a/b").ok());
  CHECK(tree.Delete("a").ok());
  CHECK(tree.Delete("a").code() == StatusCode::kNotFound);
  CHECK_FALSE(tree.Find("a").has_value());
}

}  // namespace
}  // namespace tessera
