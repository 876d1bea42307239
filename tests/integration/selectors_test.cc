// Jobs that say where they may run: node selectors and requirements matched against node
// labels, tolerations against taints, through placement, preemption, backfill reservations and
// feasibility; and the validation errors each field gives.
#include <set>
#include <string>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;

v1::SimulatedNodeGroup* Labelled(v1::SimulatedCluster& cluster, const std::string& prefix,
                                 int count, const std::string& key, const std::string& value,
                                 int gpus = 4) {
  v1::SimulatedNodeGroup* g = AddGroup(cluster, prefix, count, gpus);
  (*g->mutable_labels())[key] = value;
  return g;
}

void Taint(v1::SimulatedNodeGroup* g, const std::string& key, const std::string& value,
           v1::TaintEffect effect) {
  v1::Taint* t = g->add_taints();
  t->set_key(key);
  t->set_value(value);
  t->set_effect(effect);
}

v1::JobSpec OneGpu(const std::string& selector_key = "", const std::string& selector_value = "") {
  v1::JobSpec spec = JobSpecBuilder("default").Gpus(1).Build();
  if (!selector_key.empty()) (*spec.mutable_node_selector())[selector_key] = selector_value;
  return spec;
}

v1::NodeSelectorRequirement* Require(v1::JobSpec& spec, const std::string& key,
                                     v1::NodeSelectorRequirement::Operator op,
                                     std::vector<std::string> values = {}) {
  v1::NodeSelectorRequirement* r = spec.add_node_requirements();
  r->set_key(key);
  r->set_operator_(op);
  for (std::string& v : values) r->add_values(std::move(v));
  return r;
}

void Tolerate(v1::JobSpec& spec, const std::string& key, const std::string& value,
              v1::TaintEffect effect) {
  v1::Toleration* t = spec.add_tolerations();
  t->set_key(key);
  t->set_operator_(value.empty() ? v1::Toleration::EXISTS : v1::Toleration::EQUAL);
  t->set_value(value);
  t->set_effect(effect);
}

// The nodes a job's tasks were placed on.
std::set<std::string> NodesOf(Scheduler* s, uint64_t id) {
  std::set<std::string> nodes;
  const v1::Job job = MustGet(s, id);
  for (const v1::TaskPlacement& p : job.status().placements()) nodes.insert(p.node());
  return nodes;
}

std::string NodeOf(Scheduler* s, uint64_t id) {
  const std::set<std::string> nodes = NodesOf(s, id);
  REQUIRE(nodes.size() == 1);
  return *nodes.begin();
}

TEST_CASE("selectors: a node_selector routes a job to the nodes with that label") {
  v1::SimulatedCluster cluster;
  Labelled(cluster, "a100", 3, "gpu-type", "a100");
  Labelled(cluster, "h100", 1, "gpu-type", "h100");
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  std::vector<uint64_t> h100_jobs;
  for (int i = 0; i < 4; ++i) h100_jobs.push_back(MustSubmit(s, OneGpu("gpu-type", "h100")).id());
  const uint64_t fifth = MustSubmit(s, OneGpu("gpu-type", "h100")).id();
  const uint64_t anywhere = MustSubmit(s, OneGpu()).id();
  t->WaitIdle();
  for (uint64_t id : h100_jobs) {
    CHECK(MustGet(s, id).status().state() == v1::RUNNING);
    CHECK(NodeOf(s, id) == "h100-0");
  }
  // The h100 node is full: the fifth waits although three a100 nodes are idle.
  const v1::Job waiting = MustGet(s, fifth);
  CHECK(waiting.status().state() == v1::PENDING);
  CHECK_FALSE(waiting.status().infeasible());
  CHECK(MustGet(s, anywhere).status().state() == v1::RUNNING);
  CHECK(NodeOf(s, anywhere).rfind("a100-", 0) == 0);
}

TEST_CASE("selectors: a label only a few of 3,000 nodes have is still found") {
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "plain", 3000, 2);
  Labelled(cluster, "rare", 2, "pool", "rare", 8);
  Options options;
  options.placement = PlacementOptions::Binpack();
  auto t = OpenCluster(cluster, options);
  Scheduler* s = t.scheduler.get();
  // Binpack walks the index tightest first: every plain node (2 free GPUs) before a rare one
  // (8), so a walk gives up (after Placer::kMaxVisitsPerTask nodes) before it meets one.
  const uint64_t rare = MustSubmit(s, OneGpu("pool", "rare")).id();
  t->WaitIdle();
  CHECK(MustGet(s, rare).status().state() == v1::RUNNING);
  CHECK(NodeOf(s, rare).rfind("rare-", 0) == 0);
}

