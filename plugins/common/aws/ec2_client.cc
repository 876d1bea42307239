#include "aws/ec2_client.h"

#include <algorithm>
#include <random>
#include <thread>

#include "aws/ec2_xml.h"

namespace tessera::aws {
namespace {

std::string RandomClientToken() {
  static constexpr char kAlphabet[] = "0123456789abcdef";
  std::random_device device;
  std::string token = "tessera-";
  for (int i = 0; i < 32; ++i) token.push_back(kAlphabet[device() % 16]);
  return token;
}

void AddList(QueryParams& params, const std::string& prefix,
             const std::vector<std::string>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    params.emplace_back(prefix + "." + std::to_string(i + 1), values[i]);
  }
}

void AddFilters(QueryParams& params, const std::vector<Ec2Filter>& filters) {
  for (std::size_t i = 0; i < filters.size(); ++i) {
    const std::string prefix = "Filter." + std::to_string(i + 1);
    params.emplace_back(prefix + ".Name", filters[i].name);
    AddList(params, prefix + ".Value", filters[i].values);
  }
}

}  // namespace

Ec2ClientOptions Ec2ClientOptions::ForRegion(std::string region, Credentials credentials) {
  Ec2ClientOptions options;
  options.endpoint.scheme = "https";
  options.endpoint.host = "ec2." + region + ".amazonaws.com";
  options.endpoint.port = "443";
  options.region = std::move(region);
  options.credentials = std::move(credentials);
  return options;
}

QueryParams RunInstancesParams(const RunInstancesRequest& request) {
  QueryParams params = {{"InstanceType", request.instance_type},
                        {"MinCount", std::to_string(request.min_count)},
                        {"MaxCount", std::to_string(request.max_count)}};
  if (!request.image_id.empty()) params.emplace_back("ImageId", request.image_id);
  if (request.launch_template) {
    const LaunchTemplateRef& t = *request.launch_template;
    if (!t.id.empty()) params.emplace_back("LaunchTemplate.LaunchTemplateId", t.id);
    if (!t.name.empty()) params.emplace_back("LaunchTemplate.LaunchTemplateName", t.name);
    if (!t.version.empty()) params.emplace_back("LaunchTemplate.Version", t.version);
  }
  if (!request.client_token.empty()) params.emplace_back("ClientToken", request.client_token);
  if (!request.subnet_id.empty()) params.emplace_back("SubnetId", request.subnet_id);
  if (!request.availability_zone.empty()) {
    params.emplace_back("Placement.AvailabilityZone", request.availability_zone);
  }
  if (!request.user_data_base64.empty()) params.emplace_back("UserData", request.user_data_base64);
  if (request.spot) {
    params.emplace_back("InstanceMarketOptions.MarketType", "spot");
    const std::string spot = "InstanceMarketOptions.SpotOptions.";
    params.emplace_back(spot + "SpotInstanceType", request.spot->spot_instance_type);
    params.emplace_back(spot + "InstanceInterruptionBehavior", request.spot->interruption_behavior);
    if (!request.spot->max_price.empty())
      params.emplace_back(spot + "MaxPrice", request.spot->max_price);
  }
  if (!request.tags.empty()) {
    // Singular "TagSpecification" in the Query form (the SDKs' "TagSpecifications").
    params.emplace_back("TagSpecification.1.ResourceType", "instance");
    for (std::size_t i = 0; i < request.tags.size(); ++i) {
      const std::string prefix = "TagSpecification.1.Tag." + std::to_string(i + 1);
      params.emplace_back(prefix + ".Key", request.tags[i].key);
      params.emplace_back(prefix + ".Value", request.tags[i].value);
    }
  }
  return params;
}

QueryParams DescribeInstancesParams(const DescribeInstancesRequest& request) {
  QueryParams params;
  AddList(params, "InstanceId", request.instance_ids);
  AddFilters(params, request.filters);
  if (request.max_results > 0)
    params.emplace_back("MaxResults", std::to_string(request.max_results));
  if (!request.next_token.empty()) params.emplace_back("NextToken", request.next_token);
  return params;
}

