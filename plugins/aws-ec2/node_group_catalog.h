// NodeGroupCatalog: the provider's node groups as the scheduler sees them (on_node_groups), made
// from the configuration and checked against what EC2 says of each instance type.
//
// Shapes: an instance type's vCPUs, memory and GPUs come from DescribeInstanceTypes (GpuInfo:
// count, name, memory per GPU); the GPU name becomes the scheduler's model name
// (model_names::FromDeviceName: "A100" with 40 GiB is "A100-40GB", "A10G" stays). A shape field
// the config gives must agree with EC2, else Init fails naming the field and both values. The
// types of one group must have the same GPU model and count (a job placed on the group's shape
// must fit whichever type EC2 launches); the group's CPU and memory are the least of its types.
//
// Prices per node-hour: an on-demand group's is the highest on_demand_price_per_hour of its
// types (what a node may cost, whichever type falls back); a spot group's is the highest latest
// DescribeSpotPriceHistory price (Linux/UNIX) of its types in its zones, capped by max_spot_price
// (EC2 never charges above it). Pure functions on values.
#pragma once

#include <string>
#include <vector>

#include "aws/ec2_types.h"
#include "ec2_provider_config.h"
#include "tessera/plugin/plugin.h"
#include "tessera/v1/node.pb.h"

namespace tessera::aws_ec2 {

inline constexpr char kNodeGroupLabel[] = "tessera.io/node-group";

struct CatalogGroup {
  NodeGroupConfig config;  // instance_types with every shape field filled in from EC2
  v1::NodeGroup group;     // as on_node_groups reports it
};

// Errors: INVALID_ARGUMENT naming node_groups[i].instance_types[j] for a type EC2 does not list,
// without GPUs, or whose configured shape differs from EC2's; or types of one group that differ.
plugin::PluginStatus BuildCatalog(const Ec2ProviderConfig& config,
                                  const std::vector<aws::InstanceTypeInfo>& ec2_types,
                                  std::vector<CatalogGroup>* out);

// Sets each spot group's price from `prices` (a DescribeSpotPriceHistory answer for its types).
// Errors: INVALID_ARGUMENT for a spot group with no price in any of its zones and no
// max_spot_price.
plugin::PluginStatus ApplySpotPrices(const std::vector<aws::SpotPrice>& prices,
                                     std::vector<CatalogGroup>* groups);

}  // namespace tessera::aws_ec2
