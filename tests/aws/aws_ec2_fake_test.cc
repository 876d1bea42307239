// The EC2 client (plugins/common/aws) against moto_server behind the fault proxy
// (plugins/common/aws/testing/ec2_fault_proxy.py), both started here on free loopback ports:
// what the cloud-burst capacity provider will rely on, end to end over real HTTP. The proxy
// checks every request's SigV4 signature with its own Python implementation, so each call is
// also a signing test. Exits 77 (ctest: skipped) when moto_server is not installed
// (scripts/install-deps.sh installs it).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "aws/ec2_client.h"
#include "aws/ec2_proxy_process.h"
#include "aws/spot_interruption.h"

namespace tessera::aws {
namespace {

constexpr char kAccessKey[] = "AKIDTESSERATEST";
constexpr char kSecret[] = "tessera/test+secret";

HttpEndpoint g_proxy;    // set by main() once the proxy listens
std::string g_tls_port;  // the proxy's HTTPS port, empty when openssl could not make a cert
std::string g_tls_cert;  // its self-signed certificate, for DNS:localhost only

// POST /fault/<what> with a JSON body; fails the test on anything but 200.
void Fault(const std::string& what, const std::string& json = "{}") {
  const auto [status, body] = testing::PostFault(g_proxy, what, json);
  REQUIRE_MESSAGE(status == 200, body);
}

std::string Stats() { return testing::GetStats(g_proxy); }

Ec2Client MakeClient(const std::string& secret = kSecret, int max_attempts = 5) {
  Ec2ClientOptions options;
  options.endpoint = g_proxy;
  options.region = "us-east-1";
  options.credentials = {kAccessKey, secret, ""};
  options.max_attempts = max_attempts;
  options.initial_backoff = std::chrono::milliseconds(10);
  options.max_backoff = std::chrono::milliseconds(50);
  return Ec2Client(options);
}

RunInstancesRequest Launch(const std::string& type, int min_count, int max_count, bool spot,
                           const std::string& pool) {
  RunInstancesRequest request;
  request.image_id = "ami-12c6146b";  // one of moto's built-in AMIs
  request.instance_type = type;
  request.min_count = min_count;
  request.max_count = max_count;
  if (spot) request.spot = SpotMarketOptions{};
  request.tags = {{"tessera-pool", pool}, {"tessera-node-group", type}};
  return request;
}

std::string TagValue(const Ec2Instance& instance, const std::string& key) {
  for (const Tag& tag : instance.tags) {
    if (tag.key == key) return tag.value;
  }
  return {};
}

TEST_CASE("aws_ec2_fake: spot and on-demand launches with tags, MaxCount honoured") {
  Fault("reset");
  Ec2Client client = MakeClient();
  const auto spot = client.RunInstances(Launch("g5.xlarge", 1, 3, true, "burst"));
  REQUIRE_MESSAGE(spot.ok(), spot.error().ToString());
  CHECK(spot.value().instances.size() == 3);
  const auto on_demand = client.RunInstances(Launch("p4d.24xlarge", 1, 1, false, "burst"));
  REQUIRE_MESSAGE(on_demand.ok(), on_demand.error().ToString());
  REQUIRE(on_demand.value().instances.size() == 1);

  DescribeInstancesRequest by_pool;
  by_pool.filters = {{"tag:tessera-pool", {"burst"}}};
  const auto all = client.DescribeAllInstances(by_pool);
  REQUIRE_MESSAGE(all.ok(), all.error().ToString());
  REQUIRE(all.value().size() == 4);
  int spot_count = 0;
  for (const Ec2Instance& instance : all.value()) {
    CHECK(TagValue(instance, "tessera-pool") == "burst");
    CHECK(TagValue(instance, "tessera-node-group") == instance.instance_type);
    if (instance.lifecycle == "spot") {
      ++spot_count;
      CHECK(instance.instance_type == "g5.xlarge");
    } else {
      CHECK(instance.instance_type == "p4d.24xlarge");
    }
  }
  CHECK(spot_count == 3);

  // instance-lifecycle (moto answers it with HTTP 500; the proxy applies it), with another filter.
  DescribeInstancesRequest spot_only;
  spot_only.filters = {{"instance-lifecycle", {"spot"}}, {"tag:tessera-pool", {"burst"}}};
  const auto spot_instances = client.DescribeAllInstances(spot_only);
  REQUIRE_MESSAGE(spot_instances.ok(), spot_instances.error().ToString());
  CHECK(spot_instances.value().size() == 3);
  for (const Ec2Instance& instance : spot_instances.value()) CHECK(instance.lifecycle == "spot");
}

TEST_CASE("aws_ec2_fake: describe by tag filter, page by page") {
  Fault("reset");
  Ec2Client client = MakeClient();
  for (int i = 0; i < 7; ++i) {
    REQUIRE(client.RunInstances(Launch("g5.xlarge", 1, 1, i % 2 == 0, "paged")).ok());
  }
  REQUIRE(client.RunInstances(Launch("g5.xlarge", 1, 1, false, "other")).ok());

  DescribeInstancesRequest request;
  request.filters = {{"tag:tessera-pool", {"paged"}}};
  request.max_results = 5;  // EC2's smallest page
  const auto first = client.DescribeInstances(request);
  REQUIRE(first.ok());
  CHECK(first.value().instances.size() == 5);
  REQUIRE_FALSE(first.value().next_token.empty());
  request.next_token = first.value().next_token;
  const auto second = client.DescribeInstances(request);
  REQUIRE(second.ok());
  CHECK(second.value().instances.size() == 2);
  CHECK(second.value().next_token.empty());

  request.next_token.clear();
  const auto all = client.DescribeAllInstances(request);
  REQUIRE(all.ok());
  std::set<std::string> ids;
  for (const auto& instance : all.value()) ids.insert(instance.instance_id);
  CHECK(ids.size() == 7);
}

TEST_CASE("aws_ec2_fake: capacity errors reach the caller at once, other types still launch") {
  Fault("reset");
  Fault("capacity", R"({"instance_type": "p5.48xlarge", "available": 0})");
  Fault("capacity", R"({"instance_type": "p4d.24xlarge", "available": 2})");
  Ec2Client client = MakeClient();
  const auto refused = client.RunInstances(Launch("p5.48xlarge", 1, 1, true, "burst"));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == "InsufficientInstanceCapacity");
  CHECK(refused.error().http_status == 500);
  CHECK(refused.error().IsCapacityError());
  CHECK(client.retries() == 0);
  CHECK(Stats().find("\"capacity_errors\": 1") != std::string::npos);

