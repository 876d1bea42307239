// Ec2Error and Ec2Outcome<T>: how an EC2 call fails. An AWS error reply
// (<Response><Errors><Error><Code>…</Code><Message>…</Message></Error></Errors>
// <RequestID>…</RequestID></Response>) becomes an Ec2Error with AWS's code string, its message,
// the HTTP status and the request ID; a failure before any reply (connection refused, TLS,
// timeout) has code "TransportError" and status 0, and a reply we cannot read has code
// "MalformedReply". Retryable() says whether the same call may simply be sent again after a
// back-off; capacity errors are retryable only elsewhere (another type or zone), so callers
// that fall back check IsCapacityError() first. Plain values, no shared state.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace tessera::aws {

struct Ec2Error {
  std::string code;
  std::string message;
  int http_status = 0;
  std::string request_id;

  // Throttling (RequestLimitExceeded, Throttling), EC2 being briefly unavailable
  // (ServiceUnavailable, Unavailable, InternalError), InsufficientInstanceCapacity (AWS: capacity
  // may come back, or try another zone or type), and transport failures.
  bool Retryable() const;
  // The launch cannot be met where it was asked for: InsufficientInstanceCapacity,
  // InsufficientCapacity, MaxSpotInstanceCountExceeded, SpotMaxPriceTooLow, UnfulfillableCapacity.
  bool IsCapacityError() const;
  bool IsThrottling() const { return code == "RequestLimitExceeded" || code == "Throttling"; }
  // "Code (HTTP n): message".
  std::string ToString() const;
};

// A value or the error that prevented it.
template <typename T>
class Ec2Outcome {
 public:
  Ec2Outcome(T value) : value_(std::move(value)) {}         // NOLINT: implicit, as StatusOr
  Ec2Outcome(Ec2Error error) : error_(std::move(error)) {}  // NOLINT
  bool ok() const { return value_.has_value(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  const Ec2Error& error() const { return error_; }

 private:
  std::optional<T> value_;
  Ec2Error error_;
};

}  // namespace tessera::aws
