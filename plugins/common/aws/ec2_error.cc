#include "aws/ec2_error.h"

namespace tessera::aws {

bool Ec2Error::Retryable() const {
  return IsThrottling() || code == "ServiceUnavailable" || code == "Unavailable" ||
         code == "InternalError" || code == "InsufficientInstanceCapacity" ||
         code == "TransportError";
}

bool Ec2Error::IsCapacityError() const {
  return code == "InsufficientInstanceCapacity" || code == "InsufficientCapacity" ||
         code == "MaxSpotInstanceCountExceeded" || code == "SpotMaxPriceTooLow" ||
         code == "UnfulfillableCapacity";
}

std::string Ec2Error::ToString() const {
  return code + " (HTTP " + std::to_string(http_status) + "): " + message;
}

}  // namespace tessera::aws
