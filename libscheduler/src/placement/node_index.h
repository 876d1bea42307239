// NodeIndex: schedulable nodes ordered by free capacity, so that finding a node for a task
// costs O(log nodes) instead of a scan.
//
// Three orders are kept: per GPU model by whole free GPUs (for whole-GPU tasks), per GPU model
// by the largest free share of one GPU (for fractional tasks), and over all nodes by free CPU
// (for CPU-only tasks). Candidates are visited from the smallest key that could fit upward
// (tightest first) or from the largest downward (loosest first). Nodes with equal keys are
// visited by a tie rank given with each update (lowest first; then by id), which lets a scorer
// that compares only the first few candidates see the nodes its own tie order prefers.
//
// Besides, every indexed node is listed under each of its labels (key=value), whatever its
// free capacity or state, so that a job whose selector only a few nodes match finds them
// without walking the capacity orders past the nodes it may not use.
//
// Call Update(node) after every change to a node's free capacity, schedulability or labels.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/cluster.h"
#include "model/task_shape.h"

namespace tessera {

enum class IndexOrder {
  kTightestFirst,
  kLoosestFirst,
  // GPU tasks as kTightestFirst; CPU-only tasks first on the nodes with the fewest free GPUs
  // (none, then only shares of GPUs, then one whole GPU, ...), tightest cpu first among those,
  // so a bounded candidate list holds the nodes where a CPU task strands no GPU. Needs
  // NodeIndex::KeepGpuSparingOrder.
  kGpuSparingFirst,
};

class NodeIndex {
 public:
  NodeIndex() = default;
  // Not copyable: it keeps iterators into its own sets.
  NodeIndex(const NodeIndex&) = delete;
  NodeIndex& operator=(const NodeIndex&) = delete;

  // `tie_rank` must stay the same for a node as long as it is indexed.
  void Update(const NodeState& node, uint32_t tie_rank = 0);

  // Also keeps the order IndexOrder::kGpuSparingFirst needs (one more entry per node). Call
  // before the first Update.
  void KeepGpuSparingOrder() { gpu_sparing_ = true; }

  // Calls `visit(node_id)` for each schedulable node of `model` (or, for CPU-only shapes, any
  // node) whose indexed key could hold one task of `shape`, in `order`, until it returns false.
  template <typename Visitor>
  void Visit(const TaskShape& shape, int model, IndexOrder order, Visitor&& visit) const;

  // The nodes labelled key=value, by id; empty when none is.
  const std::vector<NodeIndexId>& WithLabel(LabelId key, LabelId value) const;

 private:
  // (key, tie rank << 32 | node id).
  using Entries = std::set<std::pair<int64_t, uint64_t>>;
  // A node's keys, and where its entries are, so that moving one needs no search.
  struct Keys {
    int model = -1;
    uint64_t tie = 0;    // tie rank << 32 | node id.
    int64_t whole = -1;  // -1: not in the index.
    int64_t share = -1;
    int64_t cpu = -1;
    int64_t cpu_sparing = -1;  // GPU bucket << kBucketShift | free cpu.
    Entries::iterator whole_at;
    Entries::iterator share_at;
    Entries::iterator cpu_at;
    Entries::iterator cpu_sparing_at;
    int64_t cpu_wanted = -1;          // the CPU key to move to at the next FlushCpu.
    int64_t cpu_sparing_wanted = -1;  // likewise for the GPU-sparing order.
    bool cpu_dirty = false;
    std::shared_ptr<const NodeLabels> labels;  // as listed in by_label_.
  };
  static constexpr int kBucketShift = 40;  // free cpu in milli stays far below 2^40.
  // Buckets of free GPUs, fewest first: none, only shares, one whole GPU, one and a share, ...
  static int64_t GpuBucket(const NodeState& node);

  Entries* WholeIndex(int model);
  Entries* ShareIndex(int model);
  static void Move(Entries* entries, int64_t& current, Entries::iterator& at, int64_t wanted,
                   uint64_t tie);

  // False when `visit` stopped the walk.
  template <typename Visitor>
  static bool VisitEntries(const Entries& entries, int64_t need, IndexOrder order, Visitor&& visit);

  // Brings the CPU orders up to date (see cpu_).
  void FlushCpu() const;
  // Moves a node from the label lists of its old labels to those of `node`'s.
  void IndexLabels(Keys& keys, const NodeState& node);
  static uint64_t LabelKey(LabelId key, LabelId value) { return uint64_t{key} << 32 | value; }

  // Mutable: only the CPU orders are kept lazily, below.
  mutable std::vector<Keys> keys_;  // by node id.
  // Deques: growing them keeps the sets (and the iterators into them) in place.
  std::deque<Entries> whole_by_model_;
  std::deque<Entries> share_by_model_;
  // Every placement and release changes a node's free CPU, but only CPU-only tasks read these
  // orders: they are brought up to date when one is placed, not at each change.
  mutable Entries cpu_;
  mutable std::vector<NodeIndexId> cpu_dirty_;
  bool gpu_sparing_ = false;
  mutable Entries cpu_sparing_;                                      // by GpuBucket, then free cpu.
  std::unordered_map<uint64_t, std::vector<NodeIndexId>> by_label_;  // by LabelKey; sorted.
};

template <typename Visitor>
bool NodeIndex::VisitEntries(const Entries& entries, int64_t need, IndexOrder order,
                             Visitor&& visit) {
  if (order != IndexOrder::kLoosestFirst) {
    for (auto it = entries.lower_bound({need, 0}); it != entries.end(); ++it) {
      if (!visit(static_cast<NodeIndexId>(it->second))) return false;
    }
  } else {
    for (auto it = entries.rbegin(); it != entries.rend() && it->first >= need; ++it) {
      if (!visit(static_cast<NodeIndexId>(it->second))) return false;
    }
  }
  return true;
}

template <typename Visitor>
void NodeIndex::Visit(const TaskShape& shape, int model, IndexOrder order, Visitor&& visit) const {
  if (!shape.needs_gpu()) {
    if (order != IndexOrder::kGpuSparingFirst || !gpu_sparing_) {
      FlushCpu();
      VisitEntries(cpu_, shape.cpu_milli, order, visit);
      return;
    }
    FlushCpu();
    // Each bucket from the tightest cpu that fits up to the bucket's end.
    for (auto it = cpu_sparing_.begin(); it != cpu_sparing_.end();) {
      const int64_t bucket = it->first >> kBucketShift;
      const int64_t end = (bucket + 1) << kBucketShift;
      for (it = cpu_sparing_.lower_bound({(bucket << kBucketShift) + shape.cpu_milli, 0});
           it != cpu_sparing_.end() && it->first < end; ++it) {
        if (!visit(static_cast<NodeIndexId>(it->second))) return;
      }
    }
    return;
  }
  if (model < 0) return;
  if (shape.whole_gpus()) {
    if (model < static_cast<int>(whole_by_model_.size())) {
      VisitEntries(whole_by_model_[model], shape.gpu_count, order, visit);
    }
  } else if (model < static_cast<int>(share_by_model_.size())) {
    VisitEntries(share_by_model_[model], shape.gpu_milli, order, visit);
  }
}

}  // namespace tessera
