// The autoscaler alone, against a fake CapacityProviders: which group it picks, its bounds and
// back-off, which joining nodes are burst nodes, and scale-in.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "elastic/autoscaler.h"

namespace tessera {
namespace {

constexpr TimestampUs kSecond = 1'000'000;

v1::NodeGroup Group(const std::string& name, v1::CapacityMarket market, double price, int gpus,
                    const std::string& model = "L4", int max_nodes = 8, int min_nodes = 0) {
  v1::NodeGroup g;
  g.set_name(name);
  g.set_price_per_hour(price);
  g.set_market(market);
  g.set_max_nodes(max_nodes);
  g.set_min_nodes(min_nodes);
  v1::NodeSpec* shape = g.mutable_shape();
  shape->set_name(name);
  shape->set_cpu_milli(32000);
  shape->set_memory_mib(131072);
  for (int i = 0; i < gpus; ++i) {
    v1::GpuDevice* gpu = shape->add_gpus();
    gpu->set_index(i);
    gpu->set_model(model);
    gpu->set_memory_mib(23034);
  }
  return g;
}

class FakeProviders : public CapacityProviders {
 public:
  std::vector<BurstGroup> groups;
  struct Asked {
    std::string backend, group;
    int count;
    std::string id;
  };
  std::vector<Asked> asked;
  std::vector<std::string> given_back;

