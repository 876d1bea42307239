// The aws-ec2 capacity provider's configuration: a JSON document, the `config` of its entry in
// the daemon's `backends` list (plugins/aws-ec2/README.md has every field, its default and its
// error). In short:
//
//   {"cluster": "prod-east", "region": "us-east-1",
//    "join": {"kubeconfig": "/etc/tessera/kubeconfig", "timeout_s": 900},
//    "node_groups": [
//      {"name": "a10g-spot", "market": "spot", "max_spot_price": "4.00", "max_nodes": 8,
//       "instance_types": [{"type": "g5.12xlarge", "on_demand_price_per_hour": 5.672},
//                          {"type": "g5.24xlarge", "on_demand_price_per_hour": 8.144}],
//       "zones": [{"zone": "us-east-1a", "subnet": "subnet-0a"}, {"zone": "us-east-1b"}],
//       "launch_template": {"name": "tessera-gpu-node", "version": "$Latest"}}]}
//
// Parse checks types, ranges and cross-field rules; every error is INVALID_ARGUMENT naming the
// field by its path ("node_groups[0].instance_types[1].type: ..."). What only EC2 can say (does
// the type exist, what GPUs it has) is checked at Init against DescribeInstanceTypes
// (node_group_catalog.h). A parsed config is a plain value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "aws/ec2_types.h"
#include "tessera/plugin/plugin.h"
#include "tessera/v1/node.pb.h"

namespace tessera::aws_ec2 {

// One instance type a group may launch, in the group's order of preference. The shape fields
// are optional: left out (0 / empty), they come from DescribeInstanceTypes; given, they must
// agree with it.
struct InstanceTypeChoice {
  std::string type;  // "g5.12xlarge"
  // USD per hour for on-demand; required in an on-demand group (EC2 has no price API in its
  // Query endpoint; the Price List API is a separate service).
  double on_demand_price_per_hour = -1;
  int gpus = 0;
  std::string gpu_model;  // the scheduler's model name ("A10G", "A100-40GB")
  int64_t gpu_memory_mib = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
};

struct ZoneChoice {
  std::string zone;       // "us-east-1a"
  std::string subnet_id;  // optional: the subnet in that zone (a VPC launch needs one)
};

struct NodeGroupConfig {
  std::string name;
  v1::CapacityMarket market = v1::CAPACITY_MARKET_UNSPECIFIED;
  std::vector<InstanceTypeChoice> instance_types;
  std::vector<ZoneChoice> zones;
  std::string image_id;
  std::optional<aws::LaunchTemplateRef> launch_template;
  std::string max_spot_price;  // spot only; empty: up to the on-demand price (EC2's default)
  int min_nodes = 0;
  int max_nodes = 0;
  std::map<std::string, std::string> labels;  // added to the group's shape
  std::string user_data_base64;               // from user_data_file
};

struct CredentialsConfig {
  // The shared credentials file's profile; empty: $AWS_PROFILE, else "default".
  std::string profile;
  // Empty: $AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials.
  std::string shared_credentials_file;
  // The instance metadata service; empty: http://169.254.169.254. "off" skips it.
  std::string imds_endpoint;
};

struct JoinConfig {
  // The Kubernetes cluster the instances join (their kubelet registers a Node labelled
  // tessera.io/ec2-instance-id). Empty kubeconfig with in_cluster false: $KUBECONFIG or
  // ~/.kube/config.
  std::string kubeconfig;
  std::string context;
  bool in_cluster = false;
  // An instance whose Node is not Ready this long after launch is terminated.
  int64_t timeout_s = 900;
};

struct Ec2ProviderConfig {
  std::string cluster;  // the tessera:cluster tag on every instance; required
  std::string region = "us-east-1";
  std::string endpoint;  // empty: https://ec2.<region>.amazonaws.com
  std::string ca_file;   // HTTPS: trusted CAs in place of the system store
  CredentialsConfig credentials;
  JoinConfig join;
  int64_t poll_interval_ms = 5000;  // how often instances, Nodes and prices are looked at
  int max_attempts = 5;             // per EC2 call, for throttling and 5xx (Ec2Client)
  int64_t initial_backoff_ms = 200;
  int64_t max_backoff_ms = 20000;
  std::vector<NodeGroupConfig> node_groups;
};

plugin::PluginStatus ParseEc2ProviderConfig(const std::string& text, Ec2ProviderConfig* out);

}  // namespace tessera::aws_ec2
