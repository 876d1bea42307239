// Generator: a random but reproducible Scenario from a seed. Small clusters (whole GPUs, MIG
// GPUs with a fixed or a scheduler-managed layout, time-sliced, MPS and vGPU GPUs), a queue
// tree with weights, guarantees, borrowing limits and caps, and a stream of jobs (priorities,
// gangs, elastic jobs, every sharing form, time limits, checkpoint grace) mixed with cancels,
// GPU failures, drains, recoveries and restarts.
//
// Each kind of thing can be switched off (Features), so a run can look at one thing (every
// feature is on by default). The generator keeps scenarios inside
// what the invariants can judge: guarantees add up to at most the whole GPUs of the cluster,
// and every job fits its queue's caps and borrowing limits, so a job that does not run in the
// end is a scheduler's fault, not the scenario's.
#pragma once

#include <cstdint>
#include <string>

#include "scenario/scenario.h"

namespace tessera::scenario {

struct Features {
  bool gangs = true;          // multi-task jobs that start all together.
  bool elastic = true;        // jobs with min/max tasks.
  bool fractions = true;      // GPU fractions in any form (GPU_FORM_ANY with gpu_milli < 1000).
  bool mig = true;            // MIG GPUs with a fixed layout and MIG profile jobs.
  bool mig_managed = true;    // MIG GPUs the scheduler re-partitions (drains for a new layout).
  bool time_slice = true;     // time-sliced GPUs and time-slice jobs.
  bool mps = true;            // MPS GPUs and MPS jobs.
  bool vgpu = true;           // vGPU GPUs and vGPU jobs.
  bool guarantees = true;     // guarantees on top-level queues (fair-share reclaim).
  bool parent_queues = true;  // a top-level queue with two leaf children.
  bool caps = true;           // caps and borrowing limits on gpu_milli.
  bool memory_caps = true;    // caps on gpu_memory_mib.
  bool priorities = true;     // low, normal and high (non-preemptible) jobs; else all normal.
  bool cancels = true;
  bool gpu_failures = true;  // fatal XIDs, recovered later by an uncordon.
  bool drains = true;
  bool restarts = true;  // close and reopen the scheduler on its store.

  // Every feature on.
  static Features All() { return Features{}; }
  // Applies a comma-separated list of changes: "all", "none", "feature" or "+feature" (on),
  // "-feature" (off). Returns false and names the word in `error` for an unknown one.
  bool Apply(const std::string& list, std::string& error);
  // The features that are off, as "-a,-b" (empty when all are on).
  std::string Describe() const;
};

// How long things take. Virtual time can afford minutes of job runtime and preemption windows
// of several seconds; the real-time soak compresses everything.
enum class Timescale { kVirtual, kRealTime };

Scenario Generate(uint64_t seed, const Features& features,
                  Timescale timescale = Timescale::kVirtual);

}  // namespace tessera::scenario