QueryParams TerminateInstancesParams(const std::vector<std::string>& instance_ids) {
  QueryParams params;
  AddList(params, "InstanceId", instance_ids);
  return params;
}

QueryParams SpotPriceHistoryParams(const SpotPriceHistoryRequest& request) {
  QueryParams params;
  AddList(params, "InstanceType", request.instance_types);
  AddList(params, "ProductDescription", request.product_descriptions);
  if (!request.availability_zone.empty()) {
    params.emplace_back("AvailabilityZone", request.availability_zone);
  }
  if (!request.start_time.empty()) params.emplace_back("StartTime", request.start_time);
  if (!request.end_time.empty()) params.emplace_back("EndTime", request.end_time);
  if (request.max_results > 0)
    params.emplace_back("MaxResults", std::to_string(request.max_results));
  if (!request.next_token.empty()) params.emplace_back("NextToken", request.next_token);
  return params;
}

QueryParams SpotInstanceRequestsParams(const DescribeSpotInstanceRequestsRequest& request) {
  QueryParams params;
  AddList(params, "SpotInstanceRequestId", request.spot_instance_request_ids);
  AddFilters(params, request.filters);
  if (request.max_results > 0)
    params.emplace_back("MaxResults", std::to_string(request.max_results));
  if (!request.next_token.empty()) params.emplace_back("NextToken", request.next_token);
  return params;
}

QueryParams InstanceTypesParams(const std::vector<std::string>& instance_types,
                                const std::string& next_token) {
  QueryParams params;
  AddList(params, "InstanceType", instance_types);
  if (!next_token.empty()) params.emplace_back("NextToken", next_token);
  return params;
}

Ec2Client::Ec2Client(Ec2ClientOptions options, std::shared_ptr<HttpTransport> transport)
    : options_(std::move(options)), transport_(std::move(transport)) {
  if (!transport_) transport_ = std::make_shared<BeastHttpTransport>();
  if (!options_.sleep) {
    options_.sleep = [](std::chrono::milliseconds pause) { std::this_thread::sleep_for(pause); };
  }
  options_.max_attempts = std::max(1, options_.max_attempts);
}

std::chrono::milliseconds Ec2Client::Backoff(int retry) {
  long long ceiling = options_.initial_backoff.count();
  for (int i = 1; i < retry && ceiling < options_.max_backoff.count(); ++i) ceiling *= 2;
  ceiling = std::min<long long>(ceiling, options_.max_backoff.count());
  thread_local std::minstd_rand random(std::random_device{}());
  std::uniform_int_distribution<long long> pick(ceiling / 2, std::max(ceiling / 2, ceiling));
  return std::chrono::milliseconds(pick(random));
}

Ec2Outcome<HttpResponse> Ec2Client::Call(const std::string& action, QueryParams params) {
  params.emplace_back("Action", action);
  params.emplace_back("Version", kEc2ApiVersion);
  const std::string body = CanonicalQueryString(params);
  for (int attempt = 1;; ++attempt) {
    RequestToSign to_sign;
    to_sign.method = "POST";
    to_sign.path = "/";
    to_sign.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
    to_sign.body = body;
    const Credentials credentials =
        options_.credentials_source ? options_.credentials_source() : options_.credentials;
    SignRequest(to_sign, options_.endpoint.HostHeader(), credentials, options_.region, "ec2",
                options_.now());
    HttpRequest request;
    request.method = "POST";
    request.target = "/";
    request.headers = std::move(to_sign.headers);
    request.body = body;

    Ec2Outcome<HttpResponse> reply = transport_->Send(options_.endpoint, request);
    std::optional<Ec2Error> error;
    if (!reply.ok()) {
      error = reply.error();
    } else if (reply.value().status < 200 || reply.value().status > 299) {
      error = ParseErrorReply(reply.value().status, reply.value().body);
    }
    const bool retry =
        error && error->Retryable() && !error->IsCapacityError() && attempt < options_.max_attempts;
    if (!retry) return reply;
    retries_.fetch_add(1);
    options_.sleep(Backoff(attempt));
  }
}

