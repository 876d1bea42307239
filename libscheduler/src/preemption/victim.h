// Victim: a running job (or the elastic tasks of one above its minimum) that could be stopped
// to make room, with what stopping it would cost. Who is eligible is VictimEligibility's rule
// (victim_eligibility.h); the engine lists the jobs it allows, the planner chooses among them
// and never stops anything itself.
#pragma once

#include <cstdint>
#include <vector>

#include "model/node_state.h"

namespace tessera {

// Lexicographic: shrinking an elastic job loses nothing and goes first; then the least work
// lost since the last checkpoint, the shortest run so far, the lowest priority.
struct VictimCost {
  int whole_jobs = 0;       // jobs stopped entirely (shrinks count 0).
  int64_t lost_gpu_us = 0;  // GPU-microseconds since the victims' last checkpoints.
  int64_t runtime_us = 0;   // how long the victims have run.
  int32_t priority = 0;     // the highest victim priority.

  VictimCost& operator+=(const VictimCost& o) {
    whole_jobs += o.whole_jobs;
    lost_gpu_us += o.lost_gpu_us;
    runtime_us += o.runtime_us;
    if (o.priority > priority) priority = o.priority;
    return *this;
  }
  friend bool operator<(const VictimCost& a, const VictimCost& b) {
    if (a.whole_jobs != b.whole_jobs) return a.whole_jobs < b.whole_jobs;
    if (a.lost_gpu_us != b.lost_gpu_us) return a.lost_gpu_us < b.lost_gpu_us;
    if (a.runtime_us != b.runtime_us) return a.runtime_us < b.runtime_us;
    return a.priority < b.priority;
  }
};

struct VictimTask {
  int32_t index = 0;
  TaskAllocation allocation;
};

struct Victim {
  uint64_t job = 0;
  bool shrink_only = false;       // only elastic tasks above the job's minimum.
  bool idle_gpus = false;         // it gives way because its GPUs stayed idle.
  bool by_service = false;        // it gives way to a lower service band of its queue.
  std::vector<VictimTask> tasks;  // everything stopping it frees.
  VictimCost cost;
};

}  // namespace tessera
