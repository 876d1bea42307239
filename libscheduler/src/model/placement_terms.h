// PlacementTerms: where a job may run, compiled from its spec's node_selector, node_requirements
// and tolerations against the cluster's LabelDictionary, and matched against a node's
// NodeLabels by comparing integers.
//
// A node admits a job when its labels meet every requirement (each node_selector pair counts as
// a one-value IN) and the job tolerates each of its NO_SCHEDULE and NO_EXECUTE taints. A node
// with a PREFER_NO_SCHEDULE taint the job does not tolerate admits it, but placement uses such a
// node only when no other fits. A job without terms is admitted by every node without hard
// taints; its TaskShape holds no terms at all, so it pays only a flag test per node.
//
// Compiled once per job, then immutable: shared by every copy of the job's shape.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/node_labels.h"
#include "model/node_state.h"
#include "model/task_shape.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

class PlacementTerms {
 public:
  enum class Operator : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
  struct Requirement {
    LabelId key = 0;
    Operator op = Operator::kIn;
    std::vector<LabelId> values;  // sorted; kIn and kNotIn.
    int64_t number = 0;           // kGt and kLt.
    std::string description;      // as feasibility reasons name it: "label gpu-type=h100".
  };
  struct Toleration {
    std::optional<LabelId> key;         // nullopt: any key (EXISTS with an empty key).
    std::optional<LabelId> value;       // nullopt: any value (EXISTS).
    std::optional<TaintEffect> effect;  // nullopt: any effect.
  };

  // The terms of a validated spec, interning every name they use so that a node added later
  // with those labels matches; nullptr when the spec sets none of the three fields.
  static std::shared_ptr<const PlacementTerms> Compile(const v1::JobSpec& spec,
                                                       LabelDictionary& dictionary);
  // The same without adding names (for a snapshot read on another thread): a name the
  // dictionary lacks is one no node has.
  static std::shared_ptr<const PlacementTerms> Compile(const v1::JobSpec& spec,
                                                       const LabelDictionary& dictionary);

  bool Admits(const NodeLabels& node) const { return MatchesLabels(node) && ToleratesHard(node); }
  // Every requirement holds.
  bool MatchesLabels(const NodeLabels& node) const;
  bool MatchesRequirement(size_t i, const NodeLabels& node) const;
  // Every NO_SCHEDULE and NO_EXECUTE taint is tolerated.
  bool ToleratesHard(const NodeLabels& node) const;
  // Some PREFER_NO_SCHEDULE taint is not tolerated.
  bool RepelledSoftly(const NodeLabels& node) const;

  const std::vector<Requirement>& requirements() const { return requirements_; }
  // (key, value) pairs every admitting node has: the node_selector and one-value IN
  // requirements, for the label index to start from.
  const std::vector<std::pair<LabelId, LabelId>>& required_pairs() const { return pairs_; }

 private:
  template <typename Lookup>
  static std::shared_ptr<const PlacementTerms> CompileWith(const v1::JobSpec& spec,
                                                           Lookup&& lookup);
  bool Tolerates(const NodeTaint& taint) const;

  std::vector<Requirement> requirements_;
  std::vector<Toleration> tolerations_;
  std::vector<std::pair<LabelId, LabelId>> pairs_;
};

// Whether `node` admits a job of `shape` (its terms, or none).
inline bool Admits(const TaskShape& shape, const NodeState& node) {
  if (shape.terms == nullptr) return !node.hard_taints();
  return shape.terms->Admits(node.labels());
}

// Whether `node` has a PREFER_NO_SCHEDULE taint a job of `shape` does not tolerate.
inline bool RepelledSoftly(const TaskShape& shape, const NodeState& node) {
  if (!node.soft_taints()) return false;
  return shape.terms == nullptr || shape.terms->RepelledSoftly(node.labels());
}

}  // namespace tessera
