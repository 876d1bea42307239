// Helpers to build small clusters for placement tests.
#pragma once

#include <memory>
#include <string>

#include "model/cluster.h"
#include "placement/node_index.h"
#include "placement/placer.h"

namespace tessera::testing {

inline v1::NodeSpec GpuNode(const std::string& name, int gpus, const std::string& model,
                            int gpus_per_domain = 0, int64_t gpu_memory_mib = 81920) {
  v1::NodeSpec spec;
  spec.set_name(name);
  spec.set_cpu_milli(64000);
  spec.set_memory_mib(512 * 1024);
  for (int i = 0; i < gpus; ++i) {
    v1::GpuDevice* g = spec.add_gpus();
    g->set_index(i);
    g->set_model(model);
    g->set_memory_mib(gpu_memory_mib);
    g->set_nvlink_domain(gpus_per_domain > 0 ? i / gpus_per_domain : 0);
  }
  return spec;
}

inline TaskShape WholeGpus(int count, int64_t cpu = 1000) {
  TaskShape s;
  s.cpu_milli = cpu;
  s.memory_mib = 1024;
  s.gpu_count = count;
  s.gpu_milli = 1000;
  return s;
}

inline TaskShape GpuShare(int milli) {
  TaskShape s;
  s.cpu_milli = 1000;
  s.memory_mib = 1024;
  s.gpu_count = 1;
  s.gpu_milli = milli;
  return s;
}

// A cluster, its index and a placer with the given strategy.
struct PlacementFixture {
  explicit PlacementFixture(PlacementOptions options = PlacementOptions::Binpack())
      : placer(cluster, index, MakeScorer(options)) {}

  NodeIndexId Add(const v1::NodeSpec& spec) {
    auto id = cluster.AddNode(spec);
    REQUIRE_MESSAGE(id.ok(), id.status().ToString());
    placer.Refresh(*id);
    return *id;
  }

  Cluster cluster;
  NodeIndex index;
  Placer placer;
};

}  // namespace tessera::testing
