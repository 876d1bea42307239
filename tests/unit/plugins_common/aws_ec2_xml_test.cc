// EC2 replies (plugins/common/aws/ec2_xml.h) and the client's request forms and retries
// (ec2_client.h) against a scripted transport. The fixtures follow the shapes of the EC2 API
// Reference's examples and of moto's replies (default namespace, nested <item> sets, fields we
// do not read), trimmed to what the parser meets.
#include <doctest/doctest.h>

#include <deque>
#include <string>

#include "aws/ec2_client.h"
#include "aws/ec2_xml.h"
#include "aws/spot_interruption.h"

namespace tessera::aws {
namespace {

constexpr char kDescribeInstancesPage[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>8f7724cf-496f-496e-8fe3-example</requestId>
  <reservationSet>
    <item>
      <reservationId>r-1234567890abcdef0</reservationId>
      <ownerId>123456789012</ownerId>
      <groupSet/>
      <instancesSet>
        <item>
          <instanceId>i-1234567890abcdef0</instanceId>
          <imageId>ami-bff32ccc</imageId>
          <instanceState><code>272</code><name>running</name></instanceState>
          <privateDnsName>ip-192-168-1-88.eu-west-1.compute.internal</privateDnsName>
          <instanceType>p5.48xlarge</instanceType>
          <launchTime>2018-05-08T16:46:19.000Z</launchTime>
          <placement><availabilityZone>eu-west-1c</availabilityZone><tenancy>default</tenancy></placement>
          <privateIpAddress>192.168.1.88</privateIpAddress>
          <blockDeviceMapping><item><deviceName>/dev/xvda</deviceName></item></blockDeviceMapping>
          <instanceLifecycle>spot</instanceLifecycle>
          <clientToken>tessera-abc</clientToken>
          <tagSet>
            <item><key>tessera-pool</key><value>burst</value></item>
            <item><key>Name</key><value>gpu-1</value></item>
          </tagSet>
        </item>
      </instancesSet>
    </item>
    <item>
      <reservationId>r-0abcdef1234567890</reservationId>
      <instancesSet>
        <item>
          <instanceId>i-0598c7d356eba48d7</instanceId>
          <instanceState><code>0</code><name>pending</name></instanceState>
          <instanceType>g5.xlarge</instanceType>
          <placement><availabilityZone>eu-west-1a</availabilityZone></placement>
        </item>
        <item>
          <instanceId>i-0598c7d356eba48d8</instanceId>
          <instanceState><code>48</code><name>terminated</name></instanceState>
          <instanceType>g5.xlarge</instanceType>
        </item>
      </instancesSet>
    </item>
  </reservationSet>
  <nextToken>eyJ2IjoiMiJ9</nextToken>
</DescribeInstancesResponse>)";

constexpr char kInsufficientCapacity[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>InsufficientInstanceCapacity</Code><Message>We currently do not have sufficient p5.48xlarge capacity in the Availability Zone you requested (us-east-1a).</Message></Error></Errors><RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>)";

TEST_CASE("ec2 xml: DescribeInstances reads every reservation's instances and the next token") {
  const auto page = ParseDescribeInstancesReply(200, kDescribeInstancesPage);
  REQUIRE(page.ok());
  REQUIRE(page.value().instances.size() == 3);
  const Ec2Instance& spot = page.value().instances[0];
  CHECK(spot.instance_id == "i-1234567890abcdef0");
  CHECK(spot.image_id == "ami-bff32ccc");
  CHECK(spot.instance_type == "p5.48xlarge");
  CHECK(spot.availability_zone == "eu-west-1c");
  CHECK(spot.state.code == 16);  // 272: EC2's internal high byte dropped
  CHECK(spot.state.name == "running");
  CHECK(spot.lifecycle == "spot");
  CHECK(spot.private_ip_address == "192.168.1.88");
  CHECK(spot.client_token == "tessera-abc");
  REQUIRE(spot.tags.size() == 2);
  CHECK(spot.tags[0].key == "tessera-pool");
  CHECK(spot.tags[0].value == "burst");
  CHECK(page.value().instances[1].lifecycle.empty());
  CHECK(page.value().instances[1].state.name == "pending");
  CHECK(page.value().instances[2].state.code == 48);
  CHECK(page.value().instances[2].availability_zone.empty());
  CHECK(page.value().next_token == "eyJ2IjoiMiJ9");
}

TEST_CASE("ec2 xml: RunInstances and TerminateInstances") {
  const auto run = ParseRunInstancesReply(
      200, R"(<RunInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r1</requestId><reservationId>r-08e0f1c2</reservationId><ownerId>123456789012</ownerId>
  <instancesSet>
    <item><instanceId>i-a</instanceId><imageId>ami-1</imageId><instanceState><code>0</code><name>pending</name></instanceState><instanceType>g5.xlarge</instanceType></item>
    <item><instanceId>i-b</instanceId><imageId>ami-1</imageId><instanceState><code>0</code><name>pending</name></instanceState><instanceType>g5.xlarge</instanceType></item>
  </instancesSet></RunInstancesResponse>)");
  REQUIRE(run.ok());
  CHECK(run.value().reservation_id == "r-08e0f1c2");
  REQUIRE(run.value().instances.size() == 2);
  CHECK(run.value().instances[1].instance_id == "i-b");

  const auto terminated = ParseTerminateInstancesReply(
      200, R"(<TerminateInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r2</requestId><instancesSet><item><instanceId>i-a</instanceId>
  <currentState><code>32</code><name>shutting-down</name></currentState>
  <previousState><code>16</code><name>running</name></previousState></item></instancesSet>
  </TerminateInstancesResponse>)");
  REQUIRE(terminated.ok());
  REQUIRE(terminated.value().size() == 1);
  CHECK(terminated.value()[0].instance_id == "i-a");
  CHECK(terminated.value()[0].previous_state.code == 16);
  CHECK(terminated.value()[0].current_state.name == "shutting-down");
}

TEST_CASE("ec2 xml: spot price history, and a price that is not a number") {
  const auto page = ParseSpotPriceHistoryReply(
      200, R"(<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r3</requestId><spotPriceHistorySet>
  <item><instanceType>p4d.24xlarge</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>9.832100</spotPrice><timestamp>2026-12-01T12:00:00.000Z</timestamp><availabilityZone>us-east-1b</availabilityZone></item>
  </spotPriceHistorySet><nextToken/></DescribeSpotPriceHistoryResponse>)");
  REQUIRE(page.ok());
  REQUIRE(page.value().prices.size() == 1);
  CHECK(page.value().prices[0].availability_zone == "us-east-1b");
  CHECK(page.value().prices[0].spot_price == "9.832100");
  CHECK(page.value().prices[0].spot_price_usd == doctest::Approx(9.8321));
  CHECK(page.value().next_token.empty());

  const auto bad = ParseSpotPriceHistoryReply(
      200,
      R"(<DescribeSpotPriceHistoryResponse><spotPriceHistorySet><item><spotPrice>cheap</spotPrice></item></spotPriceHistorySet></DescribeSpotPriceHistoryResponse>)");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == "MalformedReply");
}

TEST_CASE("ec2 xml: AWS error replies become typed errors") {
  const auto error = ParseRunInstancesReply(500, kInsufficientCapacity);
  REQUIRE_FALSE(error.ok());
  CHECK(error.error().code == "InsufficientInstanceCapacity");
  CHECK(error.error().message.find("p5.48xlarge") != std::string::npos);
  CHECK(error.error().http_status == 500);
  CHECK(error.error().request_id == "ea966190-f9aa-478e-9ede-example");
  CHECK(error.error().IsCapacityError());
  CHECK(error.error().Retryable());

  const auto throttled = ParseErrorReply(
      503,
      "<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit "
      "exceeded.</Message></Error></Errors><RequestID>x</RequestID></Response>");
  REQUIRE(throttled.has_value());
  CHECK(throttled->IsThrottling());
  CHECK(throttled->Retryable());
  CHECK_FALSE(throttled->IsCapacityError());

  const auto auth = ParseErrorReply(
      401,
      "<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to "
      "validate the provided access credentials</Message></Error></Errors></Response>");
  REQUIRE(auth.has_value());
  CHECK(auth->code == "AuthFailure");
  CHECK_FALSE(auth->Retryable());
  CHECK(auth->ToString() ==
        "AuthFailure (HTTP 401): AWS was not able to validate the provided access credentials");

  CHECK_FALSE(ParseErrorReply(200, kDescribeInstancesPage).has_value());
}

TEST_CASE("ec2 xml: replies that are not what was asked for are malformed, not empty") {
  const auto html = ParseDescribeInstancesReply(502, "<html><body>Bad Gateway</body></html>");
  REQUIRE_FALSE(html.ok());
  CHECK(html.error().code == "MalformedReply");
  CHECK(html.error().http_status == 502);
  const auto truncated = ParseDescribeInstancesReply(200, "<DescribeInstancesResponse><reserv");
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.error().code == "MalformedReply");
  const auto other = ParseDescribeInstancesReply(200, "<RunInstancesResponse/>");
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message.find("expected <DescribeInstancesResponse>") != std::string::npos);
}

