// CapacityProviders: the autoscaler's narrow view of the backends that can add nodes.
//
// A capacity provider (a plugin with on_provision: the sim plugin's capacity groups, the EC2
// plugin) offers node groups, each a shape, a price per node-hour, a market (spot or
// on-demand) and bounds. The autoscaler reads the groups, asks for nodes and gives them back
// through this interface only, so its tests use a fake and the scheduler adapts its plugin
// backends to it (api/scheduler_burst.cc). How a request ends comes back to the autoscaler
// separately (Autoscaler::ProvisionEnded), as does each node that joins.
//
// Thread safety: called on the decision strand only.
#pragma once

#include <string>
#include <vector>

#include "tessera/v1/node.pb.h"

namespace tessera {

// One node group of one provider.
struct BurstGroup {
  std::string backend;  // the provider's backend name (BackendOptions::name).
  v1::NodeGroup group;  // group.shape.name() is the prefix of its nodes' names.
};

class CapacityProviders {
 public:
  virtual ~CapacityProviders() = default;
  // Every group of every provider, in a fixed order.
  virtual std::vector<BurstGroup> Groups() const = 0;
  // Asks `backend` for `count` nodes of `group`; the request ends later, by
  // Autoscaler::ProvisionEnded with `request_id`.
  virtual void Provision(const std::string& backend, const std::string& group, int count,
                         const std::string& request_id) = 0;
  // Gives `nodes` back to `backend`; they leave the inventory when the provider says so.
  virtual void Deprovision(const std::string& backend, const std::vector<std::string>& nodes) = 0;
};

}  // namespace tessera
