// Reservations: room held for a job that cannot start yet.
//
// Two kinds. A backfill reservation holds whole nodes for a job that does not fit, from the
// time running jobs are expected to free them; another job may still use a held node if it
// will be done before then (backfill), which keeps small jobs flowing while a large gang waits
// without being starved. A preemption reservation holds, on each node, the cpu and memory the
// job's victims are freeing for it while their grace periods run and, when the job needs GPUs,
// the node's GPUs: no other GPU task is placed there meanwhile, since which GPUs a newcomer took
// would decide whether the job fits. The rest of the node stays open to work without GPUs.
//
// A job that would still run when a backfill reservation starts may use a held node too, if
// the holder's tasks planned there still fit it at the start: it needs no GPU, or the holder
// asks for whole GPUs with no NVLink wish, and the node, with the tasks expected to end by then
// gone and the job's task added, still fits them. So work that leaves a reservation its room
// starts at once instead of waiting.
//
// ReservationFilter applies both during placement: the engine tells it which job is being
// placed and when that job would end at the latest.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "model/node_state.h"
#include "model/resource_vector.h"
#include "model/task_shape.h"
#include "placement/node_filter.h"
#include "tessera/clock.h"

namespace tessera {

struct Reservation {
  uint64_t job = 0;
  TimestampUs start_us = 0;
  std::vector<NodeIndexId> nodes;
  // Empty: the whole nodes are held (backfill). Otherwise the capacity held on each node of
  // `nodes`, in the same order (preemption).
  std::vector<ResourceVector> held;
  // The holder's task shape; backfill only: how many of its tasks go to each of `nodes` (same
  // order); empty: the nodes are held whole against any job that would still run.
  TaskShape shape;
  std::vector<int> tasks;

  bool whole_nodes() const { return held.empty(); }
};

class ReservationBook {
 public:
  void Add(Reservation reservation);
  void Remove(uint64_t job);
  const Reservation* Find(uint64_t job) const;
  size_t size() const { return reservations_.size(); }
  // Reservations that hold whole nodes (the ones options.engine.max_reservations bounds).
  size_t whole_node_count() const;
  const std::vector<Reservation>& all() const { return reservations_; }

  // The reservations with a claim on `node`.
  std::vector<const Reservation*> On(NodeIndexId node) const;
  // True when some job other than `job` holds `node` whole.
  bool HeldWholeForOther(NodeIndexId node, uint64_t job) const;

 private:
  std::vector<Reservation> reservations_;
  std::vector<std::vector<uint64_t>> jobs_by_node_;
};

class ReservationFilter final : public NodeFilter {
 public:
  // Appends to `out` the live tasks on a node expected to have ended by a time.
  using EndingBy =
      std::function<void(NodeIndexId node, TimestampUs by, std::vector<TaskAllocation>& out)>;

  explicit ReservationFilter(const ReservationBook& book) : book_(book) {}

  // How the filter learns which tasks end before a reservation starts (unset: none do).
  void SetEndingBy(EndingBy ending_by) { ending_by_ = std::move(ending_by); }

  // The job about to be placed, and when it will have ended at the latest (nullopt: unknown).
  void SetPlacing(uint64_t job, std::optional<TimestampUs> ends_by) {
    job_ = job;
    ends_by_ = ends_by;
  }

  std::string_view name() const override { return "reservation"; }
  bool Accept(const NodeState& node, const TaskShape& shape) const override;

 private:
  // Whether a task of `shape` placed on `node` now, and still running at `r`'s start, leaves
  // room there for the holder's tasks.
  bool LeavesRoomFor(const Reservation& r, const NodeState& node, const TaskShape& shape) const;

  const ReservationBook& book_;
  EndingBy ending_by_;
  uint64_t job_ = 0;
  std::optional<TimestampUs> ends_by_;
};

}  // namespace tessera
