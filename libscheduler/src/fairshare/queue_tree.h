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
// GPU models. Beside its limits on GPUs of any model (the gpu_milli of its guarantee, borrowing
// limit and cap), a queue may have the same three per GPU model (QueueSpec.gpu_models), in
// milli-GPUs of that model. Every allocation comes with its GPUs by model (a GpuModelAmounts
// beside the ResourceVector), so each queue also holds what its subtree holds per model, and a
// charge is checked against both kinds of limit. Guarantees per model count like any other
// guaranteed resource in the order (below guarantee = below on every one), and reclaim is per
// model: a queue owed H100s may take back H100s, not T4s (ReclaimingQueue says which models).
// The order prices GPUs by model (fairshare/gpu_model_weights.h): the GPU term of a share is
// the price of the GPUs held over the price of every GPU present. GPUs charged without a model
// (a caller that gives none) weigh 1.
//
// Cost: choosing a leaf is O(depth); an allocation change is O(depth * (log siblings + models
// the change touches)). The tree never looks at nodes or jobs beyond the keys and vectors it is
// given.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fairshare/decayed_usage.h"
#include "fairshare/drf_sorter.h"
#include "fairshare/gpu_model_weights.h"
#include "fairshare/pending_key.h"
#include "model/gpu_model_amounts.h"
#include "model/gpu_models.h"
#include "model/resource_vector.h"
#include "tessera/status.h"
#include "tessera/v1/queue.pb.h"

namespace tessera {

using QueueId = uint32_t;

struct QuotaViolation {
  QueueId queue;
  int resource;
  bool cap;  // true: the hard cap; false: the borrowing limit.
  // The GPU model whose limit (QueueSpec.gpu_models) it is; -1: a limit on any model.
  int model = -1;
};

// Every GPU model, as a ModelMask.
inline constexpr ModelMask kEveryModel = ~ModelMask{0};

// A queue that may take back its guarantee by reclaim (QueueTree::ReclaimingQueue), and the GPU
// models whose room it may take back.
struct ReclaimClaim {
  QueueId queue = 0;
  ModelMask models = kEveryModel;
};

class QueueTree {
 public:
  static constexpr QueueId kRoot = 0;

  // `usage_half_life_us` of 0 orders queues by current allocation (pure DRF). `models` names
  // the GPU models that ids in GpuModelAmounts stand for (the cluster's table; model names in
  // queue specs are interned in it); null: the tree keeps its own. `gpu_model_weights`:
  // FairShareOptions::gpu_model_weights (validated); empty: every model weighs 1.
  explicit QueueTree(int64_t usage_half_life_us = 0, GpuModels* models = nullptr,
                     const std::map<std::string, double>& gpu_model_weights = {});

  // The total every share is divided by; `by_model` is its GPUs by model.
  void SetCapacity(const ResourceVector& capacity, const GpuModelAmounts& by_model = {});
  const ResourceVector& capacity() const { return capacity_; }

  // --- Administration. Specs are assumed validated (ValidateQueueSpec).
  // Errors: ALREADY_EXISTS, NOT_FOUND (parent), FAILED_PRECONDITION (parent holds jobs),
  // RESOURCE_EXHAUSTED (a model in gpu_models would exceed GpuModels::kMaxModels).
  StatusOr<QueueId> Create(const v1::QueueSpec& spec);
  // Errors: NOT_FOUND, RESOURCE_EXHAUSTED (as Create).
  Status Update(const v1::QueueSpec& spec);
  // Errors: NOT_FOUND, FAILED_PRECONDITION (children, pending or running jobs).
  Status Delete(const std::string& name);