  std::vector<BurstGroup> Groups() const override { return groups; }
  void Provision(const std::string& backend, const std::string& group, int count,
                 const std::string& request_id) override {
    asked.push_back({backend, group, count, request_id});
  }
  void Deprovision(const std::string& /*backend*/, const std::vector<std::string>& nodes) override {
    given_back.insert(given_back.end(), nodes.begin(), nodes.end());
  }
};

BurstDemand Demand(uint64_t job, int tasks, int gpus, bool spot = false) {
  BurstDemand d;
  d.job = job;
  d.tasks = tasks;
  d.cpu_milli = 1000;
  d.memory_mib = 1024;
  d.gpus_per_task = gpus;
  d.spot_allowed = spot;
  return d;
}

v1::NodeSpec Node(const std::string& name, const std::string& group_label = "") {
  v1::NodeSpec n;
  n.set_name(name);
  if (!group_label.empty()) (*n.mutable_labels())["tessera.io/node-group"] = group_label;
  return n;
}

const auto kNothingPresent = [](const std::string&) { return false; };

TEST_CASE("autoscaler: the cheapest group per useful GPU-hour, spot first where allowed") {
  FakeProviders providers;
  providers.groups = {{"cloud", Group("big-od", v1::ON_DEMAND, 8.0, 8)},
                      {"cloud", Group("small-od", v1::ON_DEMAND, 1.5, 1)},
                      {"cloud", Group("small-spot", v1::SPOT, 0.6, 1)}};
  ElasticOptions options;
  Autoscaler scaler(options, providers, "r");
  // Four 1-GPU tasks: four small nodes cost 6.00 an hour, one big node 8.00: small wins.
  REQUIRE(scaler.ScaleOut(Demand(1, 4, 1), 0).kind == Autoscaler::Answer::Kind::kAsked);
  CHECK(providers.asked.back().group == "small-od");
  CHECK(providers.asked.back().count == 4);
  // Eight tasks: eight small ones cost 12.00, one big one 8.00.
  REQUIRE(scaler.ScaleOut(Demand(2, 8, 1), 0).kind == Autoscaler::Answer::Kind::kAsked);
  CHECK(providers.asked.back().group == "big-od");
  // A job that may run on spot gets spot, though on-demand would hold it too.
  REQUIRE(scaler.ScaleOut(Demand(3, 1, 1, /*spot=*/true), 0).kind ==
          Autoscaler::Answer::Kind::kAsked);
  CHECK(providers.asked.back().group == "small-spot");
  // One request per job at a time.
  CHECK(scaler.ScaleOut(Demand(3, 1, 1, true), 0).kind == Autoscaler::Answer::Kind::kUnderWay);
}

TEST_CASE("autoscaler: a group whose shape cannot hold one task is never chosen") {
  FakeProviders providers;
  providers.groups = {{"cloud", Group("l4", v1::ON_DEMAND, 1.0, 4, "L4")}};
  Autoscaler scaler(ElasticOptions{}, providers, "r");
  CHECK(scaler.ScaleOut(Demand(1, 1, 8), 0).kind == Autoscaler::Answer::Kind::kNoGroup);
  BurstDemand h100 = Demand(2, 1, 1);
  h100.models = {"H100-80GB"};
  CHECK(scaler.ScaleOut(h100, 0).kind == Autoscaler::Answer::Kind::kNoGroup);
  CHECK(providers.asked.empty());
}

TEST_CASE("autoscaler: max_nodes and max_requests_per_minute bound it") {
  FakeProviders providers;
  providers.groups = {{"cloud", Group("l4", v1::ON_DEMAND, 1.0, 1)}};
  ElasticOptions options;
  SUBCASE("max_nodes counts nodes present and asked for") {
    options.max_nodes = 3;
    Autoscaler scaler(options, providers, "r");
    REQUIRE(scaler.NodeJoined("cloud", Node("l4-0"), true, 0) != nullptr);
    CHECK(scaler.ScaleOut(Demand(1, 2, 1), 0).kind == Autoscaler::Answer::Kind::kAsked);
    const Autoscaler::Answer over = scaler.ScaleOut(Demand(2, 1, 1), 0);
    CHECK(over.kind == Autoscaler::Answer::Kind::kBounded);
    CHECK(over.note.find("elastic.max_nodes (3)") != std::string::npos);
  }
  SUBCASE("max_requests_per_minute, with when to look again") {
    options.max_requests_per_minute = 2;
    Autoscaler scaler(options, providers, "r");
    CHECK(scaler.ScaleOut(Demand(1, 1, 1), 0).kind == Autoscaler::Answer::Kind::kAsked);
    CHECK(scaler.ScaleOut(Demand(2, 1, 1), kSecond).kind == Autoscaler::Answer::Kind::kAsked);
    const Autoscaler::Answer rate = scaler.ScaleOut(Demand(3, 1, 1), 3 * kSecond);
    CHECK(rate.kind == Autoscaler::Answer::Kind::kBounded);
    CHECK(rate.retry_at == 60 * kSecond);
    CHECK(scaler.ScaleOut(Demand(3, 1, 1), 60 * kSecond).kind == Autoscaler::Answer::Kind::kAsked);
  }
}

TEST_CASE("autoscaler: a failed request backs its group off, doubling within the back-off") {
  FakeProviders providers;
  providers.groups = {{"cloud", Group("spot", v1::SPOT, 0.5, 1)},
                      {"cloud", Group("od", v1::ON_DEMAND, 1.0, 1)}};
  ElasticOptions options;
  options.group_backoff = std::chrono::seconds(100);
  Autoscaler scaler(options, providers, "r");
  REQUIRE(scaler.ScaleOut(Demand(1, 1, 1, true), 0).kind == Autoscaler::Answer::Kind::kAsked);
  scaler.ProvisionEnded(providers.asked[0].id, false, "refused", {}, kNothingPresent, 0);
  CHECK(scaler.BackoffUntil(0) == 100 * kSecond);
  // Spot backs off: on-demand instead, and the reason says why spot was passed over.
  REQUIRE(scaler.ScaleOut(Demand(1, 1, 1, true), kSecond).kind == Autoscaler::Answer::Kind::kAsked);
  CHECK(providers.asked.back().group == "od");
  scaler.ProvisionEnded(providers.asked.back().id, true, "", {}, kNothingPresent, kSecond);
  // A second failure of spot within its back-off doubles it.
  REQUIRE(scaler.ScaleOut(Demand(2, 1, 1, true), 150 * kSecond).kind ==
          Autoscaler::Answer::Kind::kAsked);
  CHECK(providers.asked.back().group == "spot");
  scaler.ProvisionEnded(providers.asked.back().id, false, "refused", {}, kNothingPresent,
                        150 * kSecond);
  CHECK(scaler.BackoffUntil(0) == 350 * kSecond);
}

TEST_CASE("autoscaler: which joining nodes are burst nodes") {
  FakeProviders providers;
  providers.groups = {{"cloud", Group("l4", v1::ON_DEMAND, 1.0, 1)}};
  Autoscaler scaler(ElasticOptions{}, providers, "r");

  SUBCASE("named after the group by its own provider, not by another backend") {
    CHECK(scaler.NodeJoined("cloud", Node("l4-0"), true, 0) != nullptr);
    CHECK(scaler.NodeJoined("other", Node("l4-1"), true, 0) == nullptr);
    CHECK(scaler.NodeJoined("cloud", Node("l4x-0"), true, 0) == nullptr);
  }
  SUBCASE("labelled with a group, through any backend (a restart)") {
    const BurstGroup* g = scaler.NodeJoined("k8s", Node("ip-10-0-0-9", "l4"), false, 0);
    REQUIRE(g != nullptr);
    CHECK(*scaler.ProviderOf("ip-10-0-0-9") == "cloud");
    CHECK(scaler.NodeJoined("k8s", Node("ip-10-0-0-8", "no-such-group"), false, 0) == nullptr);
  }
  SUBCASE("named by the completion: joined before it ends, or after") {
    REQUIRE(scaler.ScaleOut(Demand(1, 2, 1), 10 * kSecond).kind ==
            Autoscaler::Answer::Kind::kAsked);
    // A private node that was there all along, and one that joins during the request.
    CHECK(scaler.NodeJoined("k8s", Node("ip-a"), true, 20 * kSecond) == nullptr);
    const auto present = [](const std::string& n) { return n == "ip-a" || n == "private-0"; };
    const Autoscaler::Ended ended = scaler.ProvisionEnded(
        providers.asked[0].id, true, "", {"ip-a", "ip-b", "private-0"}, present, 30 * kSecond);
    CHECK(ended.taken == std::vector<std::string>{"ip-a"});
    CHECK(ended.refused == std::vector<std::string>{"private-0"});
    CHECK(scaler.nodes().at("ip-a").joined_us == 20 * kSecond);  // charged from its join.
    CHECK(scaler.ProviderOf("private-0") == nullptr);
    // ip-b was named before it joined: a burst node when it does.
    CHECK(scaler.nodes().count("ip-b") == 0);
    CHECK(scaler.NodeJoined("k8s", Node("ip-b"), true, 40 * kSecond) != nullptr);
    CHECK(scaler.nodes().size() == 2);
  }
  SUBCASE("a node that joined before the request is not the request's") {
    REQUIRE(scaler.ScaleOut(Demand(1, 1, 1), 0).kind == Autoscaler::Answer::Kind::kAsked);
    CHECK(scaler.NodeJoined("k8s", Node("ip-early"), true, 5 * kSecond) == nullptr);
    scaler.ProvisionEnded(providers.asked[0].id, false, "refused", {}, kNothingPresent,
                          6 * kSecond);
    REQUIRE(scaler.ScaleOut(Demand(2, 1, 1), 700 * kSecond).kind ==
            Autoscaler::Answer::Kind::kAsked);
    const auto present = [](const std::string& n) { return n == "ip-early"; };
    const Autoscaler::Ended ended = scaler.ProvisionEnded(providers.asked[1].id, true, "",
                                                          {"ip-early"}, present, 710 * kSecond);
    CHECK(ended.taken.empty());
    CHECK(ended.refused == std::vector<std::string>{"ip-early"});
  }
}

TEST_CASE("autoscaler: idle burst nodes go back after scale_in_after, not below min_nodes") {
  FakeProviders providers;
  providers.groups = {{"cloud", Group("l4", v1::ON_DEMAND, 1.0, 1, "L4", 8, /*min_nodes=*/1)}};
  ElasticOptions options;
  options.scale_in_after = std::chrono::seconds(600);
  Autoscaler scaler(options, providers, "r");
  REQUIRE(scaler.NodeJoined("cloud", Node("l4-0"), true, 0) != nullptr);
  REQUIRE(scaler.NodeJoined("cloud", Node("l4-1"), true, 0) != nullptr);
  std::set<std::string> busy = {"l4-1"};
  const auto idle = [&busy](const std::string& n) { return busy.count(n) == 0; };
  CHECK(scaler.ScaleIn(idle, 0).empty());
  CHECK(scaler.ScaleIn(idle, 599 * kSecond).empty());
  CHECK(scaler.ScaleIn(idle, 600 * kSecond) == std::vector<std::string>{"l4-0"});
  // The other idles too, but the group keeps its min_nodes.
  busy.clear();
  CHECK(scaler.ScaleIn(idle, 700 * kSecond).empty());
  CHECK(scaler.ScaleIn(idle, 1400 * kSecond).empty());
}

}  // namespace
}  // namespace tessera
