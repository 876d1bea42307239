// Ec2Client: the EC2 Query API calls a capacity provider makes (RunInstances,
// DescribeInstances, TerminateInstances, DescribeSpotPriceHistory, DescribeInstanceTypes,
// DescribeSpotInstanceRequests). Each
// call is a form-encoded POST to the regional endpoint (Action=…&Version=2016-11-15), signed with
// SigV4 for service "ec2", whose XML reply becomes the typed result or an Ec2Error (ec2_error.h).
//
// Retries: throttling (RequestLimitExceeded, Throttling), ServiceUnavailable/InternalError and
// transport failures are sent again, up to `max_attempts` in all, after an exponential back-off
// with jitter (AWS's advice for EC2's token-bucket limits); each attempt is signed afresh. Capacity
// errors (InsufficientInstanceCapacity and the others of Ec2Error::IsCapacityError) are
// returned at once: the caller decides between waiting, another zone and another type. A
// RunInstances retry after a transport failure is safe only with a ClientToken, which makes EC2
// return the first launch instead of launching twice; RunInstances sets one when the request
// has none.
//
// The endpoint and TLS choice are configuration: `Ec2ClientOptions::ForRegion` gives AWS's
// HTTPS endpoint; tests point `endpoint` at http://127.0.0.1:<port> (the fault proxy). The
// client holds no state between calls beyond counters; calls may run from several threads at
// once when the transport allows it (BeastHttpTransport does).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aws/ec2_error.h"
#include "aws/ec2_types.h"
#include "aws/http_transport.h"
#include "aws/sigv4.h"

namespace tessera::aws {

inline constexpr char kEc2ApiVersion[] = "2016-11-15";

struct Ec2ClientOptions {
  HttpEndpoint endpoint;
  std::string region = "us-east-1";
  Credentials credentials;
  // Set: asked for the credentials before each attempt is signed (temporary credentials that
  // a CredentialChain renews); `credentials` is then unused.
  std::function<Credentials()> credentials_source;
  // Attempts per call for retryable errors, the first included. 1 disables retries.
  int max_attempts = 5;
  // Back-off before retry n (n = 1, 2, …): a random time in [d/2, d], d = min(initial·2^(n-1),
  // max).
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{20000};
  // Injected for tests: the signing clock and the back-off sleep.
  std::function<std::chrono::system_clock::time_point()> now = [] {
    return std::chrono::system_clock::now();
  };
  std::function<void(std::chrono::milliseconds)> sleep;  // empty: std::this_thread::sleep_for

  // https://ec2.<region>.amazonaws.com with `credentials`.
  static Ec2ClientOptions ForRegion(std::string region, Credentials credentials);
};

// The Query API form parameters of each call (without Action and Version), exposed so tests can
// pin the wire names: TagSpecification.1.Tag.1.Key, InstanceMarketOptions.SpotOptions.MaxPrice, …
using QueryParams = std::vector<std::pair<std::string, std::string>>;
QueryParams RunInstancesParams(const RunInstancesRequest& request);
QueryParams DescribeInstancesParams(const DescribeInstancesRequest& request);
QueryParams TerminateInstancesParams(const std::vector<std::string>& instance_ids);
QueryParams SpotPriceHistoryParams(const SpotPriceHistoryRequest& request);
QueryParams SpotInstanceRequestsParams(const DescribeSpotInstanceRequestsRequest& request);
QueryParams InstanceTypesParams(const std::vector<std::string>& instance_types,
                                const std::string& next_token);

class Ec2Client {
 public:
  // `transport` null: a BeastHttpTransport with a 30 s deadline per attempt.
  explicit Ec2Client(Ec2ClientOptions options, std::shared_ptr<HttpTransport> transport = nullptr);

  // Launches between min_count and max_count instances. A request without a client_token gets
  // a random one, kept across this call's retries.
  Ec2Outcome<RunInstancesResult> RunInstances(const RunInstancesRequest& request);
  // One page.
  Ec2Outcome<DescribeInstancesPage> DescribeInstances(const DescribeInstancesRequest& request);
  // Every page, following NextToken (at most 1000 pages, against a server that never ends).
  Ec2Outcome<std::vector<Ec2Instance>> DescribeAllInstances(DescribeInstancesRequest request);
  Ec2Outcome<std::vector<InstanceStateChange>> TerminateInstances(
      const std::vector<std::string>& instance_ids);
  Ec2Outcome<SpotPriceHistoryPage> DescribeSpotPriceHistory(const SpotPriceHistoryRequest& request);
  // One page of spot requests (by id and/or filter, e.g. {"instance-id", {ids}}).
  Ec2Outcome<SpotInstanceRequestsPage> DescribeSpotInstanceRequests(
      const DescribeSpotInstanceRequestsRequest& request);
  // Every page, following NextToken (at most 1000 pages).
  Ec2Outcome<std::vector<SpotInstanceRequest>> DescribeAllSpotInstanceRequests(
      DescribeSpotInstanceRequestsRequest request);
  // The named types (every page). A name EC2 does not know fails the whole call
  // (InvalidInstanceType, naming it).
  Ec2Outcome<std::vector<InstanceTypeInfo>> DescribeInstanceTypes(
      const std::vector<std::string>& instance_types);

  // Attempts sent again after a retryable error, over the client's life.
  std::uint64_t retries() const { return retries_.load(); }

 private:
  // Signs and sends Action=`action` with `params`, retrying as the header says; the reply's
  // status and body on any HTTP reply that is not retried.
  Ec2Outcome<HttpResponse> Call(const std::string& action, QueryParams params);
  std::chrono::milliseconds Backoff(int retry);

  Ec2ClientOptions options_;
  std::shared_ptr<HttpTransport> transport_;
  std::atomic<std::uint64_t> retries_{0};
};

}  // namespace tessera::aws
