// Spot requests, where EC2 shows an interruption's two-minute notice to the account:
// DescribeSpotInstanceRequests' wire form, its reply (ec2_xml.h) and paging (ec2_client.h)
// against a scripted transport, and how a notice's status code and time are read
// (spot_interruption.h). The fixture follows the shape of the EC2 API Reference's
// SpotInstanceRequest (default namespace, nested <item> sets, fields we do not read).
#include <doctest/doctest.h>

#include <deque>
#include <string>

#include "aws/ec2_client.h"
#include "aws/ec2_xml.h"
#include "aws/spot_interruption.h"

namespace tessera::aws {
namespace {

// 2026-12-07T23:10:00Z
constexpr long long kNoticeUnixUs = 1796685000LL * 1'000'000;

constexpr char kSpotRequestsPage[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<DescribeSpotInstanceRequestsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>b1719f2a-5334-4479-b2f1-example</requestId>
  <spotInstanceRequestSet>
    <item>
      <spotInstanceRequestId>sir-08b93456</spotInstanceRequestId>
      <spotPrice>2.500000</spotPrice>
      <type>one-time</type>
      <state>active</state>
      <status>
        <code>fulfilled</code>
        <updateTime>2026-12-07T22:58:31.000Z</updateTime>
        <message>Your spot request is fulfilled.</message>
      </status>
      <launchSpecification>
        <imageId>ami-7aba833f</imageId>
        <instanceType>g5.12xlarge</instanceType>
        <placement><availabilityZone>us-east-1a</availabilityZone></placement>
        <groupSet><item><groupId>sg-e38f24a7</groupId></item></groupSet>
      </launchSpecification>
      <instanceId>i-1234567890abcdef0</instanceId>
      <createTime>2026-12-07T22:58:29.000Z</createTime>
      <productDescription>Linux/UNIX</productDescription>
      <launchedAvailabilityZone>us-east-1a</launchedAvailabilityZone>
      <instanceInterruptionBehavior>terminate</instanceInterruptionBehavior>
    </item>
    <item>
      <spotInstanceRequestId>sir-1a2b3c4d</spotInstanceRequestId>
      <type>persistent</type>
      <state>active</state>
      <status>
        <code>marked-for-stop</code>
        <updateTime>2026-12-07T23:10:00.250Z</updateTime>
        <message>Spot Instance is marked for stop.</message>
      </status>
      <instanceId>i-0598c7d356eba48d7</instanceId>
      <instanceInterruptionBehavior>stop</instanceInterruptionBehavior>
    </item>
  </spotInstanceRequestSet>
  <nextToken>eyJ2IjoiMyJ9</nextToken>
</DescribeSpotInstanceRequestsResponse>)";

constexpr char kLastPage[] =
    R"(<DescribeSpotInstanceRequestsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r2</requestId><spotInstanceRequestSet>
  <item><spotInstanceRequestId>sir-5e6f7a8b</spotInstanceRequestId><state>active</state>
  <status><code>marked-for-termination</code><updateTime>2026-12-07T23:10:00.000Z</updateTime></status>
  <instanceId>i-0ffee</instanceId></item>
  </spotInstanceRequestSet></DescribeSpotInstanceRequestsResponse>)";

TEST_CASE("ec2 xml: DescribeSpotInstanceRequests reads each request's instance and status") {
  const auto page = ParseSpotInstanceRequestsReply(200, kSpotRequestsPage);
  REQUIRE_MESSAGE(page.ok(), page.error().ToString());
  REQUIRE(page.value().requests.size() == 2);
  const SpotInstanceRequest& fulfilled = page.value().requests[0];
  CHECK(fulfilled.spot_instance_request_id == "sir-08b93456");
  CHECK(fulfilled.instance_id == "i-1234567890abcdef0");
  CHECK(fulfilled.state == "active");
  CHECK(fulfilled.status_code == "fulfilled");
  CHECK(fulfilled.status_message == "Your spot request is fulfilled.");
  CHECK(fulfilled.status_update_time == "2026-12-07T22:58:31.000Z");
  CHECK(fulfilled.instance_interruption_behavior == "terminate");
  const SpotInstanceRequest& marked = page.value().requests[1];
  CHECK(marked.status_code == "marked-for-stop");
  CHECK(marked.status_update_unix_us == kNoticeUnixUs + 250'000);
  CHECK(page.value().next_token == "eyJ2IjoiMyJ9");

  const auto last = ParseSpotInstanceRequestsReply(200, kLastPage);
  REQUIRE(last.ok());
  CHECK(last.value().next_token.empty());
  CHECK(last.value().requests[0].status_update_unix_us == kNoticeUnixUs);
}

TEST_CASE("ec2 xml: a spot request without its id, or another reply, is malformed") {
  const auto no_id = ParseSpotInstanceRequestsReply(
      200,
      R"(<DescribeSpotInstanceRequestsResponse><spotInstanceRequestSet><item><instanceId>i-a</instanceId></item></spotInstanceRequestSet></DescribeSpotInstanceRequestsResponse>)");
  REQUIRE_FALSE(no_id.ok());
  CHECK(no_id.error().code == "MalformedReply");
  CHECK(no_id.error().message.find("spotInstanceRequestId") != std::string::npos);

  const auto other = ParseSpotInstanceRequestsReply(
      200, R"(<DescribeInstancesResponse><reservationSet/></DescribeInstancesResponse>)");
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().code == "MalformedReply");

  const auto refused = ParseSpotInstanceRequestsReply(
      403,
      "<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not "
      "authorized to perform this operation.</Message></Error></Errors><RequestID>u</RequestID>"
      "</Response>");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == "UnauthorizedOperation");
}

