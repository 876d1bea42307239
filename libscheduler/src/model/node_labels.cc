#include "model/node_labels.h"

#include <algorithm>
#include <charconv>

namespace tessera {

LabelId LabelDictionary::Intern(std::string_view text) {
  auto it = ids_.find(std::string(text));
  if (it != ids_.end()) return it->second;
  const LabelId id = static_cast<LabelId>(texts_.size());
  texts_.emplace_back(text);
  ids_.emplace(texts_.back(), id);
  return id;
}

LabelId LabelDictionary::Find(std::string_view text) const {
  auto it = ids_.find(std::string(text));
  return it == ids_.end() ? kUnknown : it->second;
}

const NodeLabel* NodeLabels::Find(LabelId key) const {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const NodeLabel& l, LabelId k) { return l.key < k; });
  return it != labels.end() && it->key == key ? &*it : nullptr;
}

const NodeLabels& NoLabels() {
  static const NodeLabels none;
  return none;
}

std::optional<int64_t> ParseLabelNumber(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

NodeLabels MakeNodeLabels(const v1::NodeSpec& spec, LabelDictionary& dictionary) {
  NodeLabels out;
  auto add = [&](std::string_view key, std::string_view value) {
    out.labels.push_back(
        {dictionary.Intern(key), dictionary.Intern(value), ParseLabelNumber(value)});
  };
  for (const auto& [key, value] : spec.labels()) add(key, value);
  // Validation allows a "zone" label only when it agrees with the zone.
  if (!spec.zone().empty() && !spec.labels().contains(std::string(kZoneLabel))) {
    add(kZoneLabel, spec.zone());
  }
  std::sort(out.labels.begin(), out.labels.end());
  for (const v1::Taint& t : spec.taints()) {
    const NodeTaint taint{dictionary.Intern(t.key()), dictionary.Intern(t.value()),
                          static_cast<TaintEffect>(t.effect())};
    out.taints.push_back(taint);
    (taint.hard() ? out.hard_taints : out.soft_taints) = true;
  }
  std::sort(out.taints.begin(), out.taints.end());
  return out;
}

}  // namespace tessera
