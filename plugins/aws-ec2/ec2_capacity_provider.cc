#include "ec2_capacity_provider.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "launch_fallback.h"

namespace tessera::aws_ec2 {

using plugin::PluginStatus;

namespace {

PluginStatus Invalid(std::string message) {
  return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, std::move(message));
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

Ec2CapacityProvider::Ec2CapacityProvider(plugin::Host host) : Plugin(host) {}

Ec2CapacityProvider::~Ec2CapacityProvider() { Shutdown(); }

PluginStatus Ec2CapacityProvider::Init(const std::string& text) {
  PluginStatus status = ParseEc2ProviderConfig(text, &config_);
  if (!status.ok()) return status;

  CredentialSources sources;
  sources.profile = config_.credentials.profile;
  sources.shared_credentials_file = config_.credentials.shared_credentials_file;
  const std::string imds = config_.credentials.imds_endpoint.empty()
                               ? "http://169.254.169.254"
                               : config_.credentials.imds_endpoint;
  std::string why;
  if (imds != "off" && !aws::HttpEndpoint::Parse(imds, &sources.imds, &why)) {
    return Invalid("credentials.imds_endpoint: " + why);
  }
  credentials_ = std::make_unique<CredentialChain>(std::move(sources));
  status = credentials_->Resolve();
  if (!status.ok()) return status;

  aws::Ec2ClientOptions options;
  if (config_.endpoint.empty()) {
    options = aws::Ec2ClientOptions::ForRegion(config_.region, {});
  } else if (!aws::HttpEndpoint::Parse(config_.endpoint, &options.endpoint, &why)) {
    return Invalid("endpoint: " + why);
  }
  options.region = config_.region;
  options.endpoint.ca_file = config_.ca_file;
  options.credentials_source = [chain = credentials_.get()] { return chain->Current(); };
  options.max_attempts = config_.max_attempts;
  options.initial_backoff = std::chrono::milliseconds(config_.initial_backoff_ms);
  options.max_backoff = std::chrono::milliseconds(config_.max_backoff_ms);
  options.sleep = [this](std::chrono::milliseconds pause) { Pause(pause); };
  ec2_ = std::make_unique<aws::Ec2Client>(std::move(options));

  // The first call: it checks the credentials as well as the instance types.
  std::vector<std::string> types;
  std::vector<std::string> spot_types;
  for (const NodeGroupConfig& group : config_.node_groups) {
    for (const InstanceTypeChoice& choice : group.instance_types) {
      types.push_back(choice.type);
      if (group.market == v1::SPOT) spot_types.push_back(choice.type);
    }
  }
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  auto described = ec2_->DescribeInstanceTypes(types);
  if (!described.ok()) {
    const aws::Ec2Error& error = described.error();
    if (error.code == "AuthFailure" || error.code == "UnauthorizedOperation" ||
        error.code == "InvalidClientTokenId" || error.code == "SignatureDoesNotMatch") {
      return PluginStatus::Error(
          TESSERA_PERMISSION_DENIED,
          "EC2 refused the credentials from " + credentials_->source() + ": " + error.ToString());
    }
    if (error.code == "InvalidInstanceType") {
      return Invalid("node_groups: " + error.ToString());
    }
    return PluginStatus::Error(TESSERA_UNAVAILABLE, "DescribeInstanceTypes: " + error.ToString());
  }
  status = BuildCatalog(config_, described.value(), &groups_);
  if (!status.ok()) return status;
  if (!spot_types.empty()) {
    aws::SpotPriceHistoryRequest history;
    history.instance_types = spot_types;
    history.product_descriptions = {"Linux/UNIX"};
    history.max_results = 1000;
    auto prices = ec2_->DescribeSpotPriceHistory(history);
    if (!prices.ok()) {
      return PluginStatus::Error(TESSERA_UNAVAILABLE,
                                 "DescribeSpotPriceHistory: " + prices.error().ToString());
    }
    status = ApplySpotPrices(prices.value().prices, &groups_);
    if (!status.ok()) return status;
  }

  status = KubernetesJoinWatch::Create(config_.join, &join_);
  if (!status.ok()) return status;

  // Adoption: what this cluster runs already (a restart), before any request is taken.
  auto existing = ec2_->DescribeAllInstances(ClusterInstances());
  if (!existing.ok()) {
    return PluginStatus::Error(TESSERA_UNAVAILABLE,
                               "DescribeInstances (adoption): " + existing.error().ToString());
  }
  std::vector<v1::BackendEvent> none;
  const std::vector<std::string> adopted = fleet_.Observe(existing.value(), host().NowUs(), &none);
  host().Log(TESSERA_LOG_INFO, "aws-ec2: credentials from " + credentials_->source() + "; " +
                                   std::to_string(groups_.size()) + " node group(s); adopted " +
                                   std::to_string(adopted.size()) + " instance(s) tagged " +
                                   kClusterTag + "=" + config_.cluster +
                                   (adopted.empty() ? "" : ": " + Join(adopted)));
  if (host().abi_minor() == 0) StartWorker();  // a 1.0 host never calls Start.
  return PluginStatus::Ok();
}

PluginStatus Ec2CapacityProvider::Start(const v1::StartRequest&) {
  StartWorker();
  return PluginStatus::Ok();
}

void Ec2CapacityProvider::StartWorker() {
  if (worker_.joinable()) return;
  worker_ = std::thread([this] { Work(); });
}

void Ec2CapacityProvider::Shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

PluginStatus Ec2CapacityProvider::NodeGroups(v1::NodeGroups* out) {
  for (const CatalogGroup& group : groups_) *out->add_groups() = group.group;
  return PluginStatus::Ok();
}

PluginStatus Ec2CapacityProvider::Provision(const v1::ProvisionRequest& request,
                                            v1::ProvisionResult*) {
  if (request.request_id().empty()) return Invalid("request_id: must not be empty");
  const CatalogGroup* group = nullptr;
  for (const CatalogGroup& g : groups_) {
    if (g.group.name() == request.node_group()) group = &g;
  }
  if (group == nullptr) return Invalid("node_group: no node group '" + request.node_group() + "'");
  if (request.count() <= 0) {
    return Invalid("count: must be > 0, got " + std::to_string(request.count()));
  }
  {
    std::lock_guard lock(mutex_);
    if (fleet_.Request(request.request_id()) != nullptr) return PluginStatus::Ok();
    const int live = fleet_.LiveInGroup(group->group.name());
    fleet_.Accept(request.request_id(), group->group.name(), request.count());
    if (!fleet_.Request(request.request_id())->launched &&
        live + request.count() > group->group.max_nodes()) {
      fleet_.Launched(request.request_id(), {},
                      {"node group '" + group->group.name() + "' is at its max_nodes " +
                       std::to_string(group->group.max_nodes()) + " (" + std::to_string(live) +
                       " there or on their way)"},
                      host().NowUs());
    }
    kicked_ = true;
  }
  wake_.notify_all();
  // Host callbacks are usable once on_init has returned; a host that provisions before on_start
  // (or never calls it) still gets its events.
  StartWorker();
  return PluginStatus::Ok();
}

PluginStatus Ec2CapacityProvider::Deprovision(const v1::DeprovisionRequest& request) {
  {
    std::lock_guard lock(mutex_);
    std::vector<std::string> unknown;
    const std::vector<std::string> nodes(request.nodes().begin(), request.nodes().end());
    const std::vector<std::string> ids = fleet_.Deprovision(nodes, &unknown);
    if (!unknown.empty()) {
      return Invalid("nodes: '" + unknown[0] + "' is not a node this provider added");
    }
    to_terminate_.insert(to_terminate_.end(), ids.begin(), ids.end());
    kicked_ = true;
  }
  wake_.notify_all();
  StartWorker();
  return PluginStatus::Ok();
}

bool Ec2CapacityProvider::Pause(std::chrono::milliseconds pause) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, pause, [this] { return stopping_ || kicked_; });
  kicked_ = false;
  return !stopping_;
}