  std::optional<QueueId> Find(const std::string& name) const;
  const std::string& Name(QueueId q) const { return nodes_[q].name; }
  bool IsLeaf(QueueId q) const { return nodes_[q].children.empty(); }
  const v1::QueueSpec& Spec(QueueId q) const { return nodes_[q].spec; }
  // The queue above `q` (kRoot for a top-level queue; the root's own is kRoot).
  QueueId Parent(QueueId q) const { return nodes_[q].parent; }
  // Why the queue's jobs may not use burst capacity (its burst budget, or an ancestor's, is
  // spent: elastic/spend_ledger.h); empty while they may. Set from outside the tree.
  void SetBurstRefusal(QueueId q, std::string why) { nodes_[q].burst_refusal = std::move(why); }
  const std::string& BurstRefusal(QueueId q) const { return nodes_[q].burst_refusal; }
  // JobSpec.allow_spot's default for a job of `q`: the nearest allow_spot set on its path.
  std::optional<bool> AllowSpot(QueueId q) const;
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

  // --- Accounting. `now_us` feeds decayed usage; `by_model` is the GPUs of `delta` by model.
  void AddAllocation(QueueId leaf, const ResourceVector& delta, int64_t now_us,
                     const GpuModelAmounts& by_model = {});
  void SubtractAllocation(QueueId leaf, const ResourceVector& delta, int64_t now_us,
                          const GpuModelAmounts& by_model = {});
  // Folds elapsed time into decayed usage and re-keys (no-op without a half-life).
  void RefreshUsage(int64_t now_us);
  const ResourceVector& Allocated(QueueId q) const { return nodes_[q].allocated; }
  const GpuModelAmounts& AllocatedByModel(QueueId q) const { return nodes_[q].allocated_by_model; }
  // True while the queue holds less than its guarantee on every guaranteed resource (and
  // every guaranteed GPU model).
  bool BelowGuarantee(QueueId q) const;
  // True when the queue has a guarantee and holding `extra` more would stay within it on every
  // guaranteed resource.
  bool WithinGuarantee(QueueId q, const ResourceVector& extra) const;
  // True when the queue could give back `amount` (`by_model`: its GPUs by model) and still hold
  // at least its guarantee on every guaranteed resource and GPU model: what it holds beyond
  // that is borrowed.
  bool CanGiveBack(QueueId q, const ResourceVector& amount,
                   const GpuModelAmounts& by_model = {}) const;
  double DominantShareOf(QueueId q) const;
  // Reclaim, across the hierarchy. The queue that justifies reclaiming `wanted` more for a job
  // of `leaf` that may run on `models`: the first on its path, the leaf first, that has a
  // guarantee which what its subtree holds, plus `incoming(q)` (what is already being freed
  // for it) and `wanted`, stays within, and the models it may reclaim. Every guaranteed
  // resource other than GPU compute must stay within. GPU compute must stay within the
  // guarantee on any model (then every model may be reclaimed) or within the guarantee of a
  // model (then those models); a queue that guarantees no GPUs, of any model or of one,
  // reclaims for its other guarantees on every model. nullopt when there is none.
  std::optional<ReclaimClaim> ReclaimingQueue(
      QueueId leaf, const ResourceVector& wanted, ModelMask models,
      const std::function<ResourceCharge(QueueId)>& incoming) const;
  // True when a job of `victim_leaf`, holding `amount` (`by_model`: its GPUs by model), may be
  // stopped for `claimant`: it lies outside the claimant's subtree, and every queue from it up
  // to where the two paths meet could give it back and keep its guarantee (what they hold
  // beyond it is borrowed).
  bool MayReclaimFrom(QueueId victim_leaf, QueueId claimant, const ResourceVector& amount,
                      const GpuModelAmounts& by_model = {}) const;
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

  // The first cap or borrowing limit on any model, walking up from `leaf`, that `request` more
  // would exceed; nullopt when it fits. (Limits per model: CheckModelQuota.)
  std::optional<QuotaViolation> CheckQuota(QueueId leaf, const ResourceVector& request) const;
  // How many tasks of `per_task` the quotas on the path from `leaf` still admit, up to `limit`
  // (limits on any model only: which model a task gets is not known yet).
  int TasksWithinQuota(QueueId leaf, const ResourceVector& per_task, int limit) const;
  // True when some queue on the path from `leaf` caps or limits the borrowing of a GPU model.
  bool HasModelLimits(QueueId leaf) const;
  // The first cap or borrowing limit of `model`, walking up from `leaf`, that `gpu_milli` more
  // of it would exceed; nullopt when it fits.
  std::optional<QuotaViolation> CheckModelQuota(QueueId leaf, int model, int64_t gpu_milli) const;

