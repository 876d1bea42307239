// The aws-ec2 capacity provider (plugins/aws-ec2), loaded as a plugin through the SDK's
// FakeHost, against moto_server behind the fault proxy, with its instances joining the fake
// Kubernetes API server (the proxy plays each instance's kubelet: /fault/join). Every request is
// signature-checked by the proxy. Exits 77 (skipped) when moto_server, etcd or python3-etcd3 is
// missing (scripts/install-deps.sh installs them).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "aws/ec2_client.h"
#include "aws/ec2_proxy_process.h"
#include "kubernetes/fake_apiserver_process.h"
#include "tessera/plugin/fake_host.h"

namespace tessera::aws {
namespace {

using plugin::FakeHost;
using plugin::PluginStatus;

constexpr char kAccessKey[] = "AKIDTESSERAPLUGIN";
constexpr char kSecret[] = "plugin/test+secret";

HttpEndpoint g_proxy;
std::string g_kubeconfig;
nlohmann::json g_kube;

void Fault(const std::string& what, const std::string& json = "{}") {
  const auto [status, body] = testing::PostFault(g_proxy, what, json);
  REQUIRE_MESSAGE(status == 200, body);
}

// A fresh proxy state whose instances join the fake Kubernetes (unless of `never_join`).
void Reset(const std::string& never_join = "[]") {
  Fault("reset");
  Fault("join", nlohmann::json({{"kube_url", g_kube["url"]},
                                {"token", g_kube["token"]},
                                {"ca", g_kube["ca"]},
                                {"never_join", nlohmann::json::parse(never_join)}})
                    .dump());
}

// Environment credentials for the plugin (it runs in this process).
void UseEnvironmentKeys(const std::string& secret = kSecret) {
  ::setenv("AWS_ACCESS_KEY_ID", kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", secret.c_str(), 1);
  ::unsetenv("AWS_SESSION_TOKEN");
}

void NoEnvironmentKeys() {
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
}

// Two groups: spot A10G (two types, two zones) and on-demand A10G.
nlohmann::json Config(int64_t join_timeout_s = 60) {
  return {{"cluster", "test-cluster"},
          {"region", "us-east-1"},
          {"endpoint", "http://127.0.0.1:" + g_proxy.port},
          {"credentials",
           {{"shared_credentials_file", "/nonexistent/credentials"}, {"imds_endpoint", "off"}}},
          {"join", {{"kubeconfig", g_kubeconfig}, {"timeout_s", join_timeout_s}}},
          {"poll_interval_ms", 100},
          {"initial_backoff_ms", 5},
          {"max_backoff_ms", 20},
          {"node_groups",
           {{{"name", "a10g-spot"},
             {"market", "spot"},
             {"max_spot_price", "3.00"},
             {"max_nodes", 4},
             {"image_id", "ami-12c6146b"},
             {"instance_types", {"g5.12xlarge", "g5.24xlarge"}},
             {"zones", {{{"zone", "us-east-1a"}}, {{"zone", "us-east-1b"}}}}},
            {{"name", "a10g-on-demand"},
             {"market", "on-demand"},
             {"max_nodes", 4},
             {"image_id", "ami-12c6146b"},
             {"instance_types", {{{"type", "g5.12xlarge"}, {"on_demand_price_per_hour", 5.672}}}},
             {"zones", {"us-east-1a"}}}}}};
}

std::unique_ptr<FakeHost> Open() {
  std::unique_ptr<FakeHost> host;
  const PluginStatus opened = FakeHost::Open(TESSERA_AWS_EC2_PLUGIN, &host);
  REQUIRE_MESSAGE(opened.ok(), opened.message);
  return host;
}

std::unique_ptr<FakeHost> Started(const nlohmann::json& config) {
  std::unique_ptr<FakeHost> host = Open();
  const PluginStatus init = host->Init(config.dump());
  REQUIRE_MESSAGE(init.ok(), init.message);
  REQUIRE(host->Start(v1::StartRequest()).ok());
  return host;
}

v1::ProvisionRequest Request(const std::string& group, int count, const std::string& id) {
  v1::ProvisionRequest request;
  request.set_node_group(group);
  request.set_count(count);
  request.set_request_id(id);
  return request;
}

// The request's PROVISION_COMPLETED or PROVISION_FAILED, within `seconds`.
v1::BackendEvent WaitForEnd(FakeHost& host, const std::string& id, int seconds = 20) {
  auto event = host.WaitForEvent(
      [&](const v1::BackendEvent& e) {
        return e.request_id() == id && (e.kind() == v1::BackendEvent::PROVISION_COMPLETED ||
                                        e.kind() == v1::BackendEvent::PROVISION_FAILED);
      },
      std::chrono::seconds(seconds));
  REQUIRE_MESSAGE(event.has_value(), (std::string("no end for request ") + id));
  return *event;
}

Ec2Client Client() {
  Ec2ClientOptions options;
  options.endpoint = g_proxy;
  options.credentials = {kAccessKey, kSecret, ""};
  return Ec2Client(options);
}

// The cluster's instances that are pending or running.
std::vector<Ec2Instance> LiveInstances() {
  DescribeInstancesRequest request;
  request.filters = {{"tag:tessera:cluster", {"test-cluster"}},
                     {"instance-state-name", {"pending", "running"}}};
  auto all = Client().DescribeAllInstances(request);
  REQUIRE_MESSAGE(all.ok(), all.error().ToString());
  return all.value();
}

std::string TagValue(const Ec2Instance& instance, const std::string& key) {
  for (const Tag& tag : instance.tags) {
    if (tag.key == key) return tag.value;
  }
  return {};
}

bool Logged(const FakeHost& host, const std::string& text) {
  for (const auto& entry : host.logs()) {
    if (entry.message.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("aws_ec2_provider: node groups from EC2's shapes and spot prices") {
  Reset();
  Fault("spot_price", R"({"instance_type": "g5.12xlarge", "price": "1.8000"})");
  Fault(
      "spot_price",
      R"({"instance_type": "g5.24xlarge", "availability_zone": "us-east-1b", "price": "2.4000"})");
  UseEnvironmentKeys();
  auto host = Started(Config());
  v1::NodeGroups groups;
  REQUIRE(host->NodeGroups(&groups).ok());
  REQUIRE(groups.groups_size() == 2);
  const v1::NodeGroup& spot = groups.groups(0);
  CHECK(spot.market() == v1::SPOT);
  CHECK(spot.price_per_hour() == doctest::Approx(2.4));  // the dearest type and zone
  CHECK(spot.shape().gpus_size() == 4);                  // g5.12xlarge: 4 x A10G
  CHECK(spot.shape().gpus(0).model() == "A10G");
  CHECK(spot.shape().cpu_milli() == 48000);
  CHECK(spot.shape().labels().at("tessera.io/node-group") == "a10g-spot");
  CHECK(groups.groups(1).price_per_hour() == doctest::Approx(5.672));
  host->Shutdown();
}

TEST_CASE("aws_ec2_provider: a shape EC2 contradicts, and other config errors, name the field") {
  Reset();
  UseEnvironmentKeys();
  nlohmann::json config = Config();
  config["node_groups"][1]["instance_types"][0]["gpus"] = 8;
  auto host = Open();
  PluginStatus init = host->Init(config.dump());
  CHECK(init.code == TESSERA_INVALID_ARGUMENT);
  CHECK(init.message.find("node_groups[1].instance_types[0].gpus: configured 8 but EC2 says "
                          "g5.12xlarge has 4") != std::string::npos);

  config = Config();
  config["node_groups"][0]["instance_types"][1] = "g9.nonexistent";
  init = Open()->Init(config.dump());
  CHECK(init.code == TESSERA_INVALID_ARGUMENT);
  CHECK(init.message.find("g9.nonexistent") != std::string::npos);

  config = Config();
  config["node_groups"][1]["instance_types"][0].erase("on_demand_price_per_hour");
  init = Open()->Init(config.dump());
  CHECK(init.message.find("node_groups[1].instance_types[0].on_demand_price_per_hour: required") !=
        std::string::npos);

  config = Config();
  config["node_groups"][0]["market"] = "cheap";
  init = Open()->Init(config.dump());
  CHECK(init.message.find("node_groups[0].market: must be \"spot\" or \"on-demand\"") !=
        std::string::npos);

  config = Config();
  config.erase("cluster");
  CHECK(Open()->Init(config.dump()).message.find("cluster: required") != std::string::npos);
  config = Config();
  config["colour"] = "blue";
  CHECK(Open()->Init(config.dump()).message.find("colour: unknown field") != std::string::npos);
}

TEST_CASE("aws_ec2_provider: provision launches tagged spot instances that join, once per id") {
  Reset();
  UseEnvironmentKeys();
  auto host = Started(Config());
  const v1::ProvisionRequest request = Request("a10g-spot", 2, "burst-1");
  REQUIRE(host->Provision(request, nullptr).ok());
  REQUIRE(host->Provision(request, nullptr).ok());  // the same id: nothing more
  const v1::BackendEvent end = WaitForEnd(*host, "burst-1");
  REQUIRE_MESSAGE(end.kind() == v1::BackendEvent::PROVISION_COMPLETED, end.message());
  CHECK(end.nodes_size() == 2);
  const std::vector<Ec2Instance> live = LiveInstances();
  REQUIRE(live.size() == 2);
  for (const Ec2Instance& instance : live) {
    CHECK(instance.lifecycle == "spot");
    CHECK(instance.instance_type == "g5.12xlarge");
    CHECK(TagValue(instance, "tessera:request-id") == "burst-1");
    CHECK(TagValue(instance, "tessera:node-group") == "a10g-spot");
    CHECK(instance.client_token == "burst-1/0");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int ends = 0;
  for (const auto& e : host->events()) ends += e.request_id() == "burst-1" ? 1 : 0;
  CHECK(ends == 1);

  v1::DeprovisionRequest give_back;
  *give_back.mutable_nodes() = end.nodes();
  REQUIRE(host->Deprovision(give_back).ok());
  v1::DeprovisionRequest unknown;
  unknown.add_nodes("not-ours");
  CHECK(host->Deprovision(unknown).code == TESSERA_INVALID_ARGUMENT);
  for (int i = 0; i < 50 && !LiveInstances().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(LiveInstances().empty());
  host->Shutdown();
}

TEST_CASE("aws_ec2_provider: spot refused everywhere fails naming each try; on-demand then runs") {
  Reset();
  Fault("spot_price", R"({"instance_type": "g5.12xlarge", "price": "4.5000"})");
  Fault("spot_price", R"({"instance_type": "g5.24xlarge", "price": "6.1000"})");
  UseEnvironmentKeys();
  auto host = Started(Config());
  REQUIRE(host->Provision(Request("a10g-spot", 1, "spot-1"), nullptr).ok());
  const v1::BackendEvent refused = WaitForEnd(*host, "spot-1");
  CHECK(refused.kind() == v1::BackendEvent::PROVISION_FAILED);
  for (const char* tried : {"g5.12xlarge in us-east-1a: SpotMaxPriceTooLow",
                            "g5.12xlarge in us-east-1b: SpotMaxPriceTooLow",
                            "g5.24xlarge in us-east-1a: SpotMaxPriceTooLow",
                            "g5.24xlarge in us-east-1b: SpotMaxPriceTooLow"}) {
    CHECK_MESSAGE(refused.message().find(tried) != std::string::npos, refused.message());
  }
  REQUIRE(host->Provision(Request("a10g-on-demand", 1, "od-1"), nullptr).ok());
  const v1::BackendEvent ran = WaitForEnd(*host, "od-1");
  CHECK_MESSAGE(ran.kind() == v1::BackendEvent::PROVISION_COMPLETED, ran.message());
  const std::vector<Ec2Instance> live = LiveInstances();
  REQUIRE(live.size() == 1);
  CHECK(live[0].lifecycle.empty());  // on-demand
  host->Shutdown();
}

TEST_CASE("aws_ec2_provider: no capacity in a zone, then for a type: the next one is tried") {
  Reset();
  Fault("capacity",
        R"({"instance_type": "g5.12xlarge", "availability_zone": "us-east-1a", "available": 0})");
  Fault("capacity",
        R"({"instance_type": "g5.12xlarge", "availability_zone": "us-east-1b", "available": 1})");
  UseEnvironmentKeys();
  auto host = Started(Config());
  REQUIRE(host->Provision(Request("a10g-spot", 2, "fallback-1"), nullptr).ok());
  const v1::BackendEvent end = WaitForEnd(*host, "fallback-1");
  REQUIRE_MESSAGE(end.kind() == v1::BackendEvent::PROVISION_COMPLETED, end.message());
  CHECK(end.nodes_size() == 2);
  CHECK(end.message().find("g5.12xlarge in us-east-1a: InsufficientInstanceCapacity") !=
        std::string::npos);
  std::map<std::string, int> where;
  for (const Ec2Instance& instance : LiveInstances()) {
    ++where[instance.instance_type + " " + instance.availability_zone];
  }
  CHECK(where["g5.12xlarge us-east-1b"] == 1);  // the one left there
  CHECK(where["g5.24xlarge us-east-1a"] == 1);  // then the next type
  host->Shutdown();
}

TEST_CASE("aws_ec2_provider: throttling is backed off and the request still completes") {
  Reset();
  Fault("throttle", R"({"every": 2, "actions": ["RunInstances", "DescribeInstances"]})");
  UseEnvironmentKeys();
  auto host = Started(Config());
  REQUIRE(host->Provision(Request("a10g-on-demand", 1, "throttled-1"), nullptr).ok());
  const v1::BackendEvent end = WaitForEnd(*host, "throttled-1");
  CHECK_MESSAGE(end.kind() == v1::BackendEvent::PROVISION_COMPLETED, end.message());
  const nlohmann::json stats = nlohmann::json::parse(testing::GetStats(g_proxy));
  CHECK(stats["throttled"].get<int>() > 0);
  // An on-demand node has no spot request to read.
  CHECK(stats["calls"].value("DescribeSpotInstanceRequests", 0) == 0);
  Fault("throttle", R"({"every": 0})");
  CHECK(LiveInstances().size() == 1);
  host->Shutdown();
}

TEST_CASE("aws_ec2_provider: missing or rejected credentials are one clear error") {
  Reset();
  NoEnvironmentKeys();
  PluginStatus init = Open()->Init(Config().dump());
  CHECK(init.code == TESSERA_FAILED_PRECONDITION);
  CHECK_MESSAGE(
      init.message.find("no AWS credentials found: looked in the environment (no "
                        "AWS_ACCESS_KEY_ID); the shared credentials file "
                        "/nonexistent/credentials (not there); instance metadata (off)") !=
          std::string::npos,
      init.message);

  UseEnvironmentKeys("a-wrong-secret");
  init = Open()->Init(Config().dump());
  CHECK(init.code == TESSERA_PERMISSION_DENIED);
  CHECK_MESSAGE(
      init.message.find("EC2 refused the credentials from the environment: AuthFailure") !=
          std::string::npos,
      init.message);
  // One call, not a retry storm.
  CHECK(nlohmann::json::parse(testing::GetStats(g_proxy))["signature_failures"].get<int>() == 1);

  ::setenv("AWS_ACCESS_KEY_ID", kAccessKey, 1);
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  init = Open()->Init(Config().dump());
  CHECK(init.code == TESSERA_INVALID_ARGUMENT);
  CHECK(init.message.find("AWS_ACCESS_KEY_ID but no AWS_SECRET_ACCESS_KEY") != std::string::npos);
}

TEST_CASE("aws_ec2_provider: credentials from a shared file's profile and from the instance role") {
  Reset();
  NoEnvironmentKeys();
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("tessera-aws-credentials-" + std::to_string(getpid())))
                               .string();
  {
    std::ofstream out(file);
    out << "[default]\naws_access_key_id = WRONG\naws_secret_access_key = wrong\n\n"
        << "[burst]\naws_access_key_id = " << kAccessKey << "\naws_secret_access_key = " << kSecret
        << "\n";
  }
  nlohmann::json config = Config();
  config["credentials"] = {
      {"shared_credentials_file", file}, {"profile", "burst"}, {"imds_endpoint", "off"}};
  auto host = Open();
  PluginStatus init = host->Init(config.dump());
  CHECK_MESSAGE(init.ok(), init.message);
  CHECK(Logged(*host, "credentials from profile 'burst' of " + file));
  host->Shutdown();
  std::filesystem::remove(file);

  Fault("imds_role", nlohmann::json({{"role", "tessera-burst"},
                                     {"access_key_id", kAccessKey},
                                     {"secret_access_key", kSecret},
                                     {"token", "session-token"}})
                         .dump());
  config["credentials"] = {{"shared_credentials_file", "/nonexistent/credentials"},
                           {"imds_endpoint", "http://127.0.0.1:" + g_proxy.port}};
  host = Open();
  init = host->Init(config.dump());
  CHECK_MESSAGE(init.ok(), init.message);
  CHECK(Logged(*host, "credentials from instance role 'tessera-burst' (IMDSv2"));
  host->Shutdown();
}

TEST_CASE("aws_ec2_provider: a restarted plugin adopts its instances by tag and leaks none") {
  Reset();
  UseEnvironmentKeys();
  auto first = Started(Config());
  REQUIRE(first->Provision(Request("a10g-spot", 2, "restart-1"), nullptr).ok());
  const v1::BackendEvent end = WaitForEnd(*first, "restart-1");
  REQUIRE(end.kind() == v1::BackendEvent::PROVISION_COMPLETED);
  first->Shutdown();

  auto second = Started(Config());
  CHECK(Logged(*second, "adopted 2 instance(s) tagged tessera:cluster=test-cluster"));
  // The host asks again for the request it had under way: the adopted instances are its.
  REQUIRE(second->Provision(Request("a10g-spot", 2, "restart-1"), nullptr).ok());
  const v1::BackendEvent again = WaitForEnd(*second, "restart-1");
  REQUIRE(again.kind() == v1::BackendEvent::PROVISION_COMPLETED);
  CHECK(std::set<std::string>(again.nodes().begin(), again.nodes().end()) ==
        std::set<std::string>(end.nodes().begin(), end.nodes().end()));
  CHECK(LiveInstances().size() == 2);  // nothing launched twice

  v1::DeprovisionRequest give_back;
  *give_back.mutable_nodes() = again.nodes();
  REQUIRE(second->Deprovision(give_back).ok());
  for (int i = 0; i < 50 && !LiveInstances().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(LiveInstances().empty());  // no stray instance at the end
  second->Shutdown();
}

TEST_CASE("aws_ec2_provider: an instance that never joins is terminated after the timeout") {
  Reset(R"(["g5.12xlarge"])");
  UseEnvironmentKeys();
  auto host = Started(Config(/*join_timeout_s=*/30));
  REQUIRE(host->Provision(Request("a10g-on-demand", 1, "lost-1"), nullptr).ok());
  for (int i = 0; i < 50 && LiveInstances().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(LiveInstances().size() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(LiveInstances().size() == 1);  // the host clock has not moved: still waiting
  host->AdvanceUs(31'000'000);
  const v1::BackendEvent end = WaitForEnd(*host, "lost-1");
  CHECK(end.kind() == v1::BackendEvent::PROVISION_FAILED);
  CHECK_MESSAGE(end.message().find("did not join within 30 s: terminated") != std::string::npos,
                end.message());
  CHECK(Logged(*host, "join timeouts so far: 1"));
  CHECK(LiveInstances().empty());
  host->Shutdown();
}

int SpotInterruptions(const FakeHost& host) {
  int count = 0;
  for (const auto& e : host.events()) {
    count += e.kind() == v1::BackendEvent::SPOT_INTERRUPTION ? 1 : 0;
  }
  return count;
}

TEST_CASE("aws_ec2_provider: EC2's two-minute notice gives SPOT_INTERRUPTION before EC2 acts") {
  Reset();
  UseEnvironmentKeys();
  auto host = Started(Config());
  REQUIRE(host->Provision(Request("a10g-spot", 1, "notice-1"), nullptr).ok());
  const v1::BackendEvent end = WaitForEnd(*host, "notice-1");
  REQUIRE(end.kind() == v1::BackendEvent::PROVISION_COMPLETED);
  const std::vector<Ec2Instance> live = LiveInstances();
  REQUIRE(live.size() == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(SpotInterruptions(*host) == 0);  // its request is read, and is only fulfilled

  Fault("interrupt",
        nlohmann::json({{"instance_id", live[0].instance_id}, {"notice_seconds", 120}}).dump());
  // Polls are 100 ms apart: a few of them.
  auto notice = host->WaitForEvent(
      [](const v1::BackendEvent& e) { return e.kind() == v1::BackendEvent::SPOT_INTERRUPTION; },
      std::chrono::seconds(2));
  REQUIRE(notice.has_value());
  CHECK(notice->node() == end.nodes(0));
  // Two minutes from the notice (updateTime has milliseconds; the notice is a few polls old).
  const int64_t ahead_us = notice->deadline_us() - host->NowUs();
  CHECK(ahead_us > 115'000'000);
  CHECK(ahead_us <= 120'000'000);
  CHECK_MESSAGE(notice->message().find("EC2 will terminate spot instance " + live[0].instance_id) !=
                    std::string::npos,
                notice->message());
  CHECK(notice->message().find("marked-for-termination") != std::string::npos);
  CHECK(LiveInstances().size() == 1);  // EC2 has not acted

  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(SpotInterruptions(*host) == 1);  // once per instance

  v1::DeprovisionRequest give_back;
  *give_back.mutable_nodes() = end.nodes();
  REQUIRE(host->Deprovision(give_back).ok());
  for (int i = 0; i < 50 && !LiveInstances().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(LiveInstances().empty());
  host->Shutdown();
}

TEST_CASE("aws_ec2_provider: the notice unread (throttled), EC2 acting still interrupts") {
  Reset();
  // Every DescribeSpotInstanceRequests throttled, past the client's retries: provisioning goes
  // on, and the interruption is seen when EC2 terminates the instance.
  Fault("throttle", R"({"every": 1, "actions": ["DescribeSpotInstanceRequests"]})");
  UseEnvironmentKeys();
  auto host = Started(Config());
  REQUIRE(host->Provision(Request("a10g-spot", 1, "spot-int-1"), nullptr).ok());
  const v1::BackendEvent end = WaitForEnd(*host, "spot-int-1");
  REQUIRE(end.kind() == v1::BackendEvent::PROVISION_COMPLETED);
  const std::vector<Ec2Instance> live = LiveInstances();
  REQUIRE(live.size() == 1);
  Fault("interrupt",
        nlohmann::json({{"instance_id", live[0].instance_id}, {"notice_seconds", 0.3}}).dump());
  auto notice = host->WaitForEvent(
      [](const v1::BackendEvent& e) { return e.kind() == v1::BackendEvent::SPOT_INTERRUPTION; },
      std::chrono::seconds(10));
  REQUIRE(notice.has_value());
  CHECK(notice->node() == end.nodes(0));
  CHECK(notice->deadline_us() == host->NowUs());
  CHECK(notice->message().find("EC2 reports spot instance " + live[0].instance_id) !=
        std::string::npos);
  CHECK(Logged(*host, "DescribeSpotInstanceRequests: RequestLimitExceeded"));
  CHECK(nlohmann::json::parse(testing::GetStats(g_proxy))["throttled"].get<int>() > 0);
  Fault("throttle", R"({"every": 0})");
  host->Shutdown();
}

}  // namespace
}  // namespace tessera::aws

int main(int argc, char** argv) {
  using tessera::aws::testing::OnPath;
  for (const char* tool : {"moto_server", "etcd", "openssl"}) {
    if (!OnPath(tool)) {
      std::cout << "SKIP aws_ec2_provider: " << tool
                << " not found (scripts/install-deps.sh installs moto[server], etcd-server)\n";
      return 77;
    }
  }
  const std::string probe =
      std::string(TESSERA_DEBIAN_PYTHON3) + " -c 'import etcd3, yaml' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) {
    std::cout << "SKIP aws_ec2_provider: python3-etcd3 or python3-yaml missing\n";
    return 77;
  }
  tessera::testing::FakeApiServerProcess kube;
  std::string error;
  if (!kube.Start(TESSERA_DEBIAN_PYTHON3, TESSERA_KUBE_FAKE_APISERVER, &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  tessera::aws::testing::Ec2ProxyProcess proxy;
  if (!proxy.Start(TESSERA_EC2_FAULT_PROXY, tessera::aws::kAccessKey, tessera::aws::kSecret,
                   /*tls=*/false, &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  tessera::aws::g_proxy = proxy.endpoint();
  tessera::aws::g_kube = kube.info();
  tessera::aws::g_kubeconfig = kube.info()["kubeconfig"].get<std::string>();
  doctest::Context context(argc, argv);
  return context.run();
}