  // Two left: a request for up to four gets two; then MinCount 1 no longer fits.
  const auto partial = client.RunInstances(Launch("p4d.24xlarge", 1, 4, false, "burst"));
  REQUIRE(partial.ok());
  CHECK(partial.value().instances.size() == 2);
  const auto exhausted = client.RunInstances(Launch("p4d.24xlarge", 1, 1, false, "burst"));
  REQUIRE_FALSE(exhausted.ok());
  CHECK(exhausted.error().code == "InsufficientInstanceCapacity");
}

TEST_CASE("aws_ec2_fake: throttling is retried until the call succeeds") {
  Fault("reset");
  Ec2Client client = MakeClient();
  REQUIRE(client.RunInstances(Launch("g5.xlarge", 1, 1, false, "burst")).ok());
  Fault("throttle", R"({"every": 2, "actions": ["DescribeInstances"]})");
  for (int i = 0; i < 4; ++i) {
    const auto page = client.DescribeInstances({});
    REQUIRE_MESSAGE(page.ok(), page.error().ToString());
    CHECK(page.value().instances.size() == 1);
  }
  CHECK(client.retries() >= 2);
  CHECK(Stats().find("\"throttled\": 0") == std::string::npos);

  Fault("throttle", R"({"every": 1})");
  Ec2Client impatient = MakeClient(kSecret, 2);
  const auto given_up = impatient.DescribeInstances({});
  REQUIRE_FALSE(given_up.ok());
  CHECK(given_up.error().code == "RequestLimitExceeded");
  CHECK(given_up.error().http_status == 503);
  CHECK(impatient.retries() == 1);
}

TEST_CASE("aws_ec2_fake: terminate, and the state EC2 reports after") {
  Fault("reset");
  Ec2Client client = MakeClient();
  const auto launched = client.RunInstances(Launch("g5.xlarge", 2, 2, true, "burst"));
  REQUIRE(launched.ok());
  std::vector<std::string> ids;
  for (const auto& instance : launched.value().instances) ids.push_back(instance.instance_id);
  const auto changes = client.TerminateInstances(ids);
  REQUIRE_MESSAGE(changes.ok(), changes.error().ToString());
  REQUIRE(changes.value().size() == 2);
  for (const auto& change : changes.value()) {
    CHECK((change.current_state.name == "shutting-down" ||
           change.current_state.name == "terminated"));
  }
  DescribeInstancesRequest live;
  live.filters = {{"tag:tessera-pool", {"burst"}}, {"instance-state-name", {"pending", "running"}}};
  const auto remaining = client.DescribeAllInstances(live);
  REQUIRE(remaining.ok());
  CHECK(remaining.value().empty());

  const auto unknown = client.TerminateInstances({"i-0123456789abcdef0"});
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == "InvalidInstanceID.NotFound");
  CHECK(unknown.error().http_status == 400);
}

