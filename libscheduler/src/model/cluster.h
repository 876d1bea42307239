// Cluster: every node the scheduler knows, by dense index and by name, and the totals that
// fairness divides by.
//
// A removed node's slot is kept, marked absent, so that a NodeIndexId held anywhere never
// points at another node by surprise; a node that comes back under its name gets its slot
// again. A node with a new name takes the absent slot with the lowest index, if any, so under
// churn (cloud nodes with fresh names) the table stays as large as the most nodes present at
// once. The owner of anything indexed by NodeIndexId clears it when the node is removed.
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/gpu_model_amounts.h"
#include "model/gpu_models.h"
#include "model/node_labels.h"
#include "model/node_state.h"
#include "model/resource_vector.h"
#include "tessera/status.h"
#include "tessera/v1/node.pb.h"

namespace tessera {

class Cluster {
 public:
  // Adds a node, or brings back an absent one of the same name with its new spec.
  // Errors: INVALID_ARGUMENT (bad spec, naming the field), ALREADY_EXISTS (present already).
  StatusOr<NodeIndexId> AddNode(const v1::NodeSpec& spec);
  // Marks a node absent; its capacity leaves the totals and its slot may be reused. Its tasks
  // must already be released.
  void RemoveNode(NodeIndexId id);
  // Replaces a present node's labels (its rack with them), taints and zone by those of `spec`
  // (validated), keeping everything else. The placer must re-index the node after.
  void SetLabelsAndTaints(NodeIndexId id, const v1::NodeSpec& spec);

  NodeState* Find(const std::string& name);
  const NodeState* Find(const std::string& name) const;
  NodeState& node(NodeIndexId id) { return nodes_[id]; }
  const NodeState& node(NodeIndexId id) const { return nodes_[id]; }
  const std::vector<NodeState>& nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }

  // The labels a node was added with (its spec's), as the API reports them.
  const std::map<std::string, std::string>& labels(NodeIndexId id) const { return labels_[id]; }
  // The taints and zone a node was added with (a spec with only those set), as the API reports
  // them.
  const v1::NodeSpec& taints_and_zone(NodeIndexId id) const { return taints_and_zone_[id]; }

  // The names of node labels and taints, and of the job terms matched against them.
  LabelDictionary& label_dictionary() { return label_dictionary_; }
  const LabelDictionary& label_dictionary() const { return label_dictionary_; }

  GpuModels& models() { return models_; }
  const GpuModels& models() const { return models_; }

  // Sum of the capacity of present nodes.
  const ResourceVector& capacity() const { return capacity_; }
  // The GPUs of that capacity by model.
  const GpuModelAmounts& capacity_by_model() const { return capacity_by_model_; }

 private:
  std::vector<NodeState> nodes_;
  std::vector<std::map<std::string, std::string>> labels_;  // by NodeIndexId.
  std::vector<v1::NodeSpec> taints_and_zone_;               // by NodeIndexId.
  std::unordered_map<std::string, NodeIndexId> by_name_;    // present and absent nodes.
  std::set<NodeIndexId> free_slots_;                        // absent, lowest reused first.
  GpuModels models_;
  LabelDictionary label_dictionary_;
  ResourceVector capacity_;
  GpuModelAmounts capacity_by_model_;
};

// Checks a node spec: name, positive capacities, at most 32 GPUs, one GPU model per node,
// label keys, taints (key and effect) and a zone that agrees with any "zone" label.
Status ValidateNodeSpec(const v1::NodeSpec& spec);
// Checks one GPU's sharing mode and its fields; `field` prefixes messages ("node 'a': gpus[0].").
Status ValidateGpuSharing(const v1::GpuDevice& gpu, const std::string& field);
// The scheduler's view of a validated GPU, idle.
GpuSlot MakeGpuSlot(const v1::GpuDevice& gpu);
// The reverse, as the API reports a GPU now: memory, NVLink domain, health, sharing mode, time
// slices, the MIG layout in force and whether the scheduler manages it, and the vGPU type in use
// or fixed (empty while none is). Index and model are the caller's.
void DescribeGpu(const GpuSlot& gpu, v1::GpuDevice& out);

}  // namespace tessera
