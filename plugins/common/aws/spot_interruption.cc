#include "aws/spot_interruption.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace tessera::aws {
namespace {

Ec2Error MetadataError(const std::string& what, int status, const std::string& body) {
  Ec2Error error;
  error.code = "InstanceMetadataError";
  error.http_status = status;
  error.message = what + " (HTTP " + std::to_string(status) + "): " + body.substr(0, 200);
  return error;
}

}  // namespace

HttpEndpoint InstanceMetadataEndpoint() {
  HttpEndpoint endpoint;
  endpoint.scheme = "http";
  endpoint.host = "169.254.169.254";
  endpoint.port = "80";
  return endpoint;
}

Ec2Outcome<std::optional<SpotInstanceAction>> PollSpotInstanceAction(
    HttpTransport& transport, const HttpEndpoint& metadata, std::chrono::seconds token_ttl) {
  HttpRequest token_request;
  token_request.method = "PUT";
  token_request.target = "/latest/api/token";
  token_request.headers = {
      {"X-aws-ec2-metadata-token-ttl-seconds", std::to_string(token_ttl.count())}};
  auto token = transport.Send(metadata, token_request);
  if (!token.ok()) return token.error();
  if (token.value().status != 200 || token.value().body.empty()) {
    return MetadataError("IMDSv2 token request refused", token.value().status, token.value().body);
  }

  HttpRequest notice_request;
  notice_request.method = "GET";
  notice_request.target = "/latest/meta-data/spot/instance-action";
  notice_request.headers = {{"X-aws-ec2-metadata-token", token.value().body}};
  auto notice = transport.Send(metadata, notice_request);
  if (!notice.ok()) return notice.error();
  if (notice.value().status == 404) return std::optional<SpotInstanceAction>();
  if (notice.value().status != 200) {
    return MetadataError("spot/instance-action", notice.value().status, notice.value().body);
  }
  const auto json = nlohmann::json::parse(notice.value().body, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("action") ||
      !json["action"].is_string()) {
    return MetadataError("spot/instance-action is not {\"action\":…}", 200, notice.value().body);
  }
  SpotInstanceAction action;
  action.action = json["action"].get<std::string>();
  if (json.contains("time") && json["time"].is_string())
    action.time = json["time"].get<std::string>();
  return std::optional<SpotInstanceAction>(std::move(action));
}

std::string InterruptionActionOfStatus(std::string_view status_code) {
  if (status_code == "marked-for-termination") return "terminate";
  if (status_code == "marked-for-stop") return "stop";
  if (status_code == "marked-for-hibernation") return "hibernate";
  return {};
}

int64_t SpotNoticeDeadlineUs(long long notice_unix_us, int64_t now_us, long long wall_now_unix_us) {
  if (notice_unix_us <= 0) return now_us + kSpotNoticeLeadUs;
  const long long left_us = notice_unix_us + kSpotNoticeLeadUs - wall_now_unix_us;
  return now_us + std::clamp<long long>(left_us, 0, kSpotNoticeLeadUs);
}

}  // namespace tessera::aws