TEST_CASE("ec2 client: Query API forms use EC2's wire names") {
  RunInstancesRequest run;
  run.image_id = "ami-1";
  run.instance_type = "p5.48xlarge";
  run.min_count = 1;
  run.max_count = 4;
  run.client_token = "tok";
  run.spot = SpotMarketOptions{"40.00", "one-time", "terminate"};
  run.tags = {{"tessera-pool", "burst"}, {"job", "j 1"}};
  const QueryParams params = RunInstancesParams(run);
  auto has = [&](const std::string& name, const std::string& value) {
    for (const auto& [n, v] : params) {
      if (n == name && v == value) return true;
    }
    return false;
  };
  CHECK(has("MaxCount", "4"));
  CHECK(has("ClientToken", "tok"));
  CHECK(has("InstanceMarketOptions.MarketType", "spot"));
  CHECK(has("InstanceMarketOptions.SpotOptions.MaxPrice", "40.00"));
  CHECK(has("InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior", "terminate"));
  CHECK(has("TagSpecification.1.ResourceType", "instance"));
  CHECK(has("TagSpecification.1.Tag.2.Key", "job"));
  CHECK(has("TagSpecification.1.Tag.2.Value", "j 1"));

  DescribeInstancesRequest describe;
  describe.filters = {{"tag:tessera-pool", {"burst"}},
                      {"instance-state-name", {"pending", "running"}}};
  describe.max_results = 5;
  describe.next_token = "n";
  CHECK(CanonicalQueryString(DescribeInstancesParams(describe)) ==
        "Filter.1.Name=tag%3Atessera-pool&Filter.1.Value.1=burst&Filter.2.Name=instance-state-name&"
        "Filter.2.Value.1=pending&Filter.2.Value.2=running&MaxResults=5&NextToken=n");
  CHECK(CanonicalQueryString(TerminateInstancesParams({"i-a", "i-b"})) ==
        "InstanceId.1=i-a&InstanceId.2=i-b");
}

