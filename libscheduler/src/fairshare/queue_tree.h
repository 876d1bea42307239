// QueueTree: the queue hierarchy (org -> team -> user) and the order in which it is served.
//
// Each internal queue orders its children with a DrfSorter; the queue to serve next is found by
// walking from the top, taking the first child at each level (hierarchical weighted DRF, level
// by level). With a usage half-life, a queue's share is that of what it holds now plus its
// decayed recent usage, so queues that ran a lot lately yield to those that did not. Leaves hold
// the pending jobs in PendingKey order. A leaf takes part only while it has pending work and is not
// blocked: blocked on capacity (its head job does not fit the cluster now) until capacity is freed,
// or on quota (a cap or borrowing limit on its path would be exceeded) until an allocation on that
// path shrinks.
//
// Cost: choosing a leaf is O(depth); an allocation change is O(depth * log siblings). The tree
// never looks at nodes or jobs beyond the keys and vectors it is given.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fairshare/decayed_usage.h"
#include "fairshare/drf_sorter.h"
#include "fairshare/pending_key.h"
#include "model/resource_vector.h"
#include "tessera/status.h"
#include "tessera/v1/queue.pb.h"

namespace tessera {

using QueueId = uint32_t;

struct QuotaViolation {
  QueueId queue;
  int resource;
  bool cap;  // true: the hard cap; false: the borrowing limit.
};

class QueueTree {
 public:
  static constexpr QueueId kRoot = 0;

  // `usage_half_life_us` of 0 orders queues by current allocation (pure DRF).
  explicit QueueTree(int64_t usage_half_life_us = 0);

  // The total every share is divided by.
  void SetCapacity(const ResourceVector& capacity);
  const ResourceVector& capacity() const { return capacity_; }

  // --- Administration. Specs are assumed validated (ValidateQueueSpec).
  // Errors: ALREADY_EXISTS, NOT_FOUND (parent), FAILED_PRECONDITION (parent holds jobs).
  StatusOr<QueueId> Create(const v1::QueueSpec& spec);
  // Errors: NOT_FOUND.
  Status Update(const v1::QueueSpec& spec);
  // Errors: NOT_FOUND, FAILED_PRECONDITION (children, pending or running jobs).
  Status Delete(const std::string& name);

  std::optional<QueueId> Find(const std::string& name) const;
  const std::string& Name(QueueId q) const { return nodes_[q].name; }
  bool IsLeaf(QueueId q) const { return nodes_[q].children.empty(); }
  const v1::QueueSpec& Spec(QueueId q) const { return nodes_[q].spec; }
  // The queue above `q` (kRoot for a top-level queue; the root's own is kRoot).
  QueueId Parent(QueueId q) const { return nodes_[q].parent; }
  // Every live queue except the root, parents before children.
  std::vector<QueueId> All() const;

  // --- Pending work in leaves.
  void AddPending(QueueId leaf, const PendingKey& key);
  void RemovePending(QueueId leaf, const PendingKey& key);
  std::optional<PendingKey> Head(QueueId leaf) const;
  size_t PendingCount(QueueId q) const;  // the whole subtree
  void AdjustRunning(QueueId leaf, int delta);
  // Jobs in state PENDING, whether in the pending order, infeasible or set aside while their
  // victims stop: what QueueStatus.pending_jobs reports for the subtree.
  void AdjustPendingJobs(QueueId leaf, int delta);

