// NodeIndex: the CPU order, kept lazily, matches the nodes' free CPU whenever it is read.
#include "placement/node_index.h"

#include <doctest/doctest.h>

#include <vector>

#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;

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
