// NodeIndex: the CPU order, kept lazily, matches the nodes' free CPU whenever it is read; equal
// keys go by the tie rank given with each update; and the GPU-sparing order that
// fragmentation-aware placement walks for CPU-only tasks.
#include "placement/node_index.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;
using testing::GpuShare;
using testing::PlacementFixture;
using testing::WholeGpus;

std::vector<NodeIndexId> CpuOrder(const NodeIndex& index, int64_t need, IndexOrder order) {
  TaskShape shape;
  shape.cpu_milli = need;
  std::vector<NodeIndexId> visited;
  index.Visit(shape, -1, order, [&](NodeIndexId id) {
    visited.push_back(id);
    return true;
  });
  return visited;
}

TaskShape CpuTask(int64_t cpu) {
  TaskShape s;
  s.cpu_milli = cpu;
  return s;
}

std::vector<std::string> Walk(const PlacementFixture& f, const NodeIndex& index,
                              const TaskShape& shape, int model, IndexOrder order) {
  std::vector<std::string> names;
  index.Visit(shape, model, order, [&](NodeIndexId id) {
    names.push_back(f.cluster.node(id).name());
    return true;
  });
  return names;
}

TEST_CASE("placement: node index: equal keys go by tie rank, then by id") {
  PlacementFixture f;
  const NodeIndexId x = f.Add(GpuNode("x", 8, "A100"));
  const NodeIndexId y = f.Add(GpuNode("y", 8, "A100"));
  const NodeIndexId z = f.Add(GpuNode("z", 8, "A100"));
  NodeIndex index;
  index.Update(f.cluster.node(x), 30);
  index.Update(f.cluster.node(y), 10);
  index.Update(f.cluster.node(z), 20);
  const int model = f.cluster.node(x).model();
  CHECK(Walk(f, index, WholeGpus(1), model, IndexOrder::kTightestFirst) ==
        std::vector<std::string>{"y", "z", "x"});
  // A new rank moves the node; a change of capacity keeps one entry per node.
  index.Update(f.cluster.node(x), 5);
  f.placer.Apply(*f.cluster.node(z).FitOn(WholeGpus(1), 0b1));
  index.Update(f.cluster.node(z), 20);
  CHECK(Walk(f, index, WholeGpus(1), model, IndexOrder::kTightestFirst) ==
        std::vector<std::string>{"z", "x", "y"});  // z has 7 free, the others 8.
  CHECK(Walk(f, index, CpuTask(1000), -1, IndexOrder::kTightestFirst).size() == 3);
}

TEST_CASE("placement: node index: CPU tasks visit the nodes with the fewest free GPUs first") {
  // The fragmentation-aware placer keeps the GPU-sparing order.
  PlacementFixture f(PlacementOptions::FragmentationAware({}));
  const NodeIndexId a = f.Add(GpuNode("a", 8, "A100"));  // 8 free GPUs, 10 cores free.
  const NodeIndexId b = f.Add(GpuNode("b", 2, "A100"));  // no free GPU, 60 cores free.
  const NodeIndexId c = f.Add(GpuNode("c", 1, "A100"));  // half a GPU free, 20 cores.
  const NodeIndexId d = f.Add(GpuNode("d", 0, ""));      // no GPUs, 30 cores free.
  f.placer.Apply(*f.cluster.node(a).FitOn(CpuTask(54000), 0));
  f.placer.Apply(*f.cluster.node(b).FitOn(WholeGpus(2, 4000), 0b11));
  f.placer.Apply(*f.cluster.node(c).FitOn(GpuShare(500), 0b1));
  f.placer.Apply(*f.cluster.node(c).FitOn(CpuTask(43000), 0));
  f.placer.Apply(*f.cluster.node(d).FitOn(CpuTask(34000), 0));
  CHECK(Walk(f, f.index, CpuTask(5000), -1, IndexOrder::kGpuSparingFirst) ==
        std::vector<std::string>{"d", "b", "c", "a"});
  CHECK(Walk(f, f.index, CpuTask(5000), -1, IndexOrder::kTightestFirst) ==
        std::vector<std::string>{"a", "c", "d", "b"});
  // Only nodes with the cpu: 25 cores leave out a and c.
  CHECK(Walk(f, f.index, CpuTask(25000), -1, IndexOrder::kGpuSparingFirst) ==
        std::vector<std::string>{"d", "b"});
  // GPU tasks are walked tightest first, as without the order.
  CHECK(Walk(f, f.index, WholeGpus(1), f.cluster.node(a).model(), IndexOrder::kGpuSparingFirst) ==
        std::vector<std::string>{"a"});
}

