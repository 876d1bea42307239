#include <doctest/doctest.h>

#include "model/cluster.h"
#include "model/inventory_diff.h"

namespace tessera {
namespace {

v1::NodeSpec Node(const std::string& name, int gpus = 8) {
  v1::NodeSpec node;
  node.set_name(name);
  node.set_cpu_milli(64000);
  node.set_memory_mib(262144);
  for (int i = 0; i < gpus; ++i) {
    v1::GpuDevice* gpu = node.add_gpus();
    gpu->set_index(i);
    gpu->set_model("A100");
    gpu->set_memory_mib(81920);
  }
  return node;
}

std::vector<std::string> Names(const std::vector<v1::NodeSpec>& nodes) {
  std::vector<std::string> out;
  for (const v1::NodeSpec& n : nodes) out.push_back(n.name());
  return out;
}

TEST_CASE("inventory diff: added, changed and removed, each in name order") {
  v1::NodeSpec relabelled = Node("b");
  (*relabelled.mutable_labels())["rack"] = "r2";
  const InventoryDiff diff = DiffInventory({Node("c"), Node("a"), Node("b")},
                                           {Node("d"), relabelled, Node("a"), Node("e")});
  CHECK(Names(diff.added) == std::vector<std::string>{"d", "e"});
  CHECK(Names(diff.changed) == std::vector<std::string>{"b"});
  CHECK(diff.changed[0].labels().at("rack") == "r2");
  CHECK(diff.removed == std::vector<std::string>{"c"});
}

TEST_CASE("inventory diff: the same nodes in another order are no change") {
  CHECK(DiffInventory({Node("a"), Node("b")}, {Node("b"), Node("a")}).empty());
  CHECK(DiffInventory({}, {}).empty());
}

TEST_CASE("inventory diff: a name listed twice counts once, with its last spec") {
  const InventoryDiff diff = DiffInventory({}, {Node("a", 4), Node("a", 8)});
  REQUIRE(diff.added.size() == 1);
  CHECK(diff.added[0].gpus_size() == 8);
}

TEST_CASE("cluster: under churn of fresh names the node table stays as large as the most present") {
  Cluster cluster;
  REQUIRE(cluster.AddNode(Node("stay")).ok());
  for (int i = 0; i < 1000; ++i) {
    StatusOr<NodeIndexId> id = cluster.AddNode(Node("spot-" + std::to_string(i)));
    REQUIRE(id.ok());
    cluster.RemoveNode(*id);
  }
  CHECK(cluster.size() == 2);
  CHECK(cluster.Find("spot-999") != nullptr);
  CHECK_FALSE(cluster.Find("spot-999")->present());
  CHECK(cluster.Find("spot-998") == nullptr);  // its slot went to spot-999, and its name too.
  CHECK(cluster.capacity().gpu_milli() == 8000);
}

TEST_CASE("cluster: a node that comes back under its name gets its slot again") {
  Cluster cluster;
  const NodeIndexId a = *cluster.AddNode(Node("a"));
  const NodeIndexId b = *cluster.AddNode(Node("b"));
  cluster.RemoveNode(a);
  cluster.RemoveNode(b);
  StatusOr<NodeIndexId> again = cluster.AddNode(Node("b", 4));
  REQUIRE(again.ok());
  CHECK(*again == b);
  CHECK(cluster.node(b).gpus().size() == 4);
  StatusOr<NodeIndexId> fresh = cluster.AddNode(Node("c"));
  REQUIRE(fresh.ok());
  CHECK(*fresh == a);  // the lowest free slot.
  CHECK(cluster.Find("a") == nullptr);
}

TEST_CASE("cluster: new labels replace the old ones and the rack with them") {
  Cluster cluster;
  v1::NodeSpec spec = Node("a");
  (*spec.mutable_labels())["rack"] = "r1";
  const NodeIndexId id = *cluster.AddNode(spec);
  v1::NodeSpec relabelled = Node("a");
  (*relabelled.mutable_labels())["rack"] = "r2";
  (*relabelled.mutable_labels())["pool"] = "p";
  relabelled.set_zone("z1");
  cluster.SetLabelsAndTaints(id, relabelled);
  CHECK(cluster.node(id).rack() == "r2");
  CHECK(cluster.labels(id).at("pool") == "p");
  CHECK(cluster.taints_and_zone(id).zone() == "z1");
  cluster.SetLabelsAndTaints(id, Node("a"));
  CHECK(cluster.node(id).rack().empty());
  CHECK(cluster.taints_and_zone(id).zone().empty());
}

}  // namespace
}  // namespace tessera
