// NodeState::Fits, the cheap feasibility check the placer uses for nodes it does not score: it
// must agree with Fit on every node state and shape, including those where it takes its
// shortcut (whole GPUs, no NVLink domain, no GPU memory asked).
#include <doctest/doctest.h>

#include <random>

#include "unit/placement/placement_fixture.h"

namespace tessera {
namespace {

using testing::GpuNode;
using testing::GpuShare;
using testing::PlacementFixture;
using testing::WholeGpus;

TEST_CASE("node state: Fits agrees with Fit on random node states") {
  PlacementFixture f;
  // Eight GPUs in two NVLink domains of four.
  const NodeIndexId id = f.Add(GpuNode("n", 8, "A100-80GB", 4));
  std::mt19937_64 random(11);
  std::vector<TaskShape> shapes;
  for (int count : {1, 2, 3, 4, 5, 8}) {
    for (bool same_nvlink : {false, true}) {
      for (int64_t gpu_memory : {int64_t{0}, int64_t{40960}, int64_t{99999}}) {
        TaskShape s = WholeGpus(count, 8000);
        s.same_nvlink = same_nvlink;
        s.gpu_memory_mib = gpu_memory;
        shapes.push_back(s);
      }
    }
  }
  for (int milli : {250, 500}) shapes.push_back(GpuShare(milli));
  std::vector<TaskAllocation> held;
  int shortcut_fits = 0;
  int shortcut_misses = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const NodeState& node = f.cluster.node(id);
    for (const TaskShape& s : shapes) {
      const bool fits = node.Fit(s, DevicePreference::kTightest).has_value();
      CHECK(node.Fits(s) == fits);
      if (s.whole_gpus() && !s.same_nvlink && s.gpu_memory_mib == 0) {
        ++(fits ? shortcut_fits : shortcut_misses);
      }
    }
    // Take a random task or give one back, so the node passes through many states.
    const TaskShape& s = shapes[random() % shapes.size()];
    std::optional<TaskAllocation> a = node.Fit(s, DevicePreference::kTightest);
    if (a && (held.empty() || random() % 3 != 0)) {
      f.placer.Apply(*a);
      held.push_back(*a);
    } else if (!held.empty()) {
      const size_t i = random() % held.size();
      f.placer.Release(held[i]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  CHECK(shortcut_fits > 0);
  CHECK(shortcut_misses > 0);
}

}  // namespace
}  // namespace tessera
