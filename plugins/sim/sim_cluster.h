// The sim backend's configuration: a tessera.v1.SimulatedCluster in protobuf JSON, expanded into
// the nodes the backend offers. The plugin cannot use the scheduler's own expansion
// (libscheduler's ExpandSimulatedCluster), so this is a second implementation of the same rules,
// kept to the checks a config author needs: the scheduler validates every inventory it receives
// again (MIG profile tables, vGPU types), so what this file does not know it still catches.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "sim_capacity.h"
#include "tessera/plugin/plugin.h"
#include "tessera/v1/node.pb.h"

namespace tessera::sim {

// The most GPUs one node may have (the scheduler's NodeState::kMaxGpus).
inline constexpr int kMaxGpusPerNode = 32;

// The cluster an empty config stands for: 2 nodes ("sim-0", "sim-1"), each with 64 cores,
// 512 GiB and 8 A100-80GB on one NVLink domain.
v1::SimulatedCluster DefaultCluster();

// A scripted inventory change (tessera.v1.SimulatedNodeChange), expanded.
struct NodeChange {
  int64_t at_ms = 0;  // after the plugin started, on the host clock.
  std::vector<v1::NodeSpec> join;
  std::vector<std::string> leave;
  std::vector<std::string> evict;      // their tasks are lost; the nodes stay.
  std::vector<std::string> interrupt;  // a spot notice now; they leave notice_ms later.
  int64_t notice_ms = 0;
};

// What a config describes: the nodes at start, and the changes in time order (stable: changes
// at the same time keep the config's order).
struct SimConfig {
  std::vector<v1::NodeSpec> nodes;
  std::vector<NodeChange> changes;
  std::set<std::string> rejecting_nodes;          // launches there are refused.
  bool rejections_final = false;                  // and not retryable.
  std::set<std::string> failing_partition_nodes;  // partition layouts fail there.
  std::vector<CapacityGroup> capacity;            // node groups it can provision from.
  bool report_telemetry = false;                  // on_telemetry reads every GPU.
};

// Parses `config` (protobuf JSON of tessera.v1.SimulatedCluster; empty or blank = DefaultCluster)
// and expands it. Errors: INVALID_ARGUMENT naming the field, e.g. "groups[0].count: must be > 0",
// "changes[1].at_ms: must be >= 0".
plugin::PluginStatus ParseSimConfig(const std::string& config, SimConfig* out);

// Node <prefix>-<index> of `group` (its GPUs "GPU-sim-<node>-<d>").
v1::NodeSpec ExpandNode(const v1::SimulatedNodeGroup& group, int index);

// Expands a cluster into its nodes (<prefix>-<n>, n from 0). Errors as ParseSimConfig.
plugin::PluginStatus ExpandCluster(const v1::SimulatedCluster& cluster,
                                   std::vector<v1::NodeSpec>* nodes);

}  // namespace tessera::sim
