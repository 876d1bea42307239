// SimCapacity: the sim plugin as a capacity provider (ABI 1.1), a cloud in virtual time.
//
// Each configured group (SimulatedCluster.capacity) is one node group of on_node_groups.
// Provision accepts a request at once and, provision_delay_ms later on the host clock, either
// adds its nodes (<prefix>-<n>, n counting up over the group's life) and ends the request with
// PROVISION_COMPLETED, or ends it with PROVISION_FAILED: when the group fails every request
// (provisions_fail, a cloud out of capacity) or the request would take the group past its
// max_nodes. A request_id seen before is accepted again and does nothing (the ABI's
// idempotency). A spot node with interrupt_after_ms gets a SPOT_INTERRUPTION notice that long
// after it joined and is taken back interruption_notice_ms later, its tasks vanishing with it,
// as EC2 does. Deprovision takes the provider's own nodes back at once.
//
// Nothing happens by itself: TakeDue hands the plugin what fell due by the host's now (nodes to
// add and remove, events to report), in time order, and NextDueUs says when the next thing is
// due. Not thread-safe: the plugin's mutex guards it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tessera/plugin/plugin.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::sim {

// One configured group, checked and expanded (sim_cluster.h's ParseSimConfig).
struct CapacityGroup {
  v1::NodeGroup group;           // as on_node_groups reports it; max_nodes = nodes.count.
  v1::SimulatedNodeGroup nodes;  // the shape its nodes are made from.
  int64_t provision_delay_ms = 0;
  bool provisions_fail = false;
  int64_t interrupt_after_ms = 0;      // 0 = never.
  int64_t interruption_notice_ms = 0;  // > 0.
};

class SimCapacity {
 public:
  SimCapacity() = default;
  explicit SimCapacity(std::vector<CapacityGroup> groups);

  bool empty() const { return groups_.empty(); }
  v1::NodeGroups Groups() const;

  // Errors: INVALID_ARGUMENT naming the field (an unknown node_group, count <= 0, no
  // request_id).
  plugin::PluginStatus Provision(const v1::ProvisionRequest& request, int64_t now_us);
  // The nodes leave at `now_us` (the next TakeDue). Errors: INVALID_ARGUMENT for a node this
  // provider did not add (or has taken back already).
  plugin::PluginStatus Deprovision(const v1::DeprovisionRequest& request, int64_t now_us);

  // What falls due at one instant.
  struct Due {
    int64_t at_us = 0;
    std::vector<v1::NodeSpec> join;
    std::vector<std::string> leave;
    std::vector<v1::BackendEvent> events;  // reported after the inventory change.
  };
  // Everything due by `now_us`, earliest first.
  std::vector<Due> TakeDue(int64_t now_us);
  // When the next thing falls due; 0 = nothing is scheduled.
  int64_t NextDueUs() const;

 private:
  enum class What { kEndRequest, kNotice, kReclaim };
  struct Item {
    What what;
    std::string request_id;  // kEndRequest.
    std::string node;        // kNotice, kReclaim.
  };
  struct Request {
    size_t group = 0;
    int32_t count = 0;
    std::string failure;  // set at acceptance when it is bound to fail.
  };

  Due Take(int64_t at_us, const Item& item);

  std::vector<CapacityGroup> groups_;
  std::map<std::string, size_t> group_index_;  // name -> position in groups_.
  std::vector<int> next_index_;                // per group: the next node's number.
  std::vector<int> live_or_pending_;           // per group: nodes there or on their way.
  std::map<std::string, Request> requests_;    // every request_id seen, for idempotency.
  std::map<std::string, size_t> nodes_;        // the provider's nodes now -> their group.
  std::multimap<int64_t, Item> timeline_;      // what is scheduled, by host time.
};

}  // namespace tessera::sim
