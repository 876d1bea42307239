// FeasibilityChecker: could any node of the current inventory ever run a job, even on an empty
// cluster? A job that cannot is reported infeasible with a reason instead of waiting forever.
//
// It looks only at node shapes (capacity, GPU count and model, labels and taints), never at
// what is in use, so the answer changes only when the inventory changes. A node admits a job only
// as model/placement_terms.h says (selector, requirements, tolerations). Built from a Cluster, then
// immutable: a snapshot can be read from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/cluster.h"
#include "model/placement_terms.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

// What feasibility needs to know about a job, by model name.
struct FeasibilityQuery {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_count = 0;
  int32_t gpu_milli = 0;  // per GPU; 1000 = whole.
  int64_t gpu_memory_mib = 0;
  std::vector<std::string> models;  // empty = any.
  bool same_nvlink = false;
  int min_tasks = 1;  // tasks that must run at the same time (the gang minimum).
  bool same_node = false;
  // The form of a share (MIG profile, vGPU type, sharing mode) as a shape; its counts and
  // model mask are unused: the fields above say them. Its terms say where the job may run.
  TaskShape shape;

  // `shape` with the counts above: what one task asks of a GPU.
  TaskShape GpuAsk() const;

  // `labels`: the dictionary the checker's nodes were interned with (its label_dictionary()).
  static FeasibilityQuery FromSpec(const v1::JobSpec& spec, const LabelDictionary& labels);
  static FeasibilityQuery FromShape(const TaskShape& shape, const GpuModels& models, int min_tasks,
                                    bool same_node);
};

class FeasibilityChecker {
 public:
  FeasibilityChecker() = default;
  explicit FeasibilityChecker(const Cluster& cluster);

  // nullopt when some set of nodes could run the job; otherwise why not.
  std::optional<std::string> Check(const FeasibilityQuery& query) const;

  // A copy of the cluster's label names when the checker was built.
  const LabelDictionary& label_dictionary() const { return labels_; }

 private:
  struct NodeShape {
    std::string model;  // empty for nodes without GPUs.
    int64_t cpu_milli = 0;
    int64_t memory_mib = 0;
    int gpus = 0;
    int largest_nvlink_domain = 0;
    int64_t gpu_memory_mib = 0;
    int64_t count = 0;
    GpuSlot idle_gpu;  // one of the node's GPUs, idle: they share a mode.
    std::shared_ptr<const NodeLabels> labels;
  };

  // How many tasks asking for a share of one GPU an idle GPU like `gpu` could hold at once.
  static int64_t SharesPerGpu(const GpuSlot& gpu, const TaskShape& shape);
  static int64_t TasksPerNode(const NodeShape& node, const FeasibilityQuery& q);
  bool ModelAllowed(const NodeShape& node, const FeasibilityQuery& q) const;
  static bool Admits(const NodeShape& node, const FeasibilityQuery& q);
  std::string ExplainNoNode(const FeasibilityQuery& q) const;
  // Why no node of an allowed model admits the job (its labels or taints).
  std::string ExplainNotAdmitted(const FeasibilityQuery& q) const;
  std::string DescribeTaint(const NodeTaint& taint) const;

  std::vector<NodeShape> shapes_;
  LabelDictionary labels_;
};

}  // namespace tessera
