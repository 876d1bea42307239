// Spot interruption notices. Two minutes before EC2 stops, hibernates or terminates a spot
// instance it says so in two places:
//
// On the instance, through the instance metadata service (IMDSv2):
// `GET /latest/meta-data/spot/instance-action` on 169.254.169.254 answers {"action":
// "terminate"|"stop"|"hibernate", "time": "<UTC ISO 8601>"}; until then it answers 404. IMDSv2
// first asks for a session token with `PUT /latest/api/token` (header
// X-aws-ec2-metadata-token-ttl-seconds) and sends it back as X-aws-ec2-metadata-token. AWS
// suggests polling every 5 s. PollSpotInstanceAction() is one poll: token, then the notice. It
// runs on the instance itself (an agent on a burst node), so it takes the metadata endpoint;
// tests give the fault proxy's.
//
// To the account, in DescribeSpotInstanceRequests (Ec2Client): the instance's spot request gets
// the status code marked-for-termination, marked-for-stop or marked-for-hibernation, its
// updateTime the time of the notice. That is what a scheduler host, which cannot reach the
// instance's IMDS, reads; InterruptionActionOfStatus and SpotNoticeDeadlineUs interpret it.
//
// Stateless and thread-safe as far as the transport is.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aws/ec2_error.h"
#include "aws/http_transport.h"

namespace tessera::aws {

struct SpotInstanceAction {
  std::string action;  // "terminate", "stop" or "hibernate"
  std::string time;    // when EC2 will act, e.g. "2026-12-02T08:22:00Z"
};

// http://169.254.169.254
HttpEndpoint InstanceMetadataEndpoint();

// nullopt: no interruption scheduled (404). An error: the token request failed (IMDSv2 disabled
// or not on EC2: a TransportError or the HTTP status), the notice request answered something
// other than 200/404, or its JSON lacks "action".
Ec2Outcome<std::optional<SpotInstanceAction>> PollSpotInstanceAction(
    HttpTransport& transport, const HttpEndpoint& metadata,
    std::chrono::seconds token_ttl = std::chrono::seconds(300));

// How long after its notice EC2 acts (it may act sooner).
inline constexpr int64_t kSpotNoticeLeadUs = 120'000'000;

// The action a spot request's status code announces: "terminate" (marked-for-termination),
// "stop" (marked-for-stop) or "hibernate" (marked-for-hibernation); empty for any other code
// (fulfilled, instance-terminated-by-user, …).
std::string InterruptionActionOfStatus(std::string_view status_code);

// When EC2 will act on a notice, on the caller's clock: the notice's time `notice_unix_us`
// (UTC, microseconds; 0: unknown) plus kSpotNoticeLeadUs, moved onto the caller's clock
// (`now_us`) by where the wall clock stands (`wall_now_unix_us`), and kept within [now_us,
// now_us + kSpotNoticeLeadUs] (a notice seen late is due now; a wall clock behind EC2's cannot
// stretch the two minutes). An unknown time gives now_us + kSpotNoticeLeadUs.
int64_t SpotNoticeDeadlineUs(long long notice_unix_us, int64_t now_us, long long wall_now_unix_us);

}  // namespace tessera::aws
