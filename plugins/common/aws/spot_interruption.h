// Spot interruption notices from the instance metadata service (IMDSv2). Two minutes before EC2
// stops, hibernates or terminates a spot instance, `GET /latest/meta-data/spot/instance-action`
// on 169.254.169.254 answers {"action": "terminate"|"stop"|"hibernate", "time": "<UTC ISO
// 8601>"}; until then it answers 404. IMDSv2 first asks for a session token with
// `PUT /latest/api/token` (header X-aws-ec2-metadata-token-ttl-seconds) and sends it back as
// X-aws-ec2-metadata-token. AWS suggests polling every 5 s.
//
// PollSpotInstanceAction() is one poll: token, then the notice. It runs on the instance itself
// (an agent on a burst node), so it takes the metadata endpoint; tests give the fault proxy's.
// Stateless and thread-safe as far as the transport is.
#pragma once

#include <chrono>
#include <optional>
#include <string>

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

}  // namespace tessera::aws
