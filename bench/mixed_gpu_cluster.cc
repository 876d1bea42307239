#include "mixed_gpu_cluster.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

namespace tessera::bench {
namespace {

constexpr int kNodesPerRack = 32;

struct GpuModelShare {
  const char* model;
  const char* prefix;
  int64_t memory_mib;
  int gpus_per_nvlink_domain;  // 8: one NVSwitch domain; 4: two islands of four.
  double share;
};

constexpr GpuModelShare kModels[] = {
    {"A100-80GB", "a100", 81920, 8, 0.5},
    {"H100-80GB", "h100", 81920, 8, 0.3},
    {"L40S", "l40s", 49152, 4, 0.2},
};

}  // namespace

v1::SimulatedCluster MixedGpuCluster(int nodes) {
  v1::SimulatedCluster cluster;
  const int racks = (nodes + kNodesPerRack - 1) / kNodesPerRack;
  for (int rack = 0; rack < racks; ++rack) {
    const int rack_nodes = std::min(kNodesPerRack, nodes - rack * kNodesPerRack);
    int remaining = rack_nodes;
    for (size_t m = 0; m < std::size(kModels); ++m) {
      const GpuModelShare& model = kModels[m];
      const int count =
          m + 1 == std::size(kModels)
              ? remaining
              : std::min<int>(remaining, static_cast<int>(std::lround(rack_nodes * model.share)));
      remaining -= count;
      if (count == 0) continue;
      v1::SimulatedNodeGroup* group = cluster.add_groups();
      group->set_name_prefix("r" + std::to_string(rack) + "-" + model.prefix);
      group->set_count(count);
      group->set_cpu_milli(128000);
      group->set_memory_mib(1024 * 1024);
      group->set_gpus(kMixedClusterGpusPerNode);
      group->set_gpu_model(model.model);
      group->set_gpu_memory_mib(model.memory_mib);
      group->set_gpus_per_nvlink_domain(model.gpus_per_nvlink_domain);
      (*group->mutable_labels())["rack"] = "rack-" + std::to_string(rack);
    }
  }
  return cluster;
}

}  // namespace tessera::bench
