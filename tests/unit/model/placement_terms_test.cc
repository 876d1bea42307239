// PlacementTerms against NodeLabels: each operator, tolerations by key, value and effect, the
// terms compiled without interning (a feasibility snapshot's) agreeing with the interned ones,
// and a job without terms kept off hard-tainted nodes only.
#include <doctest/doctest.h>

#include "model/node_state.h"
#include "model/placement_terms.h"

namespace tessera {
namespace {

v1::NodeSpec Node(std::map<std::string, std::string> labels,
                  std::vector<std::tuple<std::string, std::string, v1::TaintEffect>> taints = {}) {
  v1::NodeSpec spec;
  spec.set_name("n");
  spec.mutable_labels()->insert(labels.begin(), labels.end());
  for (const auto& [key, value, effect] : taints) {
    v1::Taint* t = spec.add_taints();
    t->set_key(key);
    t->set_value(value);
    t->set_effect(effect);
  }
  return spec;
}

void Require(v1::JobSpec& spec, const std::string& key, v1::NodeSelectorRequirement::Operator op,
             std::vector<std::string> values = {}) {
  v1::NodeSelectorRequirement* r = spec.add_node_requirements();
  r->set_key(key);
  r->set_operator_(op);
  for (const std::string& v : values) r->add_values(v);
}

TEST_CASE("placement terms: each requirement operator") {
  LabelDictionary dictionary;
  const NodeLabels tier2 = MakeNodeLabels(Node({{"tier", "2"}, {"ssd", "yes"}}), dictionary);
  const NodeLabels bare = MakeNodeLabels(Node({}), dictionary);
  using R = v1::NodeSelectorRequirement;
  auto admits = [&](R::Operator op, std::vector<std::string> values, const NodeLabels& node,
                    const std::string& key = "tier") {
    v1::JobSpec spec;
    Require(spec, key, op, values);
    return PlacementTerms::Compile(spec, dictionary)->Admits(node);
  };
  CHECK(admits(R::IN, {"1", "2"}, tier2));
  CHECK_FALSE(admits(R::IN, {"1", "3"}, tier2));
  CHECK_FALSE(admits(R::IN, {"2"}, bare));
  CHECK(admits(R::NOT_IN, {"1", "3"}, tier2));
  CHECK_FALSE(admits(R::NOT_IN, {"2"}, tier2));
  CHECK(admits(R::NOT_IN, {"2"}, bare));
  CHECK(admits(R::EXISTS, {}, tier2));
  CHECK_FALSE(admits(R::EXISTS, {}, bare));
  CHECK(admits(R::DOES_NOT_EXIST, {}, bare));
  CHECK_FALSE(admits(R::DOES_NOT_EXIST, {}, tier2));
  CHECK(admits(R::GT, {"1"}, tier2));
  CHECK_FALSE(admits(R::GT, {"2"}, tier2));
  CHECK(admits(R::LT, {"3"}, tier2));
  CHECK_FALSE(admits(R::LT, {"-5"}, tier2));
  // A label that is not an integer meets neither GT nor LT.
  CHECK_FALSE(admits(R::GT, {"0"}, tier2, "ssd"));
  CHECK_FALSE(admits(R::LT, {"0"}, tier2, "ssd"));

  v1::JobSpec selector;
  (*selector.mutable_node_selector())["tier"] = "2";
  (*selector.mutable_node_selector())["ssd"] = "yes";
  const auto terms = PlacementTerms::Compile(selector, dictionary);
  CHECK(terms->Admits(tier2));
  CHECK_FALSE(terms->Admits(bare));
  CHECK(terms->required_pairs().size() == 2);
}

TEST_CASE("placement terms: tolerations match by key, value and effect") {
  LabelDictionary dictionary;
  const NodeLabels tainted = MakeNodeLabels(
      Node({}, {{"dedicated", "infer", v1::NO_SCHEDULE}, {"spot", "", v1::PREFER_NO_SCHEDULE}}),
      dictionary);
  CHECK(tainted.hard_taints);
  CHECK(tainted.soft_taints);
  auto with = [&](const std::string& key, v1::Toleration::Operator op, const std::string& value,
                  v1::TaintEffect effect) {
    v1::JobSpec spec;
    v1::Toleration* t = spec.add_tolerations();
    t->set_key(key);
    t->set_operator_(op);
    t->set_value(value);
    t->set_effect(effect);
    return PlacementTerms::Compile(spec, dictionary);
  };
  using T = v1::Toleration;
  CHECK(with("dedicated", T::EQUAL, "infer", v1::NO_SCHEDULE)->Admits(tainted));
  CHECK(with("dedicated", T::EQUAL, "infer", v1::TAINT_EFFECT_UNSPECIFIED)->Admits(tainted));
  CHECK(with("dedicated", T::EXISTS, "", v1::TAINT_EFFECT_UNSPECIFIED)->Admits(tainted));
  CHECK_FALSE(with("dedicated", T::EQUAL, "train", v1::NO_SCHEDULE)->Admits(tainted));
  CHECK_FALSE(with("dedicated", T::EQUAL, "infer", v1::NO_EXECUTE)->Admits(tainted));
  CHECK_FALSE(with("other", T::EXISTS, "", v1::TAINT_EFFECT_UNSPECIFIED)->Admits(tainted));
  // The soft taint does not keep a job out; it only repels one that does not tolerate it.
  const auto hard_only = with("dedicated", T::EXISTS, "", v1::NO_SCHEDULE);
  CHECK(hard_only->RepelledSoftly(tainted));
  const auto everything = with("", T::EXISTS, "", v1::TAINT_EFFECT_UNSPECIFIED);
  CHECK(everything->Admits(tainted));
  CHECK_FALSE(everything->RepelledSoftly(tainted));
}

TEST_CASE("placement terms: compiled without interning, unknown names match no node") {
  LabelDictionary dictionary;
  const NodeLabels a100 = MakeNodeLabels(Node({{"gpu-type", "a100"}}), dictionary);
  const LabelDictionary snapshot = dictionary;
  v1::JobSpec wants_h100;
  (*wants_h100.mutable_node_selector())["gpu-type"] = "h100";
  v1::JobSpec avoids_h100;
  Require(avoids_h100, "gpu-type", v1::NodeSelectorRequirement::NOT_IN, {"h100"});
  CHECK_FALSE(PlacementTerms::Compile(wants_h100, snapshot)->Admits(a100));
  CHECK(PlacementTerms::Compile(avoids_h100, snapshot)->Admits(a100));
  CHECK(snapshot.size() == dictionary.size());
  // Interning it makes a node added later with the label match.
  const auto interned = PlacementTerms::Compile(wants_h100, dictionary);
  const NodeLabels h100 = MakeNodeLabels(Node({{"gpu-type", "h100"}}), dictionary);
  CHECK(interned->Admits(h100));
  CHECK_FALSE(interned->Admits(a100));
}

TEST_CASE("placement terms: a spec without terms compiles to none; zone is a label") {
  LabelDictionary dictionary;
  CHECK(PlacementTerms::Compile(v1::JobSpec(), dictionary) == nullptr);
  v1::NodeSpec spec = Node({});
  spec.set_zone("eu-1");
  const NodeLabels zoned = MakeNodeLabels(spec, dictionary);
  v1::JobSpec in_zone;
  (*in_zone.mutable_node_selector())["zone"] = "eu-1";
  CHECK(PlacementTerms::Compile(in_zone, dictionary)->Admits(zoned));
}

}  // namespace
}  // namespace tessera
