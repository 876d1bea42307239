#include "launch_fallback.h"

#include "aws/sigv4.h"

namespace tessera::aws_ec2 {

std::string CandidateClientToken(const std::string& request_id, size_t index) {
  std::string token = request_id + "/" + std::to_string(index);
  if (token.size() <= 64) return token;
  return "tessera-" + aws::HexSha256(token).substr(0, 48);
}

LaunchOutcome LaunchWithFallback(const CatalogGroup& group, const std::string& cluster,
                                 const std::string& request_id, int count,
                                 const RunInstancesFn& run_instances) {
  LaunchOutcome outcome;
  const NodeGroupConfig& config = group.config;
  size_t index = 0;
  for (const InstanceTypeChoice& type : config.instance_types) {
    for (const ZoneChoice& zone : config.zones) {
      const int missing = count - static_cast<int>(outcome.instances.size());
      if (missing <= 0) return outcome;
      aws::RunInstancesRequest request;
      request.image_id = config.image_id;
      request.launch_template = config.launch_template;
      request.instance_type = type.type;
      request.min_count = 1;
      request.max_count = missing;
      request.client_token = CandidateClientToken(request_id, index++);
      request.availability_zone = zone.zone;
      request.subnet_id = zone.subnet_id;
      request.user_data_base64 = config.user_data_base64;
      if (config.market == v1::SPOT) {
        aws::SpotMarketOptions spot;
        spot.max_price = config.max_spot_price;
        request.spot = spot;
      }
      request.tags = {{kClusterTag, cluster},
                      {kNodeGroupTag, config.name},
                      {kRequestIdTag, request_id},
                      {"Name", cluster + "/" + config.name}};
      auto launched = run_instances(request);
      if (launched.ok()) {
        for (aws::Ec2Instance& instance : launched.value().instances) {
          if (instance.availability_zone.empty()) instance.availability_zone = zone.zone;
          outcome.instances.push_back(std::move(instance));
        }
        continue;
      }
      outcome.errors.push_back(type.type + " in " + zone.zone + ": " + launched.error().ToString());
      if (!launched.error().IsCapacityError()) {
        outcome.stopped_by_error = true;
        return outcome;
      }
    }
  }
  return outcome;
}

}  // namespace tessera::aws_ec2
