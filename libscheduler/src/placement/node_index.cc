#include "placement/node_index.h"

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

void NodeIndex::Move(Entries* entries, int64_t& current, int64_t wanted, uint64_t tie) {
  if (current == wanted) return;
  if (current >= 0) entries->erase({current, tie});
  if (wanted >= 0) entries->insert({wanted, tie});
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
    Move(WholeIndex(k.model), k.whole, -1, k.tie);
    Move(ShareIndex(k.model), k.share, -1, k.tie);
  }
  if (k.tie != tie) {
    // First update (or a new rank): entries are found by the tie they were inserted with.
    Move(&cpu_, k.cpu, -1, k.tie);
    Move(&cpu_sparing_, k.cpu_sparing, -1, k.tie);
    if (k.model >= 0) {
      Move(WholeIndex(k.model), k.whole, -1, k.tie);
      Move(ShareIndex(k.model), k.share, -1, k.tie);
    }
    k.tie = tie;
  }
  k.model = node.model();
  const bool schedulable = node.Schedulable();
  Move(&cpu_, k.cpu, schedulable ? node.cpu_free() : -1, tie);
  if (gpu_sparing_) {
    Move(&cpu_sparing_, k.cpu_sparing,
         schedulable ? (GpuBucket(node) << kBucketShift) + node.cpu_free() : -1, tie);
  }
  if (node.model() >= 0) {
    Move(WholeIndex(node.model()), k.whole,
         schedulable && node.whole_free_gpus() > 0 ? node.whole_free_gpus() : -1, tie);
    Move(ShareIndex(node.model()), k.share,
         schedulable && node.max_free_milli() > 0 ? node.max_free_milli() : -1, tie);
  }
}

}  // namespace tessera