TEST_CASE("aws_ec2_fake: new instances stay pending for a while") {
  Fault("reset");
  Fault("pending", R"({"seconds": 0.6})");
  Ec2Client client = MakeClient();
  const auto launched = client.RunInstances(Launch("g5.xlarge", 1, 1, false, "burst"));
  REQUIRE(launched.ok());
  DescribeInstancesRequest request;
  request.instance_ids = {launched.value().instances[0].instance_id};
  auto page = client.DescribeInstances(request);
  REQUIRE(page.ok());
  REQUIRE(page.value().instances.size() == 1);
  CHECK(page.value().instances[0].state.name == "pending");
  CHECK(page.value().instances[0].state.code == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  page = client.DescribeInstances(request);
  REQUIRE(page.ok());
  CHECK(page.value().instances[0].state.name == "running");
  CHECK(page.value().instances[0].state.code == 16);
}

TEST_CASE("aws_ec2_fake: spot prices, and a max price below them") {
  Fault("reset");
  Fault("spot_price", R"({"instance_type": "p4d.24xlarge", "price": "11.5700"})");
  Fault(
      "spot_price",
      R"({"instance_type": "p4d.24xlarge", "availability_zone": "us-east-1b", "price": "9.8300"})");
  Ec2Client client = MakeClient();
  SpotPriceHistoryRequest history;
  history.instance_types = {"p4d.24xlarge"};
  history.product_descriptions = {"Linux/UNIX"};
  const auto prices = client.DescribeSpotPriceHistory(history);
  REQUIRE_MESSAGE(prices.ok(), prices.error().ToString());
  REQUIRE_FALSE(prices.value().prices.empty());
  for (const SpotPrice& price : prices.value().prices) {
    CHECK(price.instance_type == "p4d.24xlarge");
    CHECK(price.spot_price_usd ==
          doctest::Approx(price.availability_zone == "us-east-1b" ? 9.83 : 11.57));
  }
  RunInstancesRequest cheap = Launch("p4d.24xlarge", 1, 1, true, "burst");
  cheap.spot->max_price = "5.00";
  const auto refused = client.RunInstances(cheap);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == "SpotMaxPriceTooLow");
  CHECK(refused.error().IsCapacityError());
}

