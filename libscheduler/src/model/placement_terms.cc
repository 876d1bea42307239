#include "model/placement_terms.h"

#include <algorithm>

namespace tessera {
namespace {

using Op = PlacementTerms::Operator;

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ",") + v;
  return out;
}

std::string Describe(const v1::NodeSelectorRequirement& r) {
  switch (r.operator_()) {
    case v1::NodeSelectorRequirement::IN:
      return r.values_size() == 1 ? "label " + r.key() + "=" + r.values(0)
                                  : "label " + r.key() + " in (" + Join(r.values()) + ")";
    case v1::NodeSelectorRequirement::NOT_IN:
      return "label " + r.key() + " not in (" + Join(r.values()) + ")";
    case v1::NodeSelectorRequirement::EXISTS:
      return "label " + r.key();
    case v1::NodeSelectorRequirement::DOES_NOT_EXIST:
      return "label " + r.key() + " absent";
    case v1::NodeSelectorRequirement::GT:
      return "label " + r.key() + " > " + (r.values_size() ? r.values(0) : "");
    case v1::NodeSelectorRequirement::LT:
      return "label " + r.key() + " < " + (r.values_size() ? r.values(0) : "");
    default:
      return "label " + r.key();
  }
}

}  // namespace

template <typename Lookup>
std::shared_ptr<const PlacementTerms> PlacementTerms::CompileWith(const v1::JobSpec& spec,
                                                                  Lookup&& lookup) {
  if (spec.node_selector().empty() && spec.node_requirements().empty() &&
      spec.tolerations().empty()) {
    return nullptr;
  }
  auto terms = std::make_shared<PlacementTerms>();
  // A map's order is unspecified; sort the selector so equal specs compile alike.
  std::vector<std::pair<std::string, std::string>> selector(spec.node_selector().begin(),
                                                            spec.node_selector().end());
  std::sort(selector.begin(), selector.end());
  for (const auto& [key, value] : selector) {
    Requirement r{lookup(key), Op::kIn, {lookup(value)}, 0, "label " + key + "=" + value};
    terms->pairs_.emplace_back(r.key, r.values[0]);
    terms->requirements_.push_back(std::move(r));
  }
  for (const v1::NodeSelectorRequirement& source : spec.node_requirements()) {
    Requirement r;
    r.key = lookup(source.key());
    r.op = static_cast<Op>(source.operator_() - 1);
    r.description = Describe(source);
    if (r.op == Op::kGt || r.op == Op::kLt) {
      r.number = ParseLabelNumber(source.values(0)).value_or(0);
    } else {
      for (const std::string& v : source.values()) r.values.push_back(lookup(v));
      std::sort(r.values.begin(), r.values.end());
    }
    if (r.op == Op::kIn && r.values.size() == 1) terms->pairs_.emplace_back(r.key, r.values[0]);
    terms->requirements_.push_back(std::move(r));
  }
  for (const v1::Toleration& source : spec.tolerations()) {
    Toleration t;
    if (!source.key().empty()) t.key = lookup(source.key());
    if (source.operator_() == v1::Toleration::EQUAL) t.value = lookup(source.value());
    if (source.effect() != v1::TAINT_EFFECT_UNSPECIFIED) {
      t.effect = static_cast<TaintEffect>(source.effect());
    }
    terms->tolerations_.push_back(t);
  }
  return terms;
}

std::shared_ptr<const PlacementTerms> PlacementTerms::Compile(const v1::JobSpec& spec,
                                                              LabelDictionary& dictionary) {
  return CompileWith(spec, [&](const std::string& text) { return dictionary.Intern(text); });
}

std::shared_ptr<const PlacementTerms> PlacementTerms::Compile(const v1::JobSpec& spec,
                                                              const LabelDictionary& dictionary) {
  return CompileWith(spec, [&](const std::string& text) { return dictionary.Find(text); });
}

bool PlacementTerms::MatchesRequirement(size_t i, const NodeLabels& node) const {
  const Requirement& r = requirements_[i];
  const NodeLabel* label = node.Find(r.key);
  switch (r.op) {
    case Op::kIn:
      return label != nullptr && std::binary_search(r.values.begin(), r.values.end(), label->value);
    case Op::kNotIn:
      return label == nullptr ||
             !std::binary_search(r.values.begin(), r.values.end(), label->value);
    case Op::kExists:
      return label != nullptr;
    case Op::kDoesNotExist:
      return label == nullptr;
    case Op::kGt:
      return label != nullptr && label->number && *label->number > r.number;
    case Op::kLt:
      return label != nullptr && label->number && *label->number < r.number;
  }
  return false;
}

bool PlacementTerms::MatchesLabels(const NodeLabels& node) const {
  for (size_t i = 0; i < requirements_.size(); ++i) {
    if (!MatchesRequirement(i, node)) return false;
  }
  return true;
}

bool PlacementTerms::Tolerates(const NodeTaint& taint) const {
  return std::any_of(tolerations_.begin(), tolerations_.end(), [&](const Toleration& t) {
    return (!t.key || *t.key == taint.key) && (!t.value || *t.value == taint.value) &&
           (!t.effect || *t.effect == taint.effect);
  });
}

bool PlacementTerms::ToleratesHard(const NodeLabels& node) const {
  if (!node.hard_taints) return true;
  for (const NodeTaint& taint : node.taints) {
    if (taint.hard() && !Tolerates(taint)) return false;
  }
  return true;
}

bool PlacementTerms::RepelledSoftly(const NodeLabels& node) const {
  if (!node.soft_taints) return false;
  for (const NodeTaint& taint : node.taints) {
    if (!taint.hard() && !Tolerates(taint)) return true;
  }
  return false;
}

}  // namespace tessera
