// NodeIndex: schedulable nodes ordered by free capacity, so that finding a node for a task
// costs O(log nodes) instead of a scan.
//
// Three orders are kept: per GPU model by whole free GPUs (for whole-GPU tasks), per GPU model
// by the largest free share of one GPU (for fractional tasks), and over all nodes by free CPU
// (for CPU-only tasks). Candidates are visited from the smallest key that could fit upward
// (tightest first) or from the largest downward (loosest first).
//
// Call Update(node) after every change to a node's free capacity or schedulability.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <utility>
#include <vector>

#include "model/cluster.h"
#include "model/task_shape.h"

namespace tessera {

enum class IndexOrder { kTightestFirst, kLoosestFirst };

class NodeIndex {
 public:
  NodeIndex() = default;
  // Not copyable: it keeps iterators into its own sets.
  NodeIndex(const NodeIndex&) = delete;
  NodeIndex& operator=(const NodeIndex&) = delete;

  void Update(const NodeState& node);

  // Calls `visit(node_id)` for each schedulable node of `model` (or, for CPU-only shapes, any
  // node) whose indexed key could hold one task of `shape`, in `order`, until it returns false.
  template <typename Visitor>
  void Visit(const TaskShape& shape, int model, IndexOrder order, Visitor&& visit) const;

 private:
  using Entries = std::set<std::pair<int64_t, NodeIndexId>>;
  // A node's keys, and where its entries are, so that moving one needs no search.
  struct Keys {
    int model = -1;
    int64_t whole = -1;  // -1: not in the index.
    int64_t share = -1;
    int64_t cpu = -1;
    Entries::iterator whole_at;
    Entries::iterator share_at;
    Entries::iterator cpu_at;
    int64_t cpu_wanted = -1;  // the CPU key to move to at the next FlushCpu.
    bool cpu_dirty = false;
  };

  Entries* WholeIndex(int model);
  Entries* ShareIndex(int model);
  static void Move(Entries* entries, int64_t& current, Entries::iterator& at, int64_t wanted,
                   NodeIndexId id);

  template <typename Visitor>
  static void VisitEntries(const Entries& entries, int64_t need, IndexOrder order, Visitor&& visit);

  // Brings the CPU order up to date (see cpu_).
  void FlushCpu() const;

  // Mutable: only the CPU order is kept lazily, below.
  mutable std::vector<Keys> keys_;  // by node id.
  // Deques: growing them keeps the sets (and the iterators into them) in place.
  std::deque<Entries> whole_by_model_;
  std::deque<Entries> share_by_model_;
  // Every placement and release changes a node's free CPU, but only CPU-only tasks read this
  // order: it is brought up to date when one is placed, not at each change.
  mutable Entries cpu_;
  mutable std::vector<NodeIndexId> cpu_dirty_;
};

template <typename Visitor>
void NodeIndex::VisitEntries(const Entries& entries, int64_t need, IndexOrder order,
                             Visitor&& visit) {
  if (order == IndexOrder::kTightestFirst) {
    for (auto it = entries.lower_bound({need, 0}); it != entries.end(); ++it) {
      if (!visit(it->second)) return;
    }
  } else {
    for (auto it = entries.rbegin(); it != entries.rend() && it->first >= need; ++it) {
      if (!visit(it->second)) return;
    }
  }
}

template <typename Visitor>
void NodeIndex::Visit(const TaskShape& shape, int model, IndexOrder order, Visitor&& visit) const {
  if (!shape.needs_gpu()) {
    FlushCpu();
    VisitEntries(cpu_, shape.cpu_milli, order, visit);
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
