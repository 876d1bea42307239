// Scenario: one randomized test case of the scheduler, as plain data: a small simulated
// cluster, a queue tree, the scheduler's preemption windows, and a list of timed steps (submits,
// cancels, GPU failures, node recoveries, drains, restarts) that the runner plays through the
// public API in virtual time. Being data, a scenario can be generated from a seed, shrunk by
// removing steps, printed, and read back from its printed form, so a failing case found by a
// seed becomes a regression test of a few lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/v1/job.pb.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/queue.pb.h"

namespace tessera::scenario {

enum class StepKind {
  kSubmit,   // submit `job`.
  kCancel,   // cancel the submitted job named `target` (job names are unique in a scenario).
  kFailGpu,  // report a fatal XID on `node`'s GPU `gpu`: the GPU fails, its tasks are requeued.
  kRecover,  // uncordon `node`: failed GPUs come back, a drain ends.
  kDrain,    // drain `node`.
  kRestart,  // close the scheduler and open it again on the same store.
};

struct Step {
  int64_t at_ms = 0;  // virtual time since the scenario began.
  StepKind kind = StepKind::kSubmit;
  v1::JobSpec job;     // kSubmit
  std::string target;  // kCancel
  std::string node;    // kFailGpu, kRecover, kDrain
  int gpu = 0;         // kFailGpu
};

struct Scenario {
  uint64_t seed = 0;
  v1::SimulatedCluster cluster;
  std::vector<v1::QueueSpec> queues;  // parents before children.
  int64_t min_runtime_s = 0;          // PreemptionOptions
  int64_t cooldown_s = 0;
  std::vector<Step> steps;  // ordered by at_ms.
};

// The scenario as text, one line per item, readable and accepted by Parse:
//   seed 42
//   cluster groups { name_prefix: "n" count: 1 ... }
//   queue name: "a" weight: 2 guarantee { gpu_milli: 4000 }
//   preemption min_runtime_s=5 cooldown_s=10
//   at 1500 submit queue: "a" task { ... }
//   at 2000 cancel j3
//   at 2500 fail_gpu n-0 1
//   at 3000 recover n-0
//   at 3500 drain n-0
//   at 4000 restart
std::string Print(const Scenario& scenario);
// Reads Print's form back; returns false and fills `error` on a bad line.
bool Parse(const std::string& text, Scenario& scenario, std::string& error);

}  // namespace tessera::scenario
