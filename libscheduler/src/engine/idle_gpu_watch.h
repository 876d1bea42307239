// IdleGpuWatch: which running jobs hold GPUs and leave them idle. A job is idle while every GPU
// it holds has reported, in each reading since some time T, a utilisation below its queue's
// threshold (QueueSpec.idle_gpus.below_pct); it is flagged once that has lasted idle_for, and,
// under a reclaiming policy, becomes reclaimable (a victim for any job that waits for room it
// holds) warning later. One reading at or above the threshold on any of its GPUs makes it busy
// again: the flag and the reclaim end, and the window starts over.
//
// The watch only judges readings, in the time they carry (or the engine's clock, for readings
// without one), so the same readings give the same verdicts; it starts no timer. A GPU that has
// never reported, or a job without GPUs, is never idle: no reading, no verdict. The utilisation
// of a GPU shared by several jobs (a MIG instance, a time slice) is the whole GPU's, so a share
// is idle only when the whole GPU is, which errs on the side of sparing the job.
//
// The engine resolves the policy (the nearest queue on the job's path that sets one), leaves out
// exempt jobs, lists the job's GPUs and acts on a change (events, metrics, the victim rule).
//
// Thread safety: the engine's, one decision strand.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <vector>

#include "fairshare/queue_tree.h"
#include "model/node_state.h"
#include "tessera/clock.h"

namespace tessera {

struct GpuRef {
  NodeIndexId node = 0;
  int gpu = 0;
  auto operator<=>(const GpuRef&) const = default;
};

class IdleGpuWatch {
 public:
  // The policy that holds for a job, in the engine's units.
  struct Policy {
    double below_pct = 0;
    int64_t idle_for_us = 0;
    bool reclaim = false;
    int64_t warning_us = 0;
  };
  // What changed with a reading: busy_again alone, or flagged and/or reclaimable (both at once
  // when a reclaiming policy has no warning period).
  struct Verdict {
    bool flagged = false;        // idle for the whole window now: it is flagged.
    bool reclaimable = false;    // flagged, warned, and the warning has run out now.
    bool busy_again = false;     // it was flagged and a GPU is busy now.
    TimestampUs idle_since = 0;  // with flagged or reclaimable: since when every GPU is idle.
    int gpus = 0;                // with flagged or reclaimable: the job's GPUs.
  };

  // A reading of `gpu`, one that job `job` holds, at `time_us` (no earlier than the job's
  // start: the engine clamps). `job_gpus` lists every GPU the job holds now; it is called only
  // when the verdict may depend on them.
  template <typename ListGpus>
  Verdict Record(uint64_t job, const Policy& policy, GpuRef gpu, double utilization_pct,
                 TimestampUs time_us, ListGpus&& job_gpus);

  // The job left RUNNING (ended, requeued, preempted): what was known of it is forgotten.
  void Forget(uint64_t job);

  bool Flagged(uint64_t job) const;
  bool Reclaimable(uint64_t job) const;
  bool AnyReclaimable() const { return reclaimable_ > 0; }
  // Jobs flagged now.
  int64_t flagged_jobs() const { return flagged_; }

 private:
  struct JobIdle {
    std::map<GpuRef, TimestampUs> below_since;  // GPUs whose readings stay below, since when.
    bool flagged = false;
    bool reclaimable = false;
    TimestampUs flagged_at = 0;
  };
  // Updates the verdict of `state` at `time_us`, the job's GPUs being `gpus`.
  Verdict Judge(JobIdle& state, const Policy& policy, TimestampUs time_us,
                const std::vector<GpuRef>& gpus);
  void ClearFlag(JobIdle& state);

  std::map<uint64_t, JobIdle> jobs_;
  int64_t flagged_ = 0;
  int64_t reclaimable_ = 0;
};

// The idle-GPU policy that holds for a job of `leaf`: that of the nearest queue on its path,
// the leaf first, that sets idle_gpus. A job that exempts itself (`job_exempt`) is not watched
// when that policy allows exemption; where it does not, it is watched, and
// `exemption_refused` says so.
struct IdleGpuRule {
  bool watched = false;
  IdleGpuWatch::Policy policy;
  QueueId from = QueueTree::kRoot;  // the queue whose policy it is.
  bool exemption_refused = false;
};
IdleGpuRule ResolveIdleGpuRule(const QueueTree& queues, QueueId leaf, bool job_exempt);

template <typename ListGpus>
IdleGpuWatch::Verdict IdleGpuWatch::Record(uint64_t job, const Policy& policy, GpuRef gpu,
                                           double utilization_pct, TimestampUs time_us,
                                           ListGpus&& job_gpus) {
  JobIdle& state = jobs_[job];
  if (state.reclaimable && !policy.reclaim) {  // the policy stopped reclaiming since.
    state.reclaimable = false;
    --reclaimable_;
  }
  if (utilization_pct >= policy.below_pct) {
    state.below_since.erase(gpu);
    Verdict verdict;
    if (state.flagged) {
      ClearFlag(state);
      verdict.busy_again = true;
    }
    return verdict;
  }
  state.below_since.try_emplace(gpu, time_us);
  // Flagged and reclaimable already: another idle reading changes nothing.
  if (state.reclaimable || (state.flagged && !policy.reclaim)) return Verdict{};
  return Judge(state, policy, time_us, job_gpus());
}

}  // namespace tessera