Ec2Outcome<RunInstancesResult> Ec2Client::RunInstances(const RunInstancesRequest& request) {
  RunInstancesRequest with_token = request;
  if (with_token.client_token.empty()) with_token.client_token = RandomClientToken();
  auto reply = Call("RunInstances", RunInstancesParams(with_token));
  if (!reply.ok()) return reply.error();
  return ParseRunInstancesReply(reply.value().status, reply.value().body);
}

Ec2Outcome<DescribeInstancesPage> Ec2Client::DescribeInstances(
    const DescribeInstancesRequest& request) {
  auto reply = Call("DescribeInstances", DescribeInstancesParams(request));
  if (!reply.ok()) return reply.error();
  return ParseDescribeInstancesReply(reply.value().status, reply.value().body);
}

Ec2Outcome<std::vector<Ec2Instance>> Ec2Client::DescribeAllInstances(
    DescribeInstancesRequest request) {
  std::vector<Ec2Instance> instances;
  for (int page_number = 0; page_number < 1000; ++page_number) {
    auto page = DescribeInstances(request);
    if (!page.ok()) return page.error();
    for (auto& instance : page.value().instances) instances.push_back(std::move(instance));
    if (page.value().next_token.empty()) return instances;
    request.next_token = page.value().next_token;
  }
  Ec2Error error;
  error.code = "MalformedReply";
  error.message = "DescribeInstances still had a NextToken after 1000 pages";
  return error;
}

Ec2Outcome<std::vector<InstanceStateChange>> Ec2Client::TerminateInstances(
    const std::vector<std::string>& instance_ids) {
  auto reply = Call("TerminateInstances", TerminateInstancesParams(instance_ids));
  if (!reply.ok()) return reply.error();
  return ParseTerminateInstancesReply(reply.value().status, reply.value().body);
}

Ec2Outcome<SpotPriceHistoryPage> Ec2Client::DescribeSpotPriceHistory(
    const SpotPriceHistoryRequest& request) {
  auto reply = Call("DescribeSpotPriceHistory", SpotPriceHistoryParams(request));
  if (!reply.ok()) return reply.error();
  return ParseSpotPriceHistoryReply(reply.value().status, reply.value().body);
}

Ec2Outcome<SpotInstanceRequestsPage> Ec2Client::DescribeSpotInstanceRequests(
    const DescribeSpotInstanceRequestsRequest& request) {
  auto reply = Call("DescribeSpotInstanceRequests", SpotInstanceRequestsParams(request));
  if (!reply.ok()) return reply.error();
  return ParseSpotInstanceRequestsReply(reply.value().status, reply.value().body);
}

Ec2Outcome<std::vector<SpotInstanceRequest>> Ec2Client::DescribeAllSpotInstanceRequests(
    DescribeSpotInstanceRequestsRequest request) {
  std::vector<SpotInstanceRequest> requests;
  for (int page_number = 0; page_number < 1000; ++page_number) {
    auto page = DescribeSpotInstanceRequests(request);
    if (!page.ok()) return page.error();
    for (auto& item : page.value().requests) requests.push_back(std::move(item));
    if (page.value().next_token.empty()) return requests;
    request.next_token = page.value().next_token;
  }
  Ec2Error error;
  error.code = "MalformedReply";
  error.message = "DescribeSpotInstanceRequests still had a NextToken after 1000 pages";
  return error;
}

Ec2Outcome<std::vector<InstanceTypeInfo>> Ec2Client::DescribeInstanceTypes(
    const std::vector<std::string>& instance_types) {
  std::vector<InstanceTypeInfo> all;
  std::string next_token;
  for (int page_number = 0; page_number < 100; ++page_number) {
    auto reply = Call("DescribeInstanceTypes", InstanceTypesParams(instance_types, next_token));
    if (!reply.ok()) return reply.error();
    auto page = ParseInstanceTypesReply(reply.value().status, reply.value().body);
    if (!page.ok()) return page.error();
    for (auto& info : page.value().instance_types) all.push_back(std::move(info));
    if (page.value().next_token.empty()) return all;
    next_token = page.value().next_token;
  }
  Ec2Error error;
  error.code = "MalformedReply";
  error.message = "DescribeInstanceTypes still had a NextToken after 100 pages";
  return error;
}

}  // namespace tessera::aws