TEST_CASE("selectors: each requirement operator") {
  v1::SimulatedCluster cluster;
  Labelled(cluster, "tier1", 1, "tier", "1");
  Labelled(cluster, "tier2", 1, "tier", "2");
  (*Labelled(cluster, "tier3", 1, "tier", "3")->mutable_labels())["ssd"] = "yes";
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  using R = v1::NodeSelectorRequirement;
  auto run = [&](v1::JobSpec spec) {
    const uint64_t id = MustSubmit(s, spec).id();
    t->WaitIdle();
    const v1::Job job = MustGet(s, id);
    REQUIRE_MESSAGE(job.status().state() == v1::RUNNING, job.status().reason());
    const std::string node = NodeOf(s, id);
    REQUIRE(s->Cancel(id).ok());
    t->WaitIdle();
    return node;
  };
  v1::JobSpec gt = OneGpu();
  Require(gt, "tier", R::GT, {"2"});
  CHECK(run(gt) == "tier3-0");
  v1::JobSpec lt = OneGpu();
  Require(lt, "tier", R::LT, {"2"});
  CHECK(run(lt) == "tier1-0");
  v1::JobSpec not_in = OneGpu();
  Require(not_in, "tier", R::NOT_IN, {"1", "3"});
  CHECK(run(not_in) == "tier2-0");
  v1::JobSpec in = OneGpu();
  Require(in, "tier", R::IN, {"3", "7"});
  CHECK(run(in) == "tier3-0");
  v1::JobSpec exists = OneGpu();
  Require(exists, "ssd", R::EXISTS);
  CHECK(run(exists) == "tier3-0");
  // Two requirements: both must hold.
  v1::JobSpec both = OneGpu();
  Require(both, "ssd", R::DOES_NOT_EXIST);
  Require(both, "tier", R::GT, {"1"});
  CHECK(run(both) == "tier2-0");
}

TEST_CASE("selectors: a NO_SCHEDULE taint keeps out jobs that do not tolerate it") {
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "plain", 1, 4);
  Taint(AddGroup(cluster, "infer", 1, 4), "dedicated", "inference", v1::NO_SCHEDULE);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  std::vector<uint64_t> plain;
  for (int i = 0; i < 5; ++i) plain.push_back(MustSubmit(s, OneGpu()).id());
  v1::JobSpec tolerant = OneGpu();
  Tolerate(tolerant, "dedicated", "inference", v1::NO_SCHEDULE);
  // Wait for the untainted node to be full before the tolerant job arrives.
  t->WaitIdle();
  const uint64_t tolerant_id = MustSubmit(s, tolerant).id();
  v1::JobSpec wrong_value = OneGpu();
  Tolerate(wrong_value, "dedicated", "training", v1::NO_SCHEDULE);
  const uint64_t wrong_id = MustSubmit(s, wrong_value).id();
  t->WaitIdle();
  for (int i = 0; i < 4; ++i) CHECK(NodeOf(s, plain[i]) == "plain-0");
  // The fifth waits rather than use the tainted node, and so does a job tolerating another value.
  CHECK(MustGet(s, plain[4]).status().state() == v1::PENDING);
  CHECK(MustGet(s, wrong_id).status().state() == v1::PENDING);
  CHECK(NodeOf(s, tolerant_id) == "infer-0");
}

TEST_CASE("selectors: a job that tolerates nothing on an all-tainted cluster is infeasible") {
  v1::SimulatedCluster cluster;
  Taint(AddGroup(cluster, "infer", 2, 4), "dedicated", "inference", v1::NO_EXECUTE);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  const v1::Job job = MustSubmit(s, OneGpu());
  CHECK(job.status().infeasible());
  CHECK(job.status().reason().find("has a taint the job does not tolerate (e.g. "
                                   "dedicated=inference:NO_EXECUTE)") != std::string::npos);
  v1::JobSpec any = OneGpu();
  v1::Toleration* everything = any.add_tolerations();
  everything->set_operator_(v1::Toleration::EXISTS);  // no key: every taint.
  const uint64_t id = MustSubmit(s, any).id();
  t->WaitIdle();
  CHECK(MustGet(s, id).status().state() == v1::RUNNING);
}

