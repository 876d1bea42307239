#include "fairshare/queue_tree.h"

#include "common/check.h"

#include <algorithm>
#include <functional>

#include "fairshare/drf.h"

namespace tessera {
namespace {

std::string ParentName(const std::string& name) {
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? std::string() : name.substr(0, slash);
}

double EffectiveWeight(const v1::QueueSpec& spec) {
  return spec.weight() > 0 ? spec.weight() : 1.0;
}

}  // namespace

QueueTree::QueueTree(int64_t usage_half_life_us, GpuModels* models,
                     const std::map<std::string, double>& gpu_model_weights)
    : half_life_us_(usage_half_life_us),
      models_(models != nullptr ? models : &own_models_),
      weights_(gpu_model_weights, models_) {
  QueueNode root;
  root.name = "";
  root.cap = ResourceVector::Unlimited();
  root.borrow_ceiling = ResourceVector::Unlimited();
  nodes_.push_back(std::move(root));
}

void QueueTree::SetCapacity(const ResourceVector& capacity, const GpuModelAmounts& by_model) {
  capacity_ = capacity;
  capacity_by_model_ = by_model;
  priced_capacity_ = capacity;
  priced_capacity_[static_cast<int>(Resource::kGpu)] = PricedGpu(capacity, by_model);
  for (QueueNode& n : nodes_) {
    if (n.alive) n.sorter.SetCapacity(priced_capacity_);
  }
}

int64_t QueueTree::PricedGpu(const ResourceVector& amount, const GpuModelAmounts& by_model) const {
  int64_t priced = GpuModelWeights::kUnit * amount.gpu_milli();
  for (const auto& [model, milli] : by_model.entries()) {
    priced += (weights_.Of(model) - GpuModelWeights::kUnit) * milli;
  }
  return priced;
}

ResourceVector QueueTree::PricedUsage(const QueueNode& n) const {
  constexpr int kGpu = static_cast<int>(Resource::kGpu);
  ResourceVector usage = n.allocated;
  usage[kGpu] = PricedGpu(n.allocated, n.allocated_by_model);
  if (half_life_us_ > 0) {
    // What a queue holds now counts at once and its recent past on top, so a burst of
    // decisions cannot hand everything to the queue with the least history.
    ResourceVector past = n.usage.Equivalent();
    past[kGpu] = PricedGpu(past, n.usage.EquivalentByModel());
    usage += past;
  }
  return usage;
}

Status QueueTree::InternModels(const v1::QueueSpec& spec) {
  for (int i = 0; i < spec.gpu_models_size(); ++i) {
    if (!models_->Intern(spec.gpu_models(i).model())) {
      return ResourceExhaustedError("queue '" + spec.name() + "': gpu_models[" + std::to_string(i) +
                                    "].model: more than " + std::to_string(GpuModels::kMaxModels) +
                                    " GPU models are known");
    }
  }
  return Status::Ok();
}

bool QueueTree::LimitsModels(const QueueNode& n) {
  for (const ModelQuota& m : n.model_quotas) {
    if (m.cap != ResourceVector::kUnlimited || m.borrow_ceiling != ResourceVector::kUnlimited) {
      return true;
    }
  }
  return false;
}

const QueueTree::ModelQuota* QueueTree::FindModelQuota(const QueueNode& n, int model) {
  for (const ModelQuota& m : n.model_quotas) {
    if (m.model == model) return &m;
  }
  return nullptr;
}

void QueueTree::ApplySpec(QueueId q, const v1::QueueSpec& spec) {
  QueueNode& n = nodes_[q];
  n.spec = spec;
  n.guarantee = ResourceVector::FromProto(spec.guarantee());
  n.cap = ResourceVector::FromLimits(spec.cap());
  ResourceVector borrow = ResourceVector::FromLimits(spec.borrowing_limit());
  for (int r = 0; r < kNumResources; ++r) {
    n.borrow_ceiling[r] = borrow[r] == ResourceVector::kUnlimited ? ResourceVector::kUnlimited
                                                                  : n.guarantee[r] + borrow[r];
  }
  const bool limited_before = n.alive && LimitsModels(n);
  n.model_quotas.clear();
  n.guarantee_by_model.clear();
  for (const v1::GpuModelQuota& m : spec.gpu_models()) {
    ModelQuota quota;
    quota.model = *models_->Find(m.model());  // interned by InternModels.
    quota.guarantee = m.guarantee_gpu_milli();
    if (m.has_borrowing_limit_gpu_milli()) {
      quota.borrow_ceiling = quota.guarantee + m.borrowing_limit_gpu_milli();
    }
    if (m.has_cap_gpu_milli()) quota.cap = m.cap_gpu_milli();
    n.guarantee_by_model.Add(quota.model, quota.guarantee);
    n.model_quotas.push_back(quota);
  }
  std::sort(n.model_quotas.begin(), n.model_quotas.end(),
            [](const ModelQuota& a, const ModelQuota& b) { return a.model < b.model; });
  model_limited_queues_ += (LimitsModels(n) ? 1 : 0) - (limited_before ? 1 : 0);
  DrfSorter& siblings = nodes_[n.parent].sorter;
  siblings.UpdateWeight(q, EffectiveWeight(spec));
  siblings.UpdateGuarantee(q, n.guarantee, n.guarantee_by_model);
  Rekey(q, 0);  // the sorter keeps GPUs by model only for queues with guarantees per model.
}

StatusOr<QueueId> QueueTree::Create(const v1::QueueSpec& spec) {
  if (Find(spec.name())) return AlreadyExistsError("queue '" + spec.name() + "' already exists");
  QueueId parent = kRoot;
  const std::string parent_name = ParentName(spec.name());
  if (!parent_name.empty()) {
    std::optional<QueueId> p = Find(parent_name);
    if (!p) {
      return NotFoundError("queue '" + spec.name() + "': parent queue '" + parent_name +
                           "' does not exist");
    }
    parent = *p;
    const QueueNode& pn = nodes_[parent];
    if (IsLeaf(parent) && (!pn.pending.empty() || pn.pending_jobs > 0 || pn.running_jobs > 0)) {
      return FailedPreconditionError("queue '" + spec.name() + "': parent '" + parent_name +
                                     "' holds jobs, so it must stay a leaf queue");
    }
  }
  TESSERA_RETURN_IF_ERROR(InternModels(spec));
  const QueueId q = static_cast<QueueId>(nodes_.size());
  QueueNode node;
  node.name = spec.name();
  node.parent = parent;
  node.sorter.SetCapacity(priced_capacity_);
  nodes_.push_back(std::move(node));
  nodes_[parent].children.push_back(q);
  nodes_[parent].sorter.Add(q, EffectiveWeight(spec));
  by_name_[spec.name()] = q;
  ApplySpec(q, spec);
  return q;
}

Status QueueTree::Update(const v1::QueueSpec& spec) {
  std::optional<QueueId> q = Find(spec.name());
  if (!q) return NotFoundError("queue '" + spec.name() + "' does not exist");
  TESSERA_RETURN_IF_ERROR(InternModels(spec));
  ApplySpec(*q, spec);
  // New caps or limits may admit what was blocked on quota.
  std::vector<QueueId> blocked;
  for (auto& [blocker, leaves] : quota_blocked_) {
    blocked.insert(blocked.end(), leaves.begin(), leaves.end());
  }
  quota_blocked_.clear();
  for (QueueId leaf : blocked) Unblock(leaf);
  return Status::Ok();
}

Status QueueTree::Delete(const std::string& name) {
  std::optional<QueueId> found = Find(name);
  if (!found) return NotFoundError("queue '" + name + "' does not exist");
  const QueueId q = *found;
  QueueNode& n = nodes_[q];
  if (!n.children.empty()) {
    return FailedPreconditionError("queue '" + name + "' has child queues; delete them first");
  }
  if (!n.pending.empty() || n.pending_jobs > 0 || n.running_jobs > 0) {
    return FailedPreconditionError("queue '" + name + "' has unfinished jobs");
  }
  QueueNode& parent = nodes_[n.parent];
  parent.sorter.Remove(q);
  parent.children.erase(std::find(parent.children.begin(), parent.children.end(), q));
  if (LimitsModels(n)) --model_limited_queues_;
  n.alive = false;
  by_name_.erase(name);
  RefreshEligibility(n.parent);
  return Status::Ok();
}

std::optional<QueueId> QueueTree::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::vector<QueueId> QueueTree::All() const {
  std::vector<QueueId> out;
  std::function<void(QueueId)> visit = [&](QueueId q) {
    for (QueueId c : nodes_[q].children) {
      out.push_back(c);
      visit(c);
    }
  };
  visit(kRoot);
  return out;
}

void QueueTree::AddPending(QueueId leaf, const PendingKey& key) {
  QueueNode& n = nodes_[leaf];
  const bool new_head = n.pending.empty() || key < *n.pending.begin();
  n.pending.insert(key);
  // A new head may fit where the old one did not.
  if (new_head && n.blocked != Block::kNone) {
    Unblock(leaf);
  } else {
    RefreshEligibility(leaf);
  }
}

void QueueTree::RemovePending(QueueId leaf, const PendingKey& key) {
  QueueNode& n = nodes_[leaf];
  auto it = n.pending.find(key);
  if (it == n.pending.end()) return;
  const bool was_head = it == n.pending.begin();
  n.pending.erase(it);
  if (was_head && n.blocked != Block::kNone) {
    Unblock(leaf);
  } else {
    RefreshEligibility(leaf);
  }
}

std::optional<PendingKey> QueueTree::Head(QueueId leaf) const {
  const QueueNode& n = nodes_[leaf];
  if (n.pending.empty()) return std::nullopt;
  return *n.pending.begin();
}

size_t QueueTree::PendingCount(QueueId q) const {
  size_t count = nodes_[q].pending.size();
  for (QueueId c : nodes_[q].children) count += PendingCount(c);
  return count;
}

void QueueTree::AdjustRunning(QueueId leaf, int delta) {
  for (QueueId q = leaf;; q = nodes_[q].parent) {
    nodes_[q].running_jobs += delta;
    if (q == kRoot) break;
  }
}

void QueueTree::AdjustPendingJobs(QueueId leaf, int delta) {
  for (QueueId q = leaf;; q = nodes_[q].parent) {
    nodes_[q].pending_jobs += delta;
    if (q == kRoot) break;
  }
}

void QueueTree::AddAllocation(QueueId leaf, const ResourceVector& delta, int64_t now_us,
                              const GpuModelAmounts& by_model) {
  ChangeAllocation(leaf, delta, by_model, /*add=*/true, now_us);
}

void QueueTree::SubtractAllocation(QueueId leaf, const ResourceVector& delta, int64_t now_us,
                                   const GpuModelAmounts& by_model) {
  ChangeAllocation(leaf, delta, by_model, /*add=*/false, now_us);
  // Anything blocked on a quota along this path may fit now.
  for (QueueId q = leaf;; q = nodes_[q].parent) {
    auto it = quota_blocked_.find(q);
    if (it != quota_blocked_.end()) {
      std::vector<QueueId> leaves = std::move(it->second);
      quota_blocked_.erase(it);
      for (QueueId l : leaves) Unblock(l);
    }
    if (q == kRoot) break;
  }
}

void QueueTree::ChangeAllocation(QueueId leaf, const ResourceVector& delta,
                                 const GpuModelAmounts& by_model, bool add, int64_t now_us) {
  for (QueueId q = leaf;; q = nodes_[q].parent) {
    QueueNode& n = nodes_[q];
    if (half_life_us_ > 0) {
      n.usage.Advance(now_us, n.allocated, half_life_us_, n.allocated_by_model);
    }
    if (add) {
      n.allocated += delta;
      n.allocated_by_model += by_model;
    } else {
      n.allocated -= delta;
      n.allocated_by_model -= by_model;
    }
    TESSERA_CHECK(!n.allocated.AnyNegative() && !n.allocated_by_model.AnyNegative(),
                  "queue " + n.name + " holds less than nothing");
    if (q == kRoot) break;
    Rekey(q, now_us);
  }
}

void QueueTree::Rekey(QueueId q, int64_t /*now_us*/) {
  const QueueNode& n = nodes_[q];
  nodes_[n.parent].sorter.UpdateAllocation(q, n.allocated, PricedUsage(n), n.allocated_by_model);
}

void QueueTree::RefreshUsage(int64_t now_us) {
  if (half_life_us_ <= 0) return;
  for (QueueId q = 1; q < nodes_.size(); ++q) {
    QueueNode& n = nodes_[q];
    if (!n.alive) continue;
    if (n.allocated.IsZero() && n.usage.IsZero()) continue;
    n.usage.Advance(now_us, n.allocated, half_life_us_, n.allocated_by_model);
    Rekey(q, now_us);
  }
}

bool QueueTree::BelowGuarantee(QueueId q) const {
  return q != kRoot && nodes_[nodes_[q].parent].sorter.BelowGuarantee(q);
}

bool QueueTree::WithinGuarantee(QueueId q, const ResourceVector& extra) const {
  const QueueNode& n = nodes_[q];
  bool guaranteed = false;
  for (int r = 0; r < kNumResources; ++r) {
    if (n.guarantee[r] <= 0) continue;
    guaranteed = true;
    if (n.allocated[r] + extra[r] > n.guarantee[r]) return false;
  }
  return guaranteed;
}

bool QueueTree::CanGiveBack(QueueId q, const ResourceVector& amount,
                            const GpuModelAmounts& by_model) const {
  const QueueNode& n = nodes_[q];
  for (int r = 0; r < kNumResources; ++r) {
    if (n.allocated[r] < amount[r]) return false;
    if (n.guarantee[r] > 0 && n.allocated[r] - amount[r] < n.guarantee[r]) return false;
  }
  for (const auto& [model, milli] : by_model.entries()) {
    const int64_t held = n.allocated_by_model.Get(model);
    if (held < milli) return false;
    const int64_t guaranteed = n.guarantee_by_model.Get(model);
    if (guaranteed > 0 && held - milli < guaranteed) return false;
  }
  return true;
}

ModelMask QueueTree::ClaimedModels(QueueId q, const ResourceVector& wanted, ModelMask models,
                                   const ResourceCharge& incoming) const {
  constexpr int kGpu = static_cast<int>(Resource::kGpu);
  const QueueNode& n = nodes_[q];
  for (int r = 0; r < kNumResources; ++r) {
    if (r == kGpu || n.guarantee[r] <= 0) continue;
    if (n.allocated[r] + incoming.resources[r] + wanted[r] > n.guarantee[r]) return 0;
  }
  const int64_t gpu_guarantee = n.guarantee[kGpu];
  const bool within_any_model =
      n.allocated[kGpu] + incoming.resources[kGpu] + wanted[kGpu] <= gpu_guarantee;
  if (wanted[kGpu] == 0) {
    // No GPU is asked for: the GPU guarantees need only hold as they are.
    if (gpu_guarantee > 0 && !within_any_model) return 0;
    for (const auto& [model, guaranteed] : n.guarantee_by_model.entries()) {
      const int64_t held = n.allocated_by_model.Get(model) + incoming.gpus_by_model.Get(model);
      if (held > guaranteed) return 0;
    }
    return kEveryModel;
  }
  if (gpu_guarantee > 0 && within_any_model) return kEveryModel;
  // GPUs guaranteed for no model: the other guarantees justify reclaim, on any model.
  if (gpu_guarantee <= 0 && n.guarantee_by_model.empty()) return kEveryModel;
  ModelMask claimed = 0;
  for (const auto& [model, guaranteed] : n.guarantee_by_model.entries()) {
    if (((models >> model) & 1u) == 0) continue;
    const int64_t held = n.allocated_by_model.Get(model) + incoming.gpus_by_model.Get(model);
    if (held + wanted[kGpu] <= guaranteed) claimed |= ModelMask{1} << model;
  }
  return claimed;
}

std::optional<ReclaimClaim> QueueTree::ReclaimingQueue(
    QueueId leaf, const ResourceVector& wanted, ModelMask models,
    const std::function<ResourceCharge(QueueId)>& incoming) const {
  for (QueueId q = leaf; q != kRoot; q = nodes_[q].parent) {
    const QueueNode& n = nodes_[q];
    if (n.guarantee.IsZero() && n.guarantee_by_model.empty()) continue;
    const ModelMask claimed = ClaimedModels(q, wanted, models, incoming(q));
    if (claimed != 0) return ReclaimClaim{q, claimed};
  }
  return std::nullopt;
}

bool QueueTree::MayReclaimFrom(QueueId victim_leaf, QueueId claimant, const ResourceVector& amount,
                               const GpuModelAmounts& by_model) const {
  if (IsWithin(victim_leaf, claimant)) return false;
  for (QueueId q = victim_leaf; q != kRoot && !IsWithin(claimant, q); q = nodes_[q].parent) {
    if (!CanGiveBack(q, amount, by_model)) return false;
  }
  return true;
}

bool QueueTree::IsWithin(QueueId q, QueueId ancestor) const {
  for (;; q = nodes_[q].parent) {
    if (q == ancestor) return true;
    if (q == kRoot) return false;
  }
}

double QueueTree::DominantShareOf(QueueId q) const {
  if (q == kRoot) return DominantShare(PricedUsage(nodes_[q]), priced_capacity_, 1.0);
  return nodes_[nodes_[q].parent].sorter.Share(q);
}

std::optional<QueueId> QueueTree::PickLeaf() const {
  QueueId q = kRoot;
  while (!IsLeaf(q)) {
    std::optional<DrfSorter::ClientId> next = nodes_[q].sorter.First();
    if (!next) return std::nullopt;
    q = *next;
  }
  if (q == kRoot) return std::nullopt;
  return q;
}

bool QueueTree::Precedes(QueueId leaf_a, const PendingKey& a, QueueId leaf_b, const PendingKey& b,
                         bool strictly) const {
  if (leaf_a == leaf_b) return a < b;
  // Ancestors of a, then walk up from b to the first one they share.
  std::vector<QueueId> path_a;
  for (QueueId q = leaf_a;; q = nodes_[q].parent) {
    path_a.push_back(q);
    if (q == kRoot) break;
  }
  QueueId child_b = leaf_b;
  for (QueueId q = nodes_[leaf_b].parent;; q = nodes_[q].parent) {
    auto it = std::find(path_a.begin(), path_a.end(), q);
    if (it != path_a.end()) {
      const QueueId child_a = *(it - 1);  // q is not leaf_a, so a child of q is on a's path.
      return nodes_[q].sorter.Before(child_a, child_b, strictly);
    }
    child_b = q;
  }
}

std::vector<PendingKey> QueueTree::PendingJobs(QueueId leaf, size_t limit) const {
  std::vector<PendingKey> out;
  for (const PendingKey& k : nodes_[leaf].pending) {
    if (out.size() >= limit) break;
    out.push_back(k);
  }
  return out;
}

std::vector<QueueId> QueueTree::LeavesWithPending() const {
  std::vector<QueueId> out;
  for (QueueId q = 1; q < nodes_.size(); ++q) {
    if (nodes_[q].alive && IsLeaf(q) && !nodes_[q].pending.empty()) out.push_back(q);
  }
  return out;
}

std::optional<QuotaViolation> QueueTree::CheckQuota(QueueId leaf,
                                                    const ResourceVector& request) const {
  for (QueueId q = leaf; q != kRoot; q = nodes_[q].parent) {
    const QueueNode& n = nodes_[q];
    const ResourceVector projected = n.allocated + request;
    if (int r = projected.FirstExceeding(n.cap); r >= 0) return QuotaViolation{q, r, true};
    if (int r = projected.FirstExceeding(n.borrow_ceiling); r >= 0) {
      return QuotaViolation{q, r, false};
    }
  }
  return std::nullopt;
}

bool QueueTree::HasModelLimits(QueueId leaf) const {
  if (model_limited_queues_ == 0) return false;
  for (QueueId q = leaf; q != kRoot; q = nodes_[q].parent) {
    if (LimitsModels(nodes_[q])) return true;
  }
  return false;
}

std::optional<QuotaViolation> QueueTree::CheckModelQuota(QueueId leaf, int model,
                                                         int64_t gpu_milli) const {
  constexpr int kGpu = static_cast<int>(Resource::kGpu);
  for (QueueId q = leaf; q != kRoot; q = nodes_[q].parent) {
    const QueueNode& n = nodes_[q];
    const ModelQuota* quota = FindModelQuota(n, model);
    if (quota == nullptr) continue;
    const int64_t projected = n.allocated_by_model.Get(model) + gpu_milli;
    if (quota->cap != ResourceVector::kUnlimited && projected > quota->cap) {
      return QuotaViolation{q, kGpu, true, model};
    }
    if (quota->borrow_ceiling != ResourceVector::kUnlimited && projected > quota->borrow_ceiling) {
      return QuotaViolation{q, kGpu, false, model};
    }
  }
  return std::nullopt;
}

int QueueTree::TasksWithinQuota(QueueId leaf, const ResourceVector& per_task, int limit) const {
  int64_t tasks = limit;
  for (QueueId q = leaf; q != kRoot; q = nodes_[q].parent) {
    const QueueNode& n = nodes_[q];
    for (int r = 0; r < kNumResources; ++r) {
      if (per_task[r] <= 0) continue;
      for (int64_t ceiling : {n.cap[r], n.borrow_ceiling[r]}) {
        if (ceiling == ResourceVector::kUnlimited) continue;
        const int64_t room = ceiling - n.allocated[r];
        tasks = std::min(tasks, room <= 0 ? 0 : room / per_task[r]);
      }
    }
  }
  return static_cast<int>(tasks);
}

void QueueTree::BlockOnCapacity(QueueId leaf) {
  QueueNode& n = nodes_[leaf];
  if (n.blocked != Block::kNone) return;
  n.blocked = Block::kCapacity;
  capacity_blocked_.push_back(leaf);
  RefreshEligibility(leaf);
}

void QueueTree::BlockOnQuota(QueueId leaf, QueueId blocker) {
  QueueNode& n = nodes_[leaf];
  if (n.blocked != Block::kNone) return;
  n.blocked = Block::kQuota;
  quota_blocked_[blocker].push_back(leaf);
  RefreshEligibility(leaf);
}

void QueueTree::UnblockCapacity() {
  std::vector<QueueId> leaves = std::move(capacity_blocked_);
  capacity_blocked_.clear();
  for (QueueId leaf : leaves) {
    if (nodes_[leaf].blocked == Block::kCapacity) Unblock(leaf);
  }
}

void QueueTree::UnblockCapacity(QueueId leaf) {
  // Its entry in capacity_blocked_ goes stale and is skipped by the check there.
  if (nodes_[leaf].blocked == Block::kCapacity) Unblock(leaf);
}

void QueueTree::Unblock(QueueId leaf) {
  QueueNode& n = nodes_[leaf];
  // Stale entries in the blocked lists are skipped by the checks above and here.
  n.blocked = Block::kNone;
  RefreshEligibility(leaf);
}

bool QueueTree::Eligible(QueueId q) const {
  const QueueNode& n = nodes_[q];
  if (!n.alive) return false;
  if (IsLeaf(q)) return q != kRoot && !n.pending.empty() && n.blocked == Block::kNone;
  return n.sorter.active_count() > 0;
}

void QueueTree::RefreshEligibility(QueueId q) {
  while (q != kRoot) {
    const QueueId parent = nodes_[q].parent;
    DrfSorter& siblings = nodes_[parent].sorter;
    const bool was_active_parent = siblings.active_count() > 0;
    if (Eligible(q)) {
      siblings.Activate(q);
    } else {
      siblings.Deactivate(q);
    }
    if ((siblings.active_count() > 0) == was_active_parent) return;
    q = parent;
  }
}

v1::QueueStatus QueueTree::StatusOf(QueueId q) const {
  v1::QueueStatus status;
  const QueueNode& n = nodes_[q];
  *status.mutable_allocated() = n.allocated.ToProto();
  status.set_dominant_share(DominantShareOf(q));
  constexpr int kGpu = static_cast<int>(Resource::kGpu);
  if (priced_capacity_[kGpu] > 0) {
    status.set_weighted_gpu_share(
        static_cast<double>(PricedGpu(n.allocated, n.allocated_by_model)) /
        static_cast<double>(priced_capacity_[kGpu]));
  }
  // Models held or limited, by id (the order they became known).
  std::vector<int> listed;
  for (const auto& [model, milli] : n.allocated_by_model.entries()) listed.push_back(model);
  for (const ModelQuota& m : n.model_quotas) listed.push_back(m.model);
  std::sort(listed.begin(), listed.end());
  listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  for (int model : listed) {
    v1::GpuModelUsage* usage = status.add_gpu_models();
    usage->set_model(models_->Name(model));
    usage->set_allocated_gpu_milli(n.allocated_by_model.Get(model));
    const int64_t capacity = capacity_by_model_.Get(model);
    usage->set_capacity_gpu_milli(capacity);
    if (capacity > 0) {
      usage->set_share(static_cast<double>(n.allocated_by_model.Get(model)) /
                       static_cast<double>(capacity));
    }
    usage->set_weight(static_cast<double>(weights_.Of(model)) /
                      static_cast<double>(GpuModelWeights::kUnit));
  }
  status.set_pending_jobs(n.pending_jobs);
  status.set_running_jobs(n.running_jobs);
  return status;
}

std::optional<bool> QueueTree::AllowSpot(QueueId q) const {
  while (q != kRoot) {
    if (nodes_[q].spec.has_allow_spot()) return nodes_[q].spec.allow_spot();
    q = nodes_[q].parent;
  }
  return std::nullopt;
}

}  // namespace tessera