TEST_CASE("ec2 xml: EC2 timestamps, with and without milliseconds; anything else is unknown") {
  CHECK(ParseEc2TimestampUs("2026-12-07T23:10:00Z") == kNoticeUnixUs);
  CHECK(ParseEc2TimestampUs("2026-12-07T23:10:00.000Z") == kNoticeUnixUs);
  CHECK(ParseEc2TimestampUs("2026-12-07T23:10:01.5Z") == kNoticeUnixUs + 1'500'000);
  CHECK(ParseEc2TimestampUs("") == 0);
  CHECK(ParseEc2TimestampUs("yesterday") == 0);
  CHECK(ParseEc2TimestampUs("2026-12-07T23:10:00") == 0);        // no zone
  CHECK(ParseEc2TimestampUs("2026-12-07T23:10:00+01:00") == 0);  // not UTC
  CHECK(ParseEc2TimestampUs("2026-12-07T23:10:00Z and more") == 0);
}

TEST_CASE("ec2 client: DescribeSpotInstanceRequests uses EC2's wire names") {
  DescribeSpotInstanceRequestsRequest request;
  request.spot_instance_request_ids = {"sir-1"};
  request.filters = {{"instance-id", {"i-a", "i-b"}}};
  request.max_results = 5;
  request.next_token = "n";
  CHECK(CanonicalQueryString(SpotInstanceRequestsParams(request)) ==
        "Filter.1.Name=instance-id&Filter.1.Value.1=i-a&Filter.1.Value.2=i-b&MaxResults=5&"
        "NextToken=n&SpotInstanceRequestId.1=sir-1");
}

class ScriptedTransport : public HttpTransport {
 public:
  std::deque<HttpResponse> replies;
  std::vector<HttpRequest> sent;
  Ec2Outcome<HttpResponse> Send(const HttpEndpoint&, const HttpRequest& request) override {
    sent.push_back(request);
    REQUIRE_FALSE(replies.empty());
    HttpResponse reply = replies.front();
    replies.pop_front();
    return reply;
  }
};

HttpResponse Ok(std::string body) {
  HttpResponse response;
  response.status = 200;
  response.body = std::move(body);
  return response;
}

TEST_CASE("ec2 client: every page of spot requests, following nextToken") {
  auto transport = std::make_shared<ScriptedTransport>();
  transport->replies = {Ok(kSpotRequestsPage), Ok(kLastPage)};
  Ec2ClientOptions options;
  HttpEndpoint::Parse("http://127.0.0.1:5123", &options.endpoint, nullptr);
  options.credentials = {"AKIDEXAMPLE", "secret", ""};
  Ec2Client client(options, transport);
  DescribeSpotInstanceRequestsRequest request;
  request.filters = {{"instance-id", {"i-1234567890abcdef0", "i-0598c7d356eba48d7", "i-0ffee"}}};
  const auto all = client.DescribeAllSpotInstanceRequests(request);
  REQUIRE_MESSAGE(all.ok(), all.error().ToString());
  REQUIRE(all.value().size() == 3);
  CHECK(all.value()[2].spot_instance_request_id == "sir-5e6f7a8b");
  REQUIRE(transport->sent.size() == 2);
  CHECK(transport->sent[0].body.find("Action=DescribeSpotInstanceRequests") != std::string::npos);
  CHECK(transport->sent[0].body.find("NextToken") == std::string::npos);
  CHECK(transport->sent[1].body.find("NextToken=eyJ2IjoiMyJ9") != std::string::npos);
  CHECK(transport->sent[1].body.find("Filter.1.Value.3=i-0ffee") != std::string::npos);
}

TEST_CASE("spot interruption: the status codes that are notices, and the action each announces") {
  CHECK(InterruptionActionOfStatus("marked-for-termination") == "terminate");
  CHECK(InterruptionActionOfStatus("marked-for-stop") == "stop");
  CHECK(InterruptionActionOfStatus("marked-for-hibernation") == "hibernate");
  for (const char* other : {"fulfilled", "instance-terminated-by-user",
                            "instance-terminated-no-capacity", "pending-fulfillment", ""}) {
    CHECK(InterruptionActionOfStatus(other).empty());
  }
}

TEST_CASE("spot interruption: a notice's deadline on the caller's clock") {
  const int64_t host_now = 5'000'000'000;  // a host clock that is not the wall clock
  // Seen 3 s after EC2 marked the request: 117 s left.
  CHECK(SpotNoticeDeadlineUs(kNoticeUnixUs, host_now, kNoticeUnixUs + 3'000'000) ==
        host_now + 117'000'000);
  // Seen after the two minutes (the poll was late): due now, not in the past.
  CHECK(SpotNoticeDeadlineUs(kNoticeUnixUs, host_now, kNoticeUnixUs + 200'000'000) == host_now);
  // A wall clock behind EC2's does not give more than two minutes.
  CHECK(SpotNoticeDeadlineUs(kNoticeUnixUs, host_now, kNoticeUnixUs - 30'000'000) ==
        host_now + kSpotNoticeLeadUs);
  // No notice time: two minutes from now.
  CHECK(SpotNoticeDeadlineUs(0, host_now, kNoticeUnixUs) == host_now + kSpotNoticeLeadUs);
}

}  // namespace
}  // namespace tessera::aws
