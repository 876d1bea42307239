// Reading EC2 Query API replies (XML, API version 2016-11-15) with pugixml. Each Parse* function
// takes the HTTP status and the body of one reply: an AWS error document (any status, usually
// 4xx/5xx) becomes its Ec2Error; a success document becomes the typed result; anything else
// (HTML from a proxy, truncated XML, a 2xx without the expected root) is a "MalformedReply"
// error that quotes the start of the body. Elements are matched by name, never by position, and
// unknown elements are skipped, so EC2 adding fields does not break us. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/ec2_error.h"
#include "aws/ec2_types.h"

namespace tessera::aws {

// The error in `body` (<Response><Errors><Error>… or <ErrorResponse><Error>…), or nullopt when
// the body is not an error document.
std::optional<Ec2Error> ParseErrorReply(int http_status, std::string_view body);

Ec2Outcome<RunInstancesResult> ParseRunInstancesReply(int http_status, std::string_view body);
// All instances of all reservations on this page, and the token for the next one.
Ec2Outcome<DescribeInstancesPage> ParseDescribeInstancesReply(int http_status,
                                                              std::string_view body);
Ec2Outcome<std::vector<InstanceStateChange>> ParseTerminateInstancesReply(int http_status,
                                                                          std::string_view body);
Ec2Outcome<SpotPriceHistoryPage> ParseSpotPriceHistoryReply(int http_status, std::string_view body);
// spotInstanceRequestSet: each request's id, instance, state and status (code, message,
// updateTime, also as Unix microseconds when it reads as UTC ISO 8601), and the next token.
Ec2Outcome<SpotInstanceRequestsPage> ParseSpotInstanceRequestsReply(int http_status,
                                                                    std::string_view body);
// instanceTypeSet: type, vCPUs, memory, GPUs (gpuInfo/gpus: name, manufacturer, count, memory).
Ec2Outcome<InstanceTypesPage> ParseInstanceTypesReply(int http_status, std::string_view body);

// "2026-12-07T23:10:00Z" or with fractional seconds ("…:00.250Z"), as microseconds since the
// Unix epoch; 0 for anything else (no zone, another offset, trailing text).
long long ParseEc2TimestampUs(const std::string& text);

}  // namespace tessera::aws
