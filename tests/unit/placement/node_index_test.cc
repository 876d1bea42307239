// NodeIndex orders beyond free capacity: equal keys by the tie rank given with each update, and
// the GPU-sparing order that fragmentation-aware placement walks for CPU-only tasks.
#include <doctest/doctest.h>

#include <vector>

#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;
using testing::GpuShare;
using testing::PlacementFixture;
using testing::WholeGpus;

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

}  // namespace
}  // namespace tessera