TEST_CASE("selectors: nodes with a PREFER_NO_SCHEDULE taint are used last") {
  v1::SimulatedCluster cluster;
  // The softly tainted nodes come first in every order the index keeps.
  Taint(AddGroup(cluster, "spot", 2, 4), "spot", "", v1::PREFER_NO_SCHEDULE);
  AddGroup(cluster, "steady", 2, 4);
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  std::vector<uint64_t> ids;
  for (int i = 0; i < 10; ++i) {
    ids.push_back(MustSubmit(s, OneGpu()).id());
    t->WaitIdle();
  }
  for (int i = 0; i < 8; ++i) CHECK(NodeOf(s, ids[i]).rfind("steady-", 0) == 0);
  for (int i = 8; i < 10; ++i) CHECK(NodeOf(s, ids[i]).rfind("spot-", 0) == 0);
  // A job that tolerates the taint takes the spot nodes as any other.
  v1::JobSpec tolerant = OneGpu();
  Tolerate(tolerant, "spot", "", v1::PREFER_NO_SCHEDULE);
  const uint64_t tolerant_id = MustSubmit(s, tolerant).id();
  t->WaitIdle();
  CHECK(MustGet(s, tolerant_id).status().state() == v1::RUNNING);
}

TEST_CASE("selectors: no node with the label: infeasible, then feasible once one joins") {
  ScratchDir dir;
  Options options;
  options.store.path = dir.File("store.db");
  v1::SimulatedCluster without;
  Labelled(without, "a100", 2, "gpu-type", "a100");
  uint64_t id = 0;
  {
    auto t = OpenCluster(without, options);
    const v1::Job job = MustSubmit(t.scheduler.get(), OneGpu("gpu-type", "h100"));
    id = job.id();
    CHECK(job.status().infeasible());
    CHECK(job.status().reason() ==
          "no node could ever run one task: no node has label gpu-type=h100");
    v1::JobSpec wanting_zone = OneGpu();
    Require(wanting_zone, "zone", v1::NodeSelectorRequirement::IN, {"eu-1", "eu-2"});
    const v1::Job zoned = MustSubmit(t.scheduler.get(), wanting_zone);
    CHECK(zoned.status().reason() ==
          "no node could ever run one task: no node has label zone in (eu-1,eu-2)");
    t->Close();
  }
  v1::SimulatedCluster with = without;
  Labelled(with, "h100", 1, "gpu-type", "h100")->set_zone("eu-2");
  auto t = OpenCluster(with, options);
  t->WaitIdle();
  const v1::Job job = MustGet(t.scheduler.get(), id);
  CHECK_FALSE(job.status().infeasible());
  CHECK(job.status().state() == v1::RUNNING);
  CHECK(NodeOf(t.scheduler.get(), id) == "h100-0");
  // The zone is a label to selectors, and the node reports it.
  auto nodes = t->ListNodes();
  REQUIRE(nodes.ok());
  for (const v1::Node& n : *nodes) {
    if (n.spec().name() == "h100-0") CHECK(n.spec().zone() == "eu-2");
  }
}

Options WithClasses() {
  Options options;
  options.priority_classes = {{"low", 0, true}, {"normal", 100, true}, {"critical", 10000, true}};
  return options;
}

TEST_CASE("selectors: preemption stops only victims on nodes the preemptor may use") {
  v1::SimulatedCluster cluster;
  // The other node first: the planner would look there first.
  Labelled(cluster, "a100", 1, "gpu-type", "a100");
  Labelled(cluster, "h100", 1, "gpu-type", "h100");
  auto t = OpenCluster(cluster, WithClasses());
  Scheduler* s = t.scheduler.get();
  auto low = [](const std::string& type) {
    v1::JobSpec spec = OneGpu("gpu-type", type);
    spec.set_priority_class("low");
    spec.set_checkpoint_grace_s(30);
    return spec;
  };
  std::vector<uint64_t> on_h100, on_a100;
  for (int i = 0; i < 4; ++i) on_h100.push_back(MustSubmit(s, low("h100")).id());
  t->WaitIdle();
  t.clock->AdvanceUs(300 * kSecond);
  t->WaitIdle();
  // Younger work on the a100 node: the cheapest victims, were any node good enough.
  for (int i = 0; i < 4; ++i) on_a100.push_back(MustSubmit(s, low("a100")).id());
  t->WaitIdle();
  t.clock->AdvanceUs(120 * kSecond);
  t->WaitIdle();

  v1::JobSpec urgent = JobSpecBuilder("default").Gpus(2).PriorityClass("critical").Build();
  (*urgent.mutable_node_selector())["gpu-type"] = "h100";
  const uint64_t urgent_id = MustSubmit(s, urgent).id();
  t->WaitIdle();
  int preempting_h100 = 0;
  for (uint64_t id : on_h100) preempting_h100 += MustGet(s, id).status().state() == v1::PREEMPTING;
  for (uint64_t id : on_a100) CHECK(MustGet(s, id).status().state() == v1::RUNNING);
  CHECK(preempting_h100 == 2);
  t.clock->AdvanceUs(31 * kSecond);
  t->WaitIdle();
  CHECK(MustGet(s, urgent_id).status().state() == v1::RUNNING);
  CHECK(NodeOf(s, urgent_id) == "h100-0");
}

