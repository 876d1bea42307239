// openb_replay: one replay of an openb pod list (../shared/data/openb) under the FGD paper's
// protocol, through the placement layer itself (Cluster + NodeIndex + Placer + scorer).
//
// The protocol, as the paper's simulator (hkust-adsl/kubernetes-scheduler-simulator) runs its
// experiments (scripts/generate_config_and_run.py with -tune 1.3 -tuneseed 42..51
// --shuffle-pod=true; pkg/simulator/simulator.go and core.go):
//   - The cluster is openb_node_list_gpu_node.csv (1213 nodes, 6212 GPUs).
//   - Every pod of the list is taken once, the list (sorted by name) is shuffled, and then the
//     GPU request is tuned to 1.3 x the cluster's 6,212,000 milli-GPU: a list asking for less
//     gets pods drawn uniformly with replacement from the original list appended until the next
//     draw would pass the target (the simulator compares the draw's per-GPU share, not its total,
//     and so may end slightly above); a list asking for more loses uniformly drawn pods until it
//     is below the target. Pod timestamps play no part: the simulator cannot parse them, so
//     every pod arrives in list order and none departs.
//   - Pods are placed one at a time. A pod that does not fit is dropped, but its GPU request
//     still counts as arrived. CPU-only pods are placed too (on GPU nodes, the only ones) and
//     arrive with no GPU request. A pod with a gpu_spec may only use the listed models. The
//     scheduler's filters check cpu and memory.
//   - After every pod (and once before the first) the arrived and allocated milli-GPU are
//     recorded. The curve's point k (0..130) is the mean over the records whose arrived load,
//     in % of capacity and rounded half to even, is k (each allocation rounded to 0.01 % first),
//     or over those within k +- 1 when there are none (experiments/analysis/
//     merge_alloc_discrete_0920.py). "Unallocated GPU %" at k is 100 - point k.
//   - FGD's "typical pods", the workload it protects, are the most frequent pod shapes of the
//     original list covering 95% of its pods, CPU-only pods included (WorkloadDistribution).
//   - kube-scheduler scores every feasible node (percentageOfNodesToScore: 100) with the one
//     score plugin. Its fork (mental2008/kubernetes v1.20.5-minor) breaks ties by the smallest
//     node name, names being prefixed with a random permutation: the bestfit and fgd replays
//     break ties by a random node order fixed per seed (Placer::BreakTiesByRandomNodeOrder).
// What is not reproduced: the simulator's random streams are Go's math/rand, shared with the
// scheduler, so our seeds 42..51 draw other lists than theirs; means over seeds compare.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/cluster.h"
#include "openb_pod_csv.h"
#include "tessera/options.h"
#include "tessera/status.h"

namespace tessera::bench {

// The openb file reader lives in replay/ (shared with tessera-replay).
using replay::OpenbDataDir;
using replay::OpenbGpuMemoryMib;
using replay::OpenbNode;
using replay::OpenbPod;
using replay::ReadOpenbNodes;
using replay::ReadOpenbPods;
using replay::ResolveOpenbFile;

inline constexpr int kOpenbPoints = 131;  // arrived load 0..130 % of capacity.

// Everything a seed's replay reads; built once per trace, shared read-only by replays running
// at the same time.
struct OpenbTrace {
  std::string name;
  std::vector<OpenbPod> pods;          // sorted by name.
  std::vector<TaskShape> shapes;       // per pod, over `cluster`'s model ids.
  std::vector<ExpectedTask> expected;  // the original list's shapes with their counts.
  Cluster cluster;                     // empty, with every model of nodes and pods interned.
  int64_t capacity_milli = 0;
  int64_t total_gpus = 0;
};

// Why a pod found no node: no node had the GPUs for it (model, shares, whole GPUs), or some had
// the GPUs but not the cpu, or the cpu too but not the memory.
enum class OpenbFailReason { kGpu = 0, kCpu = 1, kMemory = 2 };

struct OpenbSeedResult {
  std::vector<double> curve;  // allocation % at k % arrived, kOpenbPoints values.
  int64_t pods = 0;           // arrived.
  int64_t failed = 0;
  int max_tasks_per_node = 0;
  double seconds = 0;
  // GPU request of the pods that failed up to 100 % arrived load, by OpenbFailReason.
  std::array<int64_t, 3> failed_milli{};
};

template <typename T>
T ValueOrThrow(StatusOr<T> v) {
  if (!v.ok()) throw std::runtime_error(v.status().ToString());
  return std::move(*v);
}

int64_t TotalGpuMilli(const OpenbPod& pod);

// Reads a pod list and builds the cluster of `nodes`. Throws std::runtime_error on bad input.
OpenbTrace LoadOpenbTrace(const std::string& pod_path, const std::vector<OpenbNode>& nodes);

// bestfit, fgd (the paper's, with the simulator's tie-breaking), default (kFragmentationAware),
// binpack, spread.
const std::vector<std::string>& OpenbPolicies();

// One replay. Deterministic for (trace, policy, tune, seed). Throws on an unknown policy.
OpenbSeedResult ReplayOpenbSeed(const OpenbTrace& trace, const std::string& policy, double tune,
                                uint64_t seed);

}  // namespace tessera::bench