// Replies in order; records what was sent.
class ScriptedTransport : public HttpTransport {
 public:
  std::deque<Ec2Outcome<HttpResponse>> replies;
  std::vector<HttpRequest> sent;
  Ec2Outcome<HttpResponse> Send(const HttpEndpoint&, const HttpRequest& request) override {
    sent.push_back(request);
    REQUIRE_FALSE(replies.empty());
    auto reply = replies.front();
    replies.pop_front();
    return reply;
  }
};

HttpResponse Reply(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  return response;
}

std::string HeaderOf(const HttpRequest& request, const std::string& name) {
  for (const auto& [n, v] : request.headers) {
    if (n == name) return v;
  }
  return {};
}

constexpr char kThrottled[] =
    "<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>Request limit "
    "exceeded.</Message></Error></Errors><RequestID>t</RequestID></Response>";

struct ClientFixture {
  std::shared_ptr<ScriptedTransport> transport = std::make_shared<ScriptedTransport>();
  std::vector<std::chrono::milliseconds> pauses;
  int clock_seconds = 0;
  Ec2Client Make(int max_attempts) {
    Ec2ClientOptions options;
    HttpEndpoint::Parse("http://127.0.0.1:5123", &options.endpoint, nullptr);
    options.credentials = {"AKIDEXAMPLE", "secret", ""};
    options.max_attempts = max_attempts;
    options.now = [this] {
      return std::chrono::system_clock::from_time_t(1440938160 + clock_seconds++);
    };
    options.sleep = [this](std::chrono::milliseconds pause) { pauses.push_back(pause); };
    return Ec2Client(options, transport);
  }
};

TEST_CASE("ec2 client: throttling is retried with growing back-off, each attempt re-signed") {
  ClientFixture fixture;
  Ec2Client client = fixture.Make(5);
  fixture.transport->replies = {Reply(503, kThrottled), Reply(503, kThrottled),
                                Reply(200, kDescribeInstancesPage)};
  const auto page = client.DescribeInstances({});
  REQUIRE(page.ok());
  CHECK(page.value().instances.size() == 3);
  CHECK(client.retries() == 2);
  REQUIRE(fixture.pauses.size() == 2);
  CHECK(fixture.pauses[0] >= std::chrono::milliseconds(100));
  CHECK(fixture.pauses[0] <= std::chrono::milliseconds(200));
  CHECK(fixture.pauses[1] >= std::chrono::milliseconds(200));
  CHECK(fixture.pauses[1] <= std::chrono::milliseconds(400));
  REQUIRE(fixture.transport->sent.size() == 3);
  CHECK(fixture.transport->sent[0].body == "Action=DescribeInstances&Version=2016-11-15");
  CHECK(HeaderOf(fixture.transport->sent[0], "Host") == "127.0.0.1:5123");
  CHECK(HeaderOf(fixture.transport->sent[0], "X-Amz-Date") == "20150830T123600Z");
  CHECK(HeaderOf(fixture.transport->sent[1], "X-Amz-Date") == "20150830T123601Z");
  CHECK(HeaderOf(fixture.transport->sent[0], "Authorization") !=
        HeaderOf(fixture.transport->sent[1], "Authorization"));
}