TEST_CASE("selectors: a backfill reservation holds only nodes that admit the job") {
  v1::SimulatedCluster cluster;
  Labelled(cluster, "x", 1, "pool", "x");
  Labelled(cluster, "y", 1, "pool", "y");
  Options options;
  options.engine.max_reservations = 1;
  auto t = OpenCluster(cluster, options);
  Scheduler* s = t.scheduler.get();
  const TimestampUs t0 = t.clock->NowUs();
  auto filler = [](const std::string& pool, int64_t seconds) {
    v1::JobSpec spec = OneGpu("pool", pool);
    spec.mutable_simulation()->set_duration_ms(seconds * 1000);
    spec.set_time_limit_s(seconds);
    return spec;
  };
  // Pool y frees up at 10 s, pool x only at 100 s.
  for (int i = 0; i < 4; ++i) MustSubmit(s, filler("x", 100));
  for (int i = 0; i < 4; ++i) MustSubmit(s, filler("y", 10));
  t->WaitIdle();
  v1::JobSpec gang = JobSpecBuilder("default").Gpus(4).Build();
  (*gang.mutable_node_selector())["pool"] = "x";
  const uint64_t gang_id = MustSubmit(s, gang).id();
  t->WaitIdle();
  const v1::Job waiting = MustGet(s, gang_id);
  CHECK(waiting.status().reserved_start_us() == t0 + 100 * kSecond);
  CHECK(waiting.status().reason().find("1 node(s) reserved") != std::string::npos);
  // Pool y empties at 10 s and stays free for others: the reservation is not there.
  t.clock->AdvanceToUs(t0 + 10 * kSecond);
  t->WaitIdle();
  const uint64_t later = MustSubmit(s, OneGpu("pool", "y")).id();
  t->WaitIdle();
  CHECK(MustGet(s, later).status().state() == v1::RUNNING);
  CHECK(MustGet(s, gang_id).status().state() == v1::PENDING);
  t.clock->AdvanceToUs(t0 + 100 * kSecond);
  t->WaitIdle();
  CHECK(MustGet(s, gang_id).status().state() == v1::RUNNING);
  CHECK(NodeOf(s, gang_id) == "x-0");
}

// The field of an INVALID_ARGUMENT, and that the message starts with it.
std::string FieldOf(const Status& status) {
  CHECK_MESSAGE(status.code() == StatusCode::kInvalidArgument, status.ToString());
  CHECK_MESSAGE(status.message().rfind(status.field() + ": ", 0) == 0, status.ToString());
  return status.field();
}