  // --- Accounting. `now_us` feeds decayed usage.
  void AddAllocation(QueueId leaf, const ResourceVector& delta, int64_t now_us);
  void SubtractAllocation(QueueId leaf, const ResourceVector& delta, int64_t now_us);
  // Folds elapsed time into decayed usage and re-keys (no-op without a half-life).
  void RefreshUsage(int64_t now_us);
  const ResourceVector& Allocated(QueueId q) const { return nodes_[q].allocated; }
  // True while the queue holds less than its guarantee on every guaranteed resource.
  bool BelowGuarantee(QueueId q) const;
  // True when the queue has a guarantee and holding `extra` more would stay within it on every
  // guaranteed resource.
  bool WithinGuarantee(QueueId q, const ResourceVector& extra) const;
  // True when the queue could give back `amount` and still hold at least its guarantee (on
  // every guaranteed resource): what it holds beyond that is borrowed.
  bool CanGiveBack(QueueId q, const ResourceVector& amount) const;
  double DominantShareOf(QueueId q) const;
  // Reclaim, across the hierarchy. The queue that justifies reclaiming `wanted` more for a job
  // of `leaf`: the first on its path, the leaf first, that has a guarantee which what its
  // subtree holds, plus `incoming(q)` (what is already being freed for it) and `wanted`, stays
  // within. nullopt when there is none.
  std::optional<QueueId> ReclaimingQueue(
      QueueId leaf, const ResourceVector& wanted,
      const std::function<ResourceVector(QueueId)>& incoming) const;
  // True when a job of `victim_leaf`, holding `amount`, may be stopped for `claimant`: it lies
  // outside the claimant's subtree, and every queue from it up to where the two paths meet
  // could give `amount` back and keep its guarantee (what they hold beyond it is borrowed).
  bool MayReclaimFrom(QueueId victim_leaf, QueueId claimant, const ResourceVector& amount) const;
  // True when `q` is `ancestor` or lies below it.
  bool IsWithin(QueueId q, QueueId ancestor) const;

  // --- Choosing.
  // The leaf to serve next, or nullopt when no leaf has unblocked pending work.
  std::optional<QueueId> PickLeaf() const;
  // True when job `a` (in leaf `leaf_a`) comes before job `b` in fair order now: compared by
  // their queues where the paths meet, or by PendingKey in one queue. Blocked queues included.
  // With `strictly`, queues tied on share (ordered by id) do not count.
  bool Precedes(QueueId leaf_a, const PendingKey& a, QueueId leaf_b, const PendingKey& b,
                bool strictly = false) const;
  // Up to `limit` pending jobs of `leaf`, in order.
  std::vector<PendingKey> PendingJobs(QueueId leaf, size_t limit) const;
  // Leaves that have pending jobs, blocked or not.
  std::vector<QueueId> LeavesWithPending() const;

  // The first cap or borrowing limit, walking up from `leaf`, that `request` more would
  // exceed; nullopt when it fits.
  std::optional<QuotaViolation> CheckQuota(QueueId leaf, const ResourceVector& request) const;
  // How many tasks of `per_task` the quotas on the path from `leaf` still admit, up to `limit`.
  int TasksWithinQuota(QueueId leaf, const ResourceVector& per_task, int limit) const;

  void BlockOnCapacity(QueueId leaf);
  void BlockOnQuota(QueueId leaf, QueueId blocker);
  // Unblocks every leaf blocked on capacity (call when capacity was freed).
  void UnblockCapacity();
  bool IsBlocked(QueueId leaf) const { return nodes_[leaf].blocked != Block::kNone; }

  v1::QueueStatus StatusOf(QueueId q) const;

 private:
  enum class Block { kNone, kCapacity, kQuota };
  struct QueueNode {
    std::string name;
    v1::QueueSpec spec;
    QueueId parent = kRoot;
    std::vector<QueueId> children;
    bool alive = true;
    ResourceVector guarantee;
    ResourceVector borrow_ceiling;  // guarantee + borrowing limit, or unlimited.
    ResourceVector cap;
    ResourceVector allocated;
    DecayedUsage usage;
    DrfSorter sorter;  // orders the children.
    std::set<PendingKey> pending;
    int64_t running_jobs = 0;
    int64_t pending_jobs = 0;  // in state PENDING, the subtree (AdjustPendingJobs).
    Block blocked = Block::kNone;
  };

  void ApplySpec(QueueId q, const v1::QueueSpec& spec);
  bool Eligible(QueueId q) const;
  // Re-evaluates q's eligibility and propagates it up the tree.
  void RefreshEligibility(QueueId q);
  void Unblock(QueueId leaf);
  void Rekey(QueueId q, int64_t now_us);
  void ChangeAllocation(QueueId leaf, const ResourceVector& delta, bool add, int64_t now_us);

  int64_t half_life_us_;
  ResourceVector capacity_;
  std::vector<QueueNode> nodes_;
  std::unordered_map<std::string, QueueId> by_name_;
  std::vector<QueueId> capacity_blocked_;
  std::unordered_map<QueueId, std::vector<QueueId>> quota_blocked_;  // blocker -> leaves
};

}  // namespace tessera