TEST_CASE("ec2 client: retries stop at max_attempts and return the last error") {
  ClientFixture fixture;
  Ec2Client client = fixture.Make(2);
  fixture.transport->replies = {Reply(503, kThrottled), Reply(503, kThrottled)};
  const auto page = client.DescribeInstances({});
  REQUIRE_FALSE(page.ok());
  CHECK(page.error().code == "RequestLimitExceeded");
  CHECK(page.error().http_status == 503);
  CHECK(fixture.transport->sent.size() == 2);
}

TEST_CASE("ec2 client: capacity and client errors are returned at once") {
  ClientFixture fixture;
  Ec2Client client = fixture.Make(5);
  fixture.transport->replies = {Reply(500, kInsufficientCapacity)};
  RunInstancesRequest run;
  run.image_id = "ami-1";
  run.instance_type = "p5.48xlarge";
  const auto launched = client.RunInstances(run);
  REQUIRE_FALSE(launched.ok());
  CHECK(launched.error().code == "InsufficientInstanceCapacity");
  CHECK(fixture.transport->sent.size() == 1);
  // A client token was made up for the call.
  CHECK(fixture.transport->sent[0].body.find("ClientToken=tessera-") != std::string::npos);
}

TEST_CASE("ec2 client: a transport failure is retried, then reported") {
  ClientFixture fixture;
  Ec2Client client = fixture.Make(2);
  Ec2Error refused;
  refused.code = "TransportError";
  refused.message = "connecting to http://127.0.0.1:5123: Connection refused";
  fixture.transport->replies = {refused, refused};
  const auto result = client.TerminateInstances({"i-a"});
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code == "TransportError");
  CHECK(client.retries() == 1);
}

TEST_CASE("ec2 client: endpoints") {
  HttpEndpoint endpoint;
  std::string error;
  REQUIRE(HttpEndpoint::Parse("https://ec2.eu-west-1.amazonaws.com", &endpoint, &error));
  CHECK(endpoint.port == "443");
  CHECK(endpoint.HostHeader() == "ec2.eu-west-1.amazonaws.com");
  REQUIRE(HttpEndpoint::Parse("http://127.0.0.1:5123/", &endpoint, &error));
  CHECK(endpoint.HostHeader() == "127.0.0.1:5123");
  CHECK_FALSE(HttpEndpoint::Parse("ftp://x", &endpoint, &error));
  CHECK_FALSE(HttpEndpoint::Parse("http://x/api", &endpoint, &error));
  CHECK(Ec2ClientOptions::ForRegion("eu-west-1", {}).endpoint.HostHeader() ==
        "ec2.eu-west-1.amazonaws.com");
}

TEST_CASE("spot interruption: token first, then the notice; 404 is no notice") {
  ScriptedTransport transport;
  transport.replies = {Reply(200, "tok-1"), Reply(404, "")};
  const HttpEndpoint metadata = InstanceMetadataEndpoint();
  const auto none = PollSpotInstanceAction(transport, metadata);
  REQUIRE(none.ok());
  CHECK_FALSE(none.value().has_value());
  REQUIRE(transport.sent.size() == 2);
  CHECK(transport.sent[0].method == "PUT");
  CHECK(transport.sent[0].target == "/latest/api/token");
  CHECK(HeaderOf(transport.sent[0], "X-aws-ec2-metadata-token-ttl-seconds") == "300");
  CHECK(transport.sent[1].target == "/latest/meta-data/spot/instance-action");
  CHECK(HeaderOf(transport.sent[1], "X-aws-ec2-metadata-token") == "tok-1");

  transport.replies = {Reply(200, "tok-2"),
                       Reply(200, R"({"action": "terminate", "time": "2026-12-02T08:22:00Z"})")};
  const auto notice = PollSpotInstanceAction(transport, metadata);
  REQUIRE(notice.ok());
  REQUIRE(notice.value().has_value());
  CHECK(notice.value()->action == "terminate");
  CHECK(notice.value()->time == "2026-12-02T08:22:00Z");

  transport.replies = {Reply(401, "")};
  const auto refused = PollSpotInstanceAction(transport, metadata);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == "InstanceMetadataError");
  CHECK(refused.error().http_status == 401);

  transport.replies = {Reply(200, "tok-3"), Reply(200, "not json")};
  CHECK_FALSE(PollSpotInstanceAction(transport, metadata).ok());
}

}  // namespace
}  // namespace tessera::aws