  void BlockOnCapacity(QueueId leaf);
  void BlockOnQuota(QueueId leaf, QueueId blocker);
  // Unblocks every leaf blocked on capacity (call when capacity was freed).
  void UnblockCapacity();
  // Unblocks `leaf` if it waits for capacity (something changed for its head alone: a running
  // job of the queue now gives way to it).
  void UnblockCapacity(QueueId leaf);
  bool IsBlocked(QueueId leaf) const { return nodes_[leaf].blocked != Block::kNone; }

  v1::QueueStatus StatusOf(QueueId q) const;

 private:
  enum class Block { kNone, kCapacity, kQuota };
  // QueueSpec.gpu_models, interned: milli-GPUs of one model.
  struct ModelQuota {
    int model = -1;
    int64_t guarantee = 0;
    int64_t borrow_ceiling = ResourceVector::kUnlimited;  // guarantee + borrowing limit.
    int64_t cap = ResourceVector::kUnlimited;
  };
  struct QueueNode {
    std::string name;
    v1::QueueSpec spec;
    QueueId parent = kRoot;
    std::vector<QueueId> children;
    bool alive = true;
    ResourceVector guarantee;
    ResourceVector borrow_ceiling;  // guarantee + borrowing limit, or unlimited.
    ResourceVector cap;
    std::vector<ModelQuota> model_quotas;  // by model, increasing.
    GpuModelAmounts guarantee_by_model;    // the guarantees of model_quotas.
    ResourceVector allocated;
    GpuModelAmounts allocated_by_model;
    DecayedUsage usage;
    DrfSorter sorter;  // orders the children.
    std::set<PendingKey> pending;
    int64_t running_jobs = 0;
    int64_t pending_jobs = 0;  // in state PENDING, the subtree (AdjustPendingJobs).
    Block blocked = Block::kNone;
    std::string burst_refusal;
  };

  // Interns the models of spec.gpu_models. Errors: RESOURCE_EXHAUSTED.
  Status InternModels(const v1::QueueSpec& spec);
  void ApplySpec(QueueId q, const v1::QueueSpec& spec);
  static bool LimitsModels(const QueueNode& n);
  static const ModelQuota* FindModelQuota(const QueueNode& n, int model);
  // GPU compute priced by model: kUnit per milli-GPU, plus the difference of each model's
  // weight for the GPUs of that model (so GPUs given without a model weigh 1).
  int64_t PricedGpu(const ResourceVector& amount, const GpuModelAmounts& by_model) const;
  // What orders a queue among its siblings: what it holds (and its decayed usage), its GPUs
  // priced.
  ResourceVector PricedUsage(const QueueNode& n) const;
  // The models among `models` that `q`'s guarantee justifies reclaiming `wanted` for.
  ModelMask ClaimedModels(QueueId q, const ResourceVector& wanted, ModelMask models,
                          const ResourceCharge& incoming) const;
  bool Eligible(QueueId q) const;
  // Re-evaluates q's eligibility and propagates it up the tree.
  void RefreshEligibility(QueueId q);
  void Unblock(QueueId leaf);
  void Rekey(QueueId q, int64_t now_us);
  void ChangeAllocation(QueueId leaf, const ResourceVector& delta, const GpuModelAmounts& by_model,
                        bool add, int64_t now_us);

  int64_t half_life_us_;
  GpuModels own_models_;  // when none is given.
  GpuModels* models_;
  GpuModelWeights weights_;
  ResourceVector capacity_;
  GpuModelAmounts capacity_by_model_;
  ResourceVector priced_capacity_;  // capacity_, its GPUs priced: what the sorters divide by.
  int model_limited_queues_ = 0;    // live queues with a cap or borrowing limit on a model.
  std::vector<QueueNode> nodes_;
  std::unordered_map<std::string, QueueId> by_name_;
  std::vector<QueueId> capacity_blocked_;
  std::unordered_map<QueueId, std::vector<QueueId>> quota_blocked_;  // blocker -> leaves
};

}  // namespace tessera
