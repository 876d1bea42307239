// NodeLabels: a node's labels and taints with their strings interned by a LabelDictionary, so
// that matching a job's placement terms (model/placement_terms.h) against a node compares
// integers, not strings.
//
// A NodeLabels is built once when a node is added and never changed: a node whose labels
// change gets a new one. It may be shared between threads once built (feasibility snapshots
// hold it). A LabelDictionary only grows; ids stay valid for its life, and a copy taken at one
// time agrees with the original on every id it holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/v1/node.pb.h"

namespace tessera {

using LabelId = uint32_t;

class LabelDictionary {
 public:
  // The id no interned string has: what a lookup of an unknown string gives, matching nothing.
  static constexpr LabelId kUnknown = UINT32_MAX;

  // The id of `text`, adding it if new.
  LabelId Intern(std::string_view text);
  // The id of `text`, or kUnknown when no node or job named it yet.
  LabelId Find(std::string_view text) const;
  const std::string& Text(LabelId id) const { return texts_[id]; }
  size_t size() const { return texts_.size(); }

 private:
  std::vector<std::string> texts_;
  std::unordered_map<std::string, LabelId> ids_;
};

// The label key under which a node's zone (NodeSpec.zone) is matched.
inline constexpr std::string_view kZoneLabel = "zone";

enum class TaintEffect : uint8_t { kNoSchedule = 1, kPreferNoSchedule = 2, kNoExecute = 3 };

struct NodeLabel {
  LabelId key = 0;
  LabelId value = 0;
  // The value as an integer, for the Gt and Lt operators; nullopt when it is not one.
  std::optional<int64_t> number;
  friend auto operator<=>(const NodeLabel&, const NodeLabel&) = default;
};

struct NodeTaint {
  LabelId key = 0;
  LabelId value = 0;
  TaintEffect effect = TaintEffect::kNoSchedule;
  // NoSchedule and NoExecute keep out every job that does not tolerate them.
  bool hard() const { return effect != TaintEffect::kPreferNoSchedule; }
  friend auto operator<=>(const NodeTaint&, const NodeTaint&) = default;
};

struct NodeLabels {
  std::vector<NodeLabel> labels;  // sorted by key; one value per key.
  std::vector<NodeTaint> taints;
  bool hard_taints = false;  // some taint is NoSchedule or NoExecute.
  bool soft_taints = false;  // some taint is PreferNoSchedule.

  // The label with `key`, or nullptr.
  const NodeLabel* Find(LabelId key) const;
  friend bool operator==(const NodeLabels& a, const NodeLabels& b) {
    return a.labels == b.labels && a.taints == b.taints;
  }
  friend auto operator<=>(const NodeLabels& a, const NodeLabels& b) {
    if (auto c = a.labels <=> b.labels; c != 0) return c;
    return a.taints <=> b.taints;
  }
};

// The labels and taints of a node added without any.
const NodeLabels& NoLabels();

// The interned labels (with the zone as label kZoneLabel) and taints of a validated spec.
NodeLabels MakeNodeLabels(const v1::NodeSpec& spec, LabelDictionary& dictionary);

// The integer a label value or requirement value spells ("-3", "16"), if it spells one.
std::optional<int64_t> ParseLabelNumber(std::string_view text);

}  // namespace tessera
