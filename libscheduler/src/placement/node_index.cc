#include "placement/node_index.h"

#include <algorithm>

namespace tessera {

NodeIndex::Entries* NodeIndex::WholeIndex(int model) {
  if (model < 0) return nullptr;
  if (model >= static_cast<int>(whole_by_model_.size())) whole_by_model_.resize(model + 1);
  return &whole_by_model_[model];
}

NodeIndex::Entries* NodeIndex::ShareIndex(int model) {
  if (model < 0) return nullptr;
  if (model >= static_cast<int>(share_by_model_.size())) share_by_model_.resize(model + 1);
  return &share_by_model_[model];
}

void NodeIndex::Move(Entries* entries, int64_t& current, Entries::iterator& at, int64_t wanted,
                     uint64_t tie) {
  if (current == wanted) return;
  if (current >= 0 && wanted >= 0) {
    // Every placement and release moves a node: re-key its entry rather than free one and
    // allocate another.
    auto entry = entries->extract(at);
    entry.value() = {wanted, tie};
    at = entries->insert(std::move(entry)).position;
  } else if (current >= 0) {
    entries->erase(at);
  } else {
    at = entries->insert({wanted, tie}).first;
  }
  current = wanted;
}

int64_t NodeIndex::GpuBucket(const NodeState& node) {
  if (node.model() < 0) return 0;
  const bool share = node.max_free_milli() > 0 && node.max_free_milli() < 1000;
  return 2 * int64_t{node.whole_free_gpus()} + (share ? 1 : 0);
}

void NodeIndex::Update(const NodeState& node, uint32_t tie_rank) {
  const NodeIndexId id = node.id();
  if (id >= keys_.size()) keys_.resize(id + 1);
  Keys& k = keys_[id];
  const uint64_t tie = uint64_t{tie_rank} << 32 | id;
  if (k.model != node.model() && k.model >= 0) {
    // The node came back with another model: drop its old GPU keys first.
    Move(WholeIndex(k.model), k.whole, k.whole_at, -1, k.tie);
    Move(ShareIndex(k.model), k.share, k.share_at, -1, k.tie);
  }
  if (k.tie != tie) {
    // First update (or a new rank): every entry is re-inserted with the new tie.
    Move(&cpu_, k.cpu, k.cpu_at, -1, k.tie);
    Move(&cpu_sparing_, k.cpu_sparing, k.cpu_sparing_at, -1, k.tie);
    if (k.model >= 0) {
      Move(WholeIndex(k.model), k.whole, k.whole_at, -1, k.tie);
      Move(ShareIndex(k.model), k.share, k.share_at, -1, k.tie);
    }
    k.tie = tie;
  }
  if (k.labels != node.shared_labels()) IndexLabels(k, node);
  k.model = node.model();
  const bool schedulable = node.Schedulable();
  const int64_t cpu = schedulable ? node.cpu_free() : -1;
  const int64_t cpu_sparing =
      gpu_sparing_ && schedulable ? (GpuBucket(node) << kBucketShift) + node.cpu_free() : -1;
  if (cpu != k.cpu || cpu != k.cpu_wanted || cpu_sparing != k.cpu_sparing ||
      cpu_sparing != k.cpu_sparing_wanted) {
    k.cpu_wanted = cpu;
    k.cpu_sparing_wanted = cpu_sparing;
    if (!k.cpu_dirty) {
      k.cpu_dirty = true;
      cpu_dirty_.push_back(id);
    }
  }
  if (node.model() >= 0) {
    Move(WholeIndex(node.model()), k.whole, k.whole_at,
         schedulable && node.whole_free_gpus() > 0 ? node.whole_free_gpus() : -1, tie);
    Move(ShareIndex(node.model()), k.share, k.share_at,
         schedulable && node.max_free_milli() > 0 ? node.max_free_milli() : -1, tie);
  }
}

void NodeIndex::IndexLabels(Keys& keys, const NodeState& node) {
  const NodeIndexId id = node.id();
  if (keys.labels) {
    for (const NodeLabel& l : keys.labels->labels) {
      auto list = by_label_.find(LabelKey(l.key, l.value));
      if (list == by_label_.end()) continue;
      std::vector<NodeIndexId>& ids = list->second;
      auto at = std::lower_bound(ids.begin(), ids.end(), id);
      if (at != ids.end() && *at == id) ids.erase(at);
      if (ids.empty()) by_label_.erase(list);
    }
  }
  for (const NodeLabel& l : node.labels().labels) {
    std::vector<NodeIndexId>& ids = by_label_[LabelKey(l.key, l.value)];
    ids.insert(std::lower_bound(ids.begin(), ids.end(), id), id);
  }
  keys.labels = node.shared_labels();
}

const std::vector<NodeIndexId>& NodeIndex::WithLabel(LabelId key, LabelId value) const {
  static const std::vector<NodeIndexId> kNone;
  auto it = by_label_.find(LabelKey(key, value));
  return it == by_label_.end() ? kNone : it->second;
}

void NodeIndex::FlushCpu() const {
  for (NodeIndexId id : cpu_dirty_) {
    Keys& k = keys_[id];
    k.cpu_dirty = false;
    Move(&cpu_, k.cpu, k.cpu_at, k.cpu_wanted, k.tie);
    Move(&cpu_sparing_, k.cpu_sparing, k.cpu_sparing_at, k.cpu_sparing_wanted, k.tie);
  }
  cpu_dirty_.clear();
}

}  // namespace tessera
