// Invariants: what must hold of a scheduler after every step of a scenario, each a named
// check, so a failure says which rule broke. The checker reads the scheduler only through its
// public API (ListJobs, ListNodes, ListQueues, WatchEvents) and remembers what it was told
// (acknowledged submits, the event log so far, how long a queue has waited for its guarantee).
//
//   events_gapless_and_monotonic        seq is +1 each time, times never go back
//   event_log_chains_per_job            each state change starts where the previous one ended
//   state_changed_events_change_state   JOB_STATE_CHANGED has from != to (else it is JOB_UPDATED)
//   never_running_twice                 a job is RUNNING again only after leaving RUNNING
//   acknowledged_jobs_exist_once        every acknowledged submit is listed once, nothing else
//   job_state_matches_event_log         a job's state is the last state its events give it
//   no_gpu_or_share_double_booked       whole GPUs, MIG instances, slices, MPS clients, vGPUs
//   node_capacity_not_exceeded          cpu and memory of the tasks on a node
//   shares_charged_in_physical_units    a share counts its compute and memory (MIG table)
//   queue_allocation_matches_placements what a queue reports equals what its tasks hold
//   caps_honoured                       a queue's subtree holds at most its cap
//   borrowing_limits_honoured           ... and at most guarantee + borrowing limit
//   pending_job_has_reason              a PENDING job always says why
//   guarantee_reclaimed_in_time         a queue below its guarantee, with a pending 1-GPU job
//                                       and a preemptible victim in a queue above its own (in
//                                       every resource the guarantees name), gets the GPU back
//                                       within min_runtime + cooldown + grace
//   fitting_job_starts_on_idle_cluster  (settled) nothing runs, yet a feasible job is pending
//   every_job_finishes                  (at the end) every job ended or is marked infeasible
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "tessera/scheduler.h"

namespace tessera::scenario {

struct Violation {
  std::string invariant;
  std::string detail;
};

// What the scheduler shows through its API at one moment.
struct Snapshot {
  std::vector<v1::Job> jobs;
  std::vector<v1::Node> nodes;
  std::vector<v1::Queue> queues;
  std::vector<v1::Event> new_events;  // since the previous snapshot.
  // The last event read before the jobs were. In real time jobs move on while the snapshot is
  // read, so a job may be in any state its events after this one passed through.
  uint64_t seq_before_jobs = 0;
};

class Checker {
 public:
  // `skipped`: names of invariants not to report (those a known defect breaks, until fixed).
  Checker(const Scenario& scenario, std::set<std::string> skipped);

  // A submit returned this job: it must exist from now on.
  void Acknowledged(uint64_t id) { acknowledged_.insert(id); }
  // The scheduler was closed and reopened: running tasks were requeued, waits start over.
  void Restarted() { below_guarantee_since_.clear(); }

  // Reads the scheduler; fails (as a violation of `api_answers`) if a read fails.
  std::optional<Violation> Read(Scheduler& scheduler, Snapshot& snapshot);
  // Every check that must hold after any step; `now_us` is the scheduler's clock.
  std::optional<Violation> CheckStep(const Snapshot& snapshot, int64_t now_us);
  // With every node recovered and no more arrivals: checks that need the cluster to be idle.
  std::optional<Violation> CheckSettled(const Snapshot& snapshot);
  // At the very end, once nothing is left to do.
  std::optional<Violation> CheckFinished(const Snapshot& snapshot);

 private:
  std::optional<Violation> EventsGaplessAndMonotonic(const Snapshot& s);
  std::optional<Violation> EventLogChainsPerJob(const Snapshot& s);
  std::optional<Violation> StateChangedEventsChangeState(const Snapshot& s) const;
  std::optional<Violation> NeverRunningTwice(const Snapshot& s);
  std::optional<Violation> AcknowledgedJobsExistOnce(const Snapshot& s) const;
  std::optional<Violation> JobStateMatchesEventLog(const Snapshot& s) const;
  std::optional<Violation> NoGpuOrShareDoubleBooked(const Snapshot& s) const;
  std::optional<Violation> NodeCapacityNotExceeded(const Snapshot& s) const;
  std::optional<Violation> SharesChargedInPhysicalUnits(const Snapshot& s) const;
  std::optional<Violation> QueueAllocationMatchesPlacements(const Snapshot& s) const;
  std::optional<Violation> CapsHonoured(const Snapshot& s) const;
  std::optional<Violation> BorrowingLimitsHonoured(const Snapshot& s) const;
  std::optional<Violation> PendingJobHasReason(const Snapshot& s) const;
  std::optional<Violation> GuaranteeReclaimedInTime(const Snapshot& s, int64_t now_us);
  std::optional<Violation> FittingJobStartsOnIdleCluster(const Snapshot& s) const;
  std::optional<Violation> EveryJobFinishes(const Snapshot& s) const;

  const Scenario& scenario_;
  const std::set<std::string> skipped_;
  std::map<std::string, v1::QueueSpec> queue_specs_;
  std::set<uint64_t> acknowledged_;
  uint64_t last_seq_ = 0;
  int64_t last_event_time_us_ = 0;
  std::map<uint64_t, v1::JobState> event_state_;  // per job, the state its last event gave it.
  std::map<uint64_t, bool> running_;
  std::map<std::string, int64_t> below_guarantee_since_;  // top-level queue -> clock time.
  int64_t reclaim_window_us_ = 0;
};

}  // namespace tessera::scenario