TEST_CASE("aws_ec2_fake: a repeated ClientToken returns the first launch") {
  Fault("reset");
  Ec2Client client = MakeClient();
  RunInstancesRequest request = Launch("g5.xlarge", 1, 2, true, "burst");
  request.client_token = "tessera-node-group-a-0001";
  const auto first = client.RunInstances(request);
  const auto again = client.RunInstances(request);
  REQUIRE(first.ok());
  REQUIRE(again.ok());
  CHECK(first.value().reservation_id == again.value().reservation_id);
  CHECK(first.value().instances.size() == 2);
  DescribeInstancesRequest by_pool;
  by_pool.filters = {{"tag:tessera-pool", {"burst"}}};
  CHECK(client.DescribeAllInstances(by_pool).value().size() == 2);
  request.instance_type = "g5.2xlarge";
  const auto mismatch = client.RunInstances(request);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error().code == "IdempotentParameterMismatch");
}

TEST_CASE("aws_ec2_fake: a wrong secret is an AuthFailure, not retried") {
  Fault("reset");
  Ec2Client client = MakeClient("not-the-secret");
  const auto refused = client.DescribeInstances({});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == "AuthFailure");
  CHECK(refused.error().http_status == 401);
  CHECK(client.retries() == 0);
}

TEST_CASE("aws_ec2_fake: the spot interruption notice, seen through IMDSv2") {
  Fault("reset");
  Ec2Client client = MakeClient();
  const auto launched = client.RunInstances(Launch("g5.xlarge", 1, 1, true, "burst"));
  REQUIRE(launched.ok());
  const std::string id = launched.value().instances[0].instance_id;
  Fault("imds", R"({"instance_id": ")" + id + R"("})");
  BeastHttpTransport transport(std::chrono::seconds(5));
  const auto quiet = PollSpotInstanceAction(transport, g_proxy);
  REQUIRE_MESSAGE(quiet.ok(), quiet.error().ToString());
  CHECK_FALSE(quiet.value().has_value());

  Fault("interrupt", R"({"instance_id": ")" + id + R"(", "notice_seconds": 0.5})");
  const auto notice = PollSpotInstanceAction(transport, g_proxy);
  REQUIRE_MESSAGE(notice.ok(), notice.error().ToString());
  REQUIRE(notice.value().has_value());
  CHECK(notice.value()->action == "terminate");
  CHECK(notice.value()->time.size() == 20);  // 2026-12-02T08:22:00Z

  // When the notice's time has come, EC2 (here the proxy, through moto) terminates it.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  DescribeInstancesRequest request;
  request.instance_ids = {id};
  const auto after = client.DescribeInstances(request);
  REQUIRE(after.ok());
  REQUIRE(after.value().instances.size() == 1);
  CHECK((after.value().instances[0].state.name == "shutting-down" ||
         after.value().instances[0].state.name == "terminated"));
}

