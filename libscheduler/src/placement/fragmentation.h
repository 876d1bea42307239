// GPU fragmentation of a node against an expected workload, as defined by the FGD paper (Weng et
// al., "Beware of Fragmentation", ATC'23, section 3) and its simulator
// (hkust-adsl/kubernetes-scheduler-simulator, utils/frag.go), with two optional extensions.
//
// F_n(m), for one node n and one task shape m, is the free GPU capacity (milli-GPU) of n that a
// task of shape m could not use:
//   - m cannot run on n at all (it needs no GPU, n's GPU model is not allowed, n lacks free cpu,
//     or n has fewer than m.gpu_count GPUs with m.gpu_milli free each): every free milli-GPU of
//     n counts;
//   - otherwise only the GPUs whose free share is below m.gpu_milli count (they can never host
//     a GPU of m); the others are usable.
// F_n(M) = sum over the workload's shapes of weight(m) * F_n(m): the expected fragmentation
// when the next task is drawn from the workload. Placing a task changes F_n(M); FGD places it
// where that change is smallest.
//
// The simulator looks at cpu only. The extensions, off for FGD's own measure:
//   - check_memory: a node without the free memory for m cannot run it either;
//   - host_limited_weight h: of the usable GPU capacity, what the node's free cpu (and memory)
//     cannot feed counts as fragment too, weighted by h. A node that can host only k tasks of m
//     (by cpu and memory) uses at most k * m's GPUs however many GPUs are free: with 96 cores
//     for 8 GPUs, tasks of 18 cores and 1 GPU leave 3 GPUs idle. FGD's measure sees only
//     whether one task fits, so it lets cpu- and memory-heavy work strand GPUs.
// Unhealthy GPUs are not free capacity.
//
// A FragmentationMeasure is built once per workload. Its per-model tables are filled on first
// use, so it must not be shared between threads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/node_state.h"
#include "model/task_shape.h"
#include "placement/workload_distribution.h"

namespace tessera {

// What fragmentation looks at on a node: its free cpu and memory and the free share of each
// GPU. Cheap to copy, so hypothetical states (after a placement) can be measured.
struct NodeFree {
  int model = -1;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  std::array<int32_t, NodeState::kMaxGpus> gpu_free{};  // 0 for an unhealthy GPU.

  static NodeFree Of(const NodeState& node);
  // This state with `allocation` taken from it.
  NodeFree After(const TaskAllocation& allocation) const;
  int64_t TotalGpuFree() const;
};

// F_n(m) in milli-GPU, FGD's definition (cpu only unless check_memory).
int64_t TaskFragmentation(const NodeFree& node, const TaskShape& task, bool check_memory);

class FragmentationMeasure {
 public:
  struct Options {
    bool check_memory = false;
    double host_limited_weight = 0;  // 0: FGD's measure; see the file comment.
  };

  FragmentationMeasure(WorkloadDistribution workload, Options options);

  // F_n(M) in milli-GPU (a weighted mean over the workload's shapes).
  double Of(const NodeFree& node) const;

  const WorkloadDistribution& workload() const { return workload_; }
  const Options& options() const { return options_; }

 private:
  // The workload's GPU shapes that may run on one model, grouped by (GPU count, share): within a
  // group only the host fit (cpu, memory) differs, so the GPU fit is found once per group.
  struct Member {
    int64_t cpu_milli;
    int64_t memory_mib;
    double weight;
  };
  struct Group {
    int32_t gpu_count = 0;
    int32_t gpu_milli = 0;
    double weight = 0;  // sum of the members' weights.
    // The members' largest cpu and memory: a node with room for that many of both is ample for
    // every member, and the group is measured without visiting them (Of's fast path).
    int64_t max_cpu_milli = 0;
    int64_t max_memory_mib = 0;
    std::vector<Member> members;  // by cpu, ascending.
  };
  struct ModelTable {
    bool built = false;
    double unusable_weight = 0;  // shapes that can never use this model's GPUs.
    std::vector<Group> groups;
  };

  const ModelTable& TableFor(int model) const;
  // Whether the node's free cpu (and memory, if checked) could host `tasks` tasks of every
  // member of `g` at once.
  bool HostHolds(const NodeFree& node, const Group& g, int64_t tasks) const;
  // Tasks of `m` the node's free cpu and memory could host at once.
  int64_t HostableTasks(const NodeFree& node, const Member& m) const;

  WorkloadDistribution workload_;
  Options options_;
  mutable std::vector<ModelTable> tables_;  // by model id.
};

}  // namespace tessera