TEST_CASE("selectors: each invalid placement term names its field") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  using R = v1::NodeSelectorRequirement;
  auto submit = [&](const v1::JobSpec& spec) { return FieldOf(s->Submit(spec).status()); };
  {
    v1::JobSpec spec = OneGpu("", "");
    (*spec.mutable_node_selector())[""] = "x";
    CHECK(submit(spec) == "node_selector");
  }
  {
    v1::JobSpec spec = OneGpu("k", std::string(1025, 'v'));
    CHECK(submit(spec) == "node_selector[k]");
  }
  {
    v1::JobSpec spec = OneGpu();
    Require(spec, "tier", R::IN, {"1"});
    Require(spec, "tier", static_cast<R::Operator>(0));
    CHECK(submit(spec) == "node_requirements[1].operator");
  }
  {
    v1::JobSpec spec = OneGpu();
    Require(spec, "", R::EXISTS);
    CHECK(submit(spec) == "node_requirements[0].key");
  }
  {
    v1::JobSpec spec = OneGpu();
    Require(spec, "tier", R::NOT_IN);
    CHECK(submit(spec) == "node_requirements[0].values");
  }
  {
    v1::JobSpec spec = OneGpu();
    Require(spec, "tier", R::DOES_NOT_EXIST, {"1"});
    CHECK(submit(spec) == "node_requirements[0].values");
  }
  {
    v1::JobSpec spec = OneGpu();
    Require(spec, "tier", R::GT, {"two"});
    CHECK(submit(spec) == "node_requirements[0].values");
  }
  {
    v1::JobSpec spec = OneGpu();
    Require(spec, "tier", R::IN, {"1", std::string(1025, 'v')});
    CHECK(submit(spec) == "node_requirements[0].values[1]");
  }
  {
    v1::JobSpec spec = OneGpu();
    Tolerate(spec, "", "", v1::NO_SCHEDULE);
    spec.mutable_tolerations(0)->set_operator_(static_cast<v1::Toleration::Operator>(7));
    CHECK(submit(spec) == "tolerations[0].operator");
  }
  {
    v1::JobSpec spec = OneGpu();
    Tolerate(spec, "k", "v", static_cast<v1::TaintEffect>(9));
    CHECK(submit(spec) == "tolerations[0].effect");
  }
  {
    v1::JobSpec spec = OneGpu();
    Tolerate(spec, "", "v", v1::NO_SCHEDULE);  // EQUAL needs a key.
    CHECK(submit(spec) == "tolerations[0].key");
  }
  {
    v1::JobSpec spec = OneGpu();
    Tolerate(spec, "k", "", v1::NO_SCHEDULE);
    spec.mutable_tolerations(0)->set_value("v");  // EXISTS with a value.
    CHECK(submit(spec) == "tolerations[0].value");
  }
  {
    v1::JobSpec spec = OneGpu();
    Tolerate(spec, "k", std::string(1025, 'v'), v1::NO_SCHEDULE);
    CHECK(submit(spec) == "tolerations[0].value");
  }
}

TEST_CASE("selectors: invalid node taints, labels and zones name the node and field") {
  auto opens = [](const v1::SimulatedCluster& cluster) {
    Options options;
    options.simulated_cluster = cluster;
    options.clock = std::make_shared<ManualClock>();
    auto opened = Scheduler::Open(options);
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.status().code() == StatusCode::kInvalidArgument);
    return opened.status().message();
  };
  auto has = [](const std::string& message, const std::string& part) {
    CHECK_MESSAGE(message.find(part) != std::string::npos, message);
  };
  {
    v1::SimulatedCluster cluster;
    Taint(AddGroup(cluster, "n", 1, 1), "dedicated", "x", v1::TAINT_EFFECT_UNSPECIFIED);
    has(opens(cluster), "node 'n-0': taints[0].effect: must be NO_SCHEDULE");
  }
  {
    v1::SimulatedCluster cluster;
    Taint(AddGroup(cluster, "n", 1, 1), "", "x", v1::NO_SCHEDULE);
    has(opens(cluster), "node 'n-0': taints[0].key: must be 1..253 bytes");
  }
  {
    v1::SimulatedCluster cluster;
    Taint(AddGroup(cluster, "n", 1, 1), "k", std::string(1025, 'v'), v1::NO_SCHEDULE);
    has(opens(cluster), "node 'n-0': taints[0].value: at most 1024 bytes");
  }
  {
    v1::SimulatedCluster cluster;
    (*AddGroup(cluster, "n", 1, 1)->mutable_labels())[""] = "x";
    has(opens(cluster), "node 'n-0': labels: keys must be 1..253 bytes");
  }
  {
    v1::SimulatedCluster cluster;
    (*AddGroup(cluster, "n", 1, 1)->mutable_labels())["k"] = std::string(1025, 'v');
    has(opens(cluster), "node 'n-0': labels[k]: at most 1024 bytes");
  }
  {
    v1::SimulatedCluster cluster;
    AddGroup(cluster, "n", 1, 1)->set_zone(std::string(254, 'z'));
    has(opens(cluster), "node 'n-0': zone: at most 253 bytes");
  }
  {
    v1::SimulatedCluster cluster;
    v1::SimulatedNodeGroup* g = Labelled(cluster, "n", 1, "zone", "eu-1", 1);
    g->set_zone("eu-2");
    has(opens(cluster), "node 'n-0': zone: 'eu-2' differs from labels[zone] 'eu-1'");
  }
}

}  // namespace
}  // namespace tessera