TEST_CASE("aws_ec2_fake: the notice in each spot instance's request, page by page") {
  Fault("reset");
  Ec2Client client = MakeClient();
  const auto launched = client.RunInstances(Launch("g5.xlarge", 6, 6, true, "burst"));
  REQUIRE(launched.ok());
  REQUIRE(client.RunInstances(Launch("g5.xlarge", 1, 1, false, "burst")).ok());  // on-demand
  std::vector<std::string> ids;
  for (const Ec2Instance& instance : launched.value().instances) {
    ids.push_back(instance.instance_id);
  }
  DescribeSpotInstanceRequestsRequest request;
  request.filters = {{"instance-id", ids}};
  request.max_results = 5;
  const auto first = client.DescribeSpotInstanceRequests(request);
  REQUIRE_MESSAGE(first.ok(), first.error().ToString());
  CHECK(first.value().requests.size() == 5);
  CHECK_FALSE(first.value().next_token.empty());
  const auto all = client.DescribeAllSpotInstanceRequests(request);
  REQUIRE(all.ok());
  REQUIRE(all.value().size() == 6);  // one per spot instance, none for the on-demand one
  std::set<std::string> seen;
  for (const SpotInstanceRequest& spot : all.value()) {
    seen.insert(spot.instance_id);
    CHECK(spot.state == "active");
    CHECK(spot.status_code == "fulfilled");
  }
  CHECK(seen == std::set<std::string>(ids.begin(), ids.end()));

  const auto wall_now_us = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const long long before_us = wall_now_us();
  Fault("interrupt", R"({"instance_id": ")" + ids[0] + R"(", "notice_seconds": 0.5})");
  Fault("interrupt",
        R"({"instance_id": ")" + ids[1] + R"(", "action": "stop", "notice_seconds": 60})");
  request.filters = {{"instance-id", {ids[0], ids[1]}}};
  const auto marked = client.DescribeAllSpotInstanceRequests(request);
  REQUIRE(marked.ok());
  REQUIRE(marked.value().size() == 2);
  std::map<std::string, SpotInstanceRequest> by_instance;
  for (const SpotInstanceRequest& spot : marked.value()) by_instance[spot.instance_id] = spot;
  CHECK(by_instance[ids[0]].status_code == "marked-for-termination");
  CHECK(by_instance[ids[1]].status_code == "marked-for-stop");
  CHECK(by_instance[ids[0]].state == "active");
  // updateTime is the notice's time (EC2's clock; here the same machine's).
  CHECK(by_instance[ids[0]].status_update_unix_us >= before_us - 1'000);
  CHECK(by_instance[ids[0]].status_update_unix_us <= wall_now_us());

  // EC2 acts: the request closes with the reason; the instance is gone.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  request.filters = {{"instance-id", {ids[0]}}};
  const auto acted = client.DescribeAllSpotInstanceRequests(request);
  REQUIRE(acted.ok());
  REQUIRE(acted.value().size() == 1);
  CHECK(acted.value()[0].state == "closed");
  CHECK(acted.value()[0].status_code == "instance-terminated-no-capacity");

  request.filters = {{"launch-group", {"x"}}};
  const auto unmodelled = client.DescribeSpotInstanceRequests(request);
  REQUIRE_FALSE(unmodelled.ok());
  CHECK(unmodelled.error().code == "InvalidParameterValue");
}

TEST_CASE("aws_ec2_fake: HTTPS with a given CA, the host name checked") {
  if (g_tls_port.empty()) {
    MESSAGE("skipped: openssl could not make a test certificate");
    return;
  }
  Fault("reset");
  auto client_for = [](const std::string& host, const std::string& ca_file) {
    Ec2ClientOptions options;
    options.endpoint = {"https", host, g_tls_port, ca_file};
    options.credentials = {kAccessKey, kSecret, ""};
    options.max_attempts = 1;
    return Ec2Client(options);
  };
  Ec2Client trusted = client_for("localhost", g_tls_cert);
  REQUIRE(trusted.RunInstances(Launch("g5.xlarge", 1, 1, false, "tls")).ok());
  const auto page = trusted.DescribeInstances({});
  REQUIRE_MESSAGE(page.ok(), page.error().ToString());
  CHECK(page.value().instances.size() == 1);

  // The certificate names localhost, not 127.0.0.1; and the system store does not know it.
  const auto wrong_name = client_for("127.0.0.1", g_tls_cert).DescribeInstances({});
  REQUIRE_FALSE(wrong_name.ok());
  CHECK(wrong_name.error().code == "TransportError");
  CHECK(wrong_name.error().message.find("TLS handshake") != std::string::npos);
  const auto unknown_ca = client_for("localhost", "").DescribeInstances({});
  REQUIRE_FALSE(unknown_ca.ok());
  CHECK(unknown_ca.error().message.find("TLS handshake") != std::string::npos);
}

}  // namespace
}  // namespace tessera::aws

int main(int argc, char** argv) {
  if (!tessera::aws::testing::OnPath("moto_server")) {
    std::cout << "SKIP: moto_server is not installed (scripts/install-deps.sh installs "
                 "moto[server]==5.2.1)\n";
    return 77;
  }
  tessera::aws::testing::Ec2ProxyProcess proxy;
  std::string error;
  if (!proxy.Start(TESSERA_EC2_FAULT_PROXY, tessera::aws::kAccessKey, tessera::aws::kSecret,
                   /*tls=*/true, &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  tessera::aws::g_proxy = proxy.endpoint();
  tessera::aws::g_tls_port = proxy.tls_port();
  tessera::aws::g_tls_cert = proxy.tls_cert();
  doctest::Context context(argc, argv);
  return context.run();
}