TEST_CASE("node index: CPU-only candidates follow free CPU through many changes") {
  Cluster cluster;
  NodeIndex index;
  std::vector<NodeIndexId> ids;
  for (const char* name : {"a", "b", "c"}) {
    ids.push_back(*cluster.AddNode(GpuNode(name, 4, "A100")));
    index.Update(cluster.node(ids.back()));
  }
  const int64_t full = cluster.node(ids[0]).cpu_free();
  CHECK(CpuOrder(index, 1, IndexOrder::kTightestFirst) == std::vector<NodeIndexId>{0, 1, 2});

  // Several changes between reads: only the last state of each node counts.
  auto take = [&](NodeIndexId id, int64_t cpu) {
    TaskAllocation a;
    a.node = id;
    a.cpu_milli = cpu;
    cluster.node(id).Apply(a);
    index.Update(cluster.node(id));
    return a;
  };
  const TaskAllocation on_c = take(ids[2], full / 2);
  take(ids[0], full / 4);
  take(ids[0], full / 4);  // a: half free, like c; ties go by id.
  take(ids[1], full / 8);
  CHECK(CpuOrder(index, 1, IndexOrder::kTightestFirst) == std::vector<NodeIndexId>{0, 2, 1});
  CHECK(CpuOrder(index, 1, IndexOrder::kLoosestFirst) == std::vector<NodeIndexId>{1, 2, 0});
  CHECK(CpuOrder(index, full * 3 / 4, IndexOrder::kTightestFirst) == std::vector<NodeIndexId>{1});

  // A release and a cordon, then a change back to the key already indexed.
  cluster.node(ids[2]).Release(on_c);
  index.Update(cluster.node(ids[2]));
  cluster.node(ids[1]).set_cordoned(true);
  index.Update(cluster.node(ids[1]));
  take(ids[2], full / 2);
  cluster.node(ids[2]).Release(on_c);
  index.Update(cluster.node(ids[2]));
  CHECK(CpuOrder(index, 1, IndexOrder::kTightestFirst) == std::vector<NodeIndexId>{0, 2});
  cluster.node(ids[1]).set_cordoned(false);
  index.Update(cluster.node(ids[1]));
  CHECK(CpuOrder(index, full, IndexOrder::kTightestFirst) == std::vector<NodeIndexId>{2});
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST_CASE("node index: nodes are listed by label, and move when a node comes back relabelled") {
  testing::PlacementFixture f;
  v1::NodeSpec a = testing::GpuNode("a", 2, "A100-80GB");
  (*a.mutable_labels())["pool"] = "x";
  v1::NodeSpec b = testing::GpuNode("b", 2, "A100-80GB");
  (*b.mutable_labels())["pool"] = "x";
  b.set_zone("eu-1");
  const NodeIndexId ia = f.Add(a);
  const NodeIndexId ib = f.Add(b);
  LabelDictionary& names = f.cluster.label_dictionary();
  const LabelId pool = names.Find("pool");
  CHECK(f.index.WithLabel(pool, names.Find("x")) == std::vector<NodeIndexId>{ia, ib});
  CHECK(f.index.WithLabel(names.Find("zone"), names.Find("eu-1")) == std::vector<NodeIndexId>{ib});
  CHECK(f.index.WithLabel(pool, names.Intern("y")).empty());

  // Node a leaves and comes back in pool y: it moves lists.
  f.cluster.RemoveNode(ia);
  f.placer.Refresh(ia);
  (*a.mutable_labels())["pool"] = "y";
  REQUIRE(f.Add(a) == ia);
  CHECK(f.index.WithLabel(pool, names.Find("x")) == std::vector<NodeIndexId>{ib});
  CHECK(f.index.WithLabel(pool, names.Find("y")) == std::vector<NodeIndexId>{ia});
}

}  // namespace
}  // namespace tessera