aws::DescribeInstancesRequest Ec2CapacityProvider::ClusterInstances() const {
  aws::DescribeInstancesRequest request;
  request.filters = {{std::string("tag:") + kClusterTag, {config_.cluster}}};
  return request;
}

void Ec2CapacityProvider::Work() {
  do {
    Pass();
  } while (Pause(std::chrono::milliseconds(config_.poll_interval_ms)));
}

void Ec2CapacityProvider::Pass() {
  // Launches, one request after another.
  std::vector<std::string> unlaunched;
  {
    std::lock_guard lock(mutex_);
    unlaunched = fleet_.Unlaunched();
  }
  for (const std::string& request_id : unlaunched) {
    std::string group_name;
    int count = 0;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      const ProvisionState* state = fleet_.Request(request_id);
      group_name = state->group;
      count = state->count;
    }
    const CatalogGroup* group = nullptr;
    for (const CatalogGroup& g : groups_) {
      if (g.group.name() == group_name) group = &g;
    }
    LaunchOutcome outcome = LaunchWithFallback(
        *group, config_.cluster, request_id, count,
        [this](const aws::RunInstancesRequest& r) { return ec2_->RunInstances(r); });
    std::vector<std::string> ids;
    for (const aws::Ec2Instance& instance : outcome.instances) ids.push_back(instance.instance_id);
    host().Log(TESSERA_LOG_INFO,
               "aws-ec2: request " + request_id + " launched " + std::to_string(ids.size()) +
                   " of " + std::to_string(count) + " in group '" + group_name + "'" +
                   (ids.empty() ? "" : ": " + Join(ids)) +
                   (outcome.errors.empty() ? "" : "; refused: " + Join(outcome.errors)));
    std::lock_guard lock(mutex_);
    fleet_.Launched(request_id, outcome.instances, outcome.errors, host().NowUs());
  }

  std::vector<std::string> terminate;
  {
    std::lock_guard lock(mutex_);
    terminate.swap(to_terminate_);
  }
  if (!terminate.empty()) Terminate(terminate, "deprovisioned");

  auto instances = ec2_->DescribeAllInstances(ClusterInstances());
  std::map<std::string, JoinedNode> nodes;
  PluginStatus listed = join_->List(&nodes);
  if (!listed.ok()) host().Log(TESSERA_LOG_WARN, "aws-ec2: " + listed.message);
  if (!instances.ok()) {
    host().Log(TESSERA_LOG_WARN, "aws-ec2: DescribeInstances: " + instances.error().ToString());
  }
  std::vector<v1::BackendEvent> events;
  std::vector<std::string> timed_out;
  int64_t timeouts = 0;
  {
    std::lock_guard lock(mutex_);
    const int64_t now_us = host().NowUs();
    if (instances.ok()) {
      const std::vector<std::string> adopted = fleet_.Observe(instances.value(), now_us, &events);
      if (!adopted.empty()) {
        host().Log(TESSERA_LOG_INFO, "aws-ec2: adopted " + Join(adopted));
      }
    }
    if (listed.ok()) fleet_.Joined(nodes);
    timed_out = fleet_.TakeJoinTimeouts(now_us, config_.join.timeout_s * 1'000'000);
    timeouts = fleet_.join_timeouts();
    for (v1::BackendEvent& event : fleet_.TakeEnded(now_us)) events.push_back(std::move(event));
  }
  if (!timed_out.empty()) {
    Terminate(timed_out, "did not join within " + std::to_string(config_.join.timeout_s) +
                             " s (join timeouts so far: " + std::to_string(timeouts) + ")");
  }
  ReadSpotNotices(&events);
  Emit(events);
}

