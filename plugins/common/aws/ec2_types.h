// The EC2 objects and requests the client speaks, as plain structs named after the EC2 Query API
// fields they carry (API version 2016-11-15). Only the fields a capacity provider needs are here;
// EC2 replies with many more, which the parser skips.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tessera::aws {

struct Tag {
  std::string key;
  std::string value;
};

// instanceState: code 0 pending, 16 running, 32 shutting-down, 48 terminated, 64 stopping,
// 80 stopped (only the low byte is meaningful; EC2 documents the high byte as internal).
struct InstanceState {
  int code = -1;
  std::string name;
};

struct Ec2Instance {
  std::string instance_id;
  std::string image_id;
  std::string instance_type;
  std::string availability_zone;
  InstanceState state;
  // "spot" for spot instances; empty for on-demand (EC2 omits the field).
  std::string lifecycle;
  std::string private_ip_address;
  std::string launch_time;
  std::string client_token;
  std::vector<Tag> tags;
};

// InstanceMarketOptions.MarketType=spot with its SpotOptions.
struct SpotMarketOptions {
  // Empty: pay up to the on-demand price (EC2's default).
  std::string max_price;
  std::string spot_instance_type = "one-time";      // or "persistent"
  std::string interruption_behavior = "terminate";  // or "stop", "hibernate"
};

// LaunchTemplate.*: the template's image, network, user data and the rest; the request's own
// fields (type, zone, subnet, market) override the template's.
struct LaunchTemplateRef {
  std::string id;       // lt-…; or
  std::string name;     // the template's name
  std::string version;  // a number, "$Latest" or "$Default"; empty: the default version
};

struct RunInstancesRequest {
  std::string image_id;  // may be empty with a launch template that names one
  std::optional<LaunchTemplateRef> launch_template;
  std::string instance_type;
  int min_count = 1;
  int max_count = 1;
  // Idempotency: the same token with the same parameters returns the first call's instances
  // instead of launching again (up to 64 ASCII characters).
  std::string client_token;
  std::string subnet_id;
  std::string availability_zone;  // Placement.AvailabilityZone; empty lets EC2 choose
  std::string user_data_base64;
  std::optional<SpotMarketOptions> spot;  // absent: on-demand
  std::vector<Tag> tags;                  // TagSpecification.1, ResourceType=instance
};

struct RunInstancesResult {
  std::string reservation_id;
  std::vector<Ec2Instance> instances;
};

struct Ec2Filter {
  std::string name;  // e.g. "tag:tessera-pool", "instance-state-name"
  std::vector<std::string> values;
};

struct DescribeInstancesRequest {
  std::vector<std::string> instance_ids;
  std::vector<Ec2Filter> filters;
  // 0: EC2's default. EC2 refuses MaxResults together with instance IDs.
  int max_results = 0;
  std::string next_token;
};

struct DescribeInstancesPage {
  std::vector<Ec2Instance> instances;
  std::string next_token;  // empty on the last page
};

struct InstanceStateChange {
  std::string instance_id;
  InstanceState previous_state;
  InstanceState current_state;
};

struct SpotPriceHistoryRequest {
  std::vector<std::string> instance_types;
  std::vector<std::string> product_descriptions;  // e.g. "Linux/UNIX"
  std::string availability_zone;
  std::string start_time;  // ISO 8601; empty: EC2's default
  std::string end_time;
  int max_results = 0;
  std::string next_token;
};

struct SpotPrice {
  std::string availability_zone;
  std::string instance_type;
  std::string product_description;
  std::string spot_price;  // USD per hour, as EC2 writes it ("1.234500")
  double spot_price_usd = 0;
  std::string timestamp;
};

struct SpotPriceHistoryPage {
  std::vector<SpotPrice> prices;
  std::string next_token;
};

// DescribeSpotInstanceRequests: the spot request behind each spot instance. RunInstances with
// InstanceMarketOptions makes one too. Its status code is where EC2 shows, to the account, the
// two-minute interruption notice the instance itself reads from IMDS: "marked-for-termination",
// "marked-for-stop" or "marked-for-hibernation", with updateTime the time of the notice.
struct DescribeSpotInstanceRequestsRequest {
  std::vector<std::string> spot_instance_request_ids;  // SpotInstanceRequestId.N
  std::vector<Ec2Filter> filters;                      // e.g. "instance-id", "status-code"
  // 0: EC2's default (all); else 5..1000 per page.
  int max_results = 0;
  std::string next_token;
};

struct SpotInstanceRequest {
  std::string spot_instance_request_id;  // sir-…
  std::string instance_id;               // empty until fulfilled
  std::string state;                     // open, active, closed, cancelled, failed, disabled
  std::string status_code;               // "fulfilled", "marked-for-termination", …
  std::string status_message;
  std::string status_update_time;  // as EC2 writes it, e.g. "2026-12-07T23:10:00.000Z"
  // status_update_time as microseconds since the Unix epoch (UTC); 0 when absent or unreadable.
  long long status_update_unix_us = 0;
  std::string instance_interruption_behavior;  // terminate, stop, hibernate
};

struct SpotInstanceRequestsPage {
  std::vector<SpotInstanceRequest> requests;
  std::string next_token;  // empty on the last page
};

// DescribeInstanceTypes: what an instance type offers, of what a scheduler places on.
struct InstanceGpu {
  std::string name;          // "A10G", "A100", "H100"
  std::string manufacturer;  // "NVIDIA"
  int count = 0;
  long long memory_mib = 0;  // per GPU
};

struct InstanceTypeInfo {
  std::string instance_type;
  int default_vcpus = 0;
  long long memory_mib = 0;
  std::vector<InstanceGpu> gpus;                     // empty: no GPU
  std::vector<std::string> supported_usage_classes;  // "on-demand", "spot"
};

struct InstanceTypesPage {
  std::vector<InstanceTypeInfo> instance_types;
  std::string next_token;
};

}  // namespace tessera::aws
