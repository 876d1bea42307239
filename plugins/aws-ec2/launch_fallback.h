// LaunchWithFallback: one provisioning request's RunInstances calls, falling back across the
// group's instance types and zones when EC2 has no capacity where it was asked.
//
// Order: the group's instance types in their configured order, and for each type its zones in
// their configured order (type-major: the preferred type is tried in every zone before the next
// type). Each (type, zone) is asked for what is still missing (MinCount 1, MaxCount the rest);
// EC2 may launch fewer than MaxCount, and the rest is asked of the next candidate. A candidate
// that answers InsufficientInstanceCapacity, InsufficientCapacity, MaxSpotInstanceCountExceeded,
// SpotMaxPriceTooLow or UnfulfillableCapacity (Ec2Error::IsCapacityError) is noted and the next
// is tried; any other error (AuthFailure, a bad parameter, throttling the client's back-off did
// not outlast) ends the launch at once, since another type or zone would meet it too. The
// spot/on-demand choice is the group's: a spot group never launches on-demand (its price is the
// spot price the scheduler budgeted); the autoscaler falls back to an on-demand group.
//
// Idempotency: each candidate's ClientToken is derived from the request id and the candidate's
// position, so the same request sent again (a lost reply, a restarted plugin) gets EC2's first
// answer back instead of a second launch. Every instance is tagged tessera:cluster,
// tessera:node-group and tessera:request-id (how a restarted plugin finds it) and Name.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "aws/ec2_client.h"
#include "node_group_catalog.h"

namespace tessera::aws_ec2 {

inline constexpr char kClusterTag[] = "tessera:cluster";
inline constexpr char kNodeGroupTag[] = "tessera:node-group";
inline constexpr char kRequestIdTag[] = "tessera:request-id";

struct LaunchOutcome {
  std::vector<aws::Ec2Instance> instances;
  // One line per refused candidate: "g5.12xlarge in us-east-1a: InsufficientInstanceCapacity
  // (HTTP 500): ...", and the error that ended the launch, if one did.
  std::vector<std::string> errors;
  bool stopped_by_error = false;  // a non-capacity error ended it
};

// The ClientToken of candidate `index` of `request_id` (at most 64 characters, as EC2 allows).
std::string CandidateClientToken(const std::string& request_id, size_t index);

using RunInstancesFn =
    std::function<aws::Ec2Outcome<aws::RunInstancesResult>(const aws::RunInstancesRequest&)>;

LaunchOutcome LaunchWithFallback(const CatalogGroup& group, const std::string& cluster,
                                 const std::string& request_id, int count,
                                 const RunInstancesFn& run_instances);

}  // namespace tessera::aws_ec2