void Ec2CapacityProvider::ReadSpotNotices(std::vector<v1::BackendEvent>* events) {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mutex_);
    ids = fleet_.SpotInstancesAwaitingNotice();
  }
  if (ids.empty()) return;
  // EC2 limits how many values one filter may carry (the number is not documented for this
  // call), so a large fleet is read 100 instances at a time.
  constexpr std::size_t kIdsPerCall = 100;
  std::vector<aws::SpotInstanceRequest> requests;
  for (std::size_t first = 0; first < ids.size(); first += kIdsPerCall) {
    aws::DescribeSpotInstanceRequestsRequest query;
    query.filters = {{"instance-id", std::vector<std::string>(
                                         ids.begin() + first,
                                         ids.begin() + std::min(ids.size(), first + kIdsPerCall))}};
    auto part = ec2_->DescribeAllSpotInstanceRequests(query);
    if (!part.ok()) {
      const std::string error = part.error().ToString();
      if (error != spot_notice_error_) {
        host().Log(TESSERA_LOG_WARN, "aws-ec2: DescribeSpotInstanceRequests: " + error +
                                         "; spot interruption notices unread, tried again next "
                                         "pass (EC2 stopping or terminating an instance is still "
                                         "seen)");
        spot_notice_error_ = error;
      }
      return;
    }
    for (auto& request : part.value()) requests.push_back(std::move(request));
  }
  if (!spot_notice_error_.empty()) {
    host().Log(TESSERA_LOG_INFO, "aws-ec2: DescribeSpotInstanceRequests answers again");
    spot_notice_error_.clear();
  }
  const long long wall_now_unix_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count();
  std::lock_guard lock(mutex_);
  fleet_.Noticed(requests, host().NowUs(), wall_now_unix_us, events);
}

void Ec2CapacityProvider::Terminate(const std::vector<std::string>& instance_ids,
                                    const std::string& why) {
  auto result = ec2_->TerminateInstances(instance_ids);
  if (result.ok()) {
    host().Log(TESSERA_LOG_INFO, "aws-ec2: terminated " + Join(instance_ids) + ": " + why);
    return;
  }
  // Left marked terminating: the next adoption pass after a restart would find them; here
  // they are retried on the next pass.
  host().Log(TESSERA_LOG_WARN, "aws-ec2: TerminateInstances " + Join(instance_ids) + " (" + why +
                                   "): " + result.error().ToString() + "; retried next pass");
  std::lock_guard lock(mutex_);
  to_terminate_.insert(to_terminate_.end(), instance_ids.begin(), instance_ids.end());
}

void Ec2CapacityProvider::Emit(const std::vector<v1::BackendEvent>& events) {
  for (const v1::BackendEvent& event : events) {
    host().Log(TESSERA_LOG_INFO, "aws-ec2: " + v1::BackendEvent::Kind_Name(event.kind()) + " " +
                                     event.request_id() + event.node() + ": " + event.message());
    host().Emit(event);
  }
}

}  // namespace tessera::aws_ec2
