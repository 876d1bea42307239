#include "kube/kube_error.h"

#include <charconv>
#include <nlohmann/json.hpp>

namespace tessera::kube {
namespace {

KubeErrorKind KindFromStatus(int http_status, std::string_view reason) {
  switch (http_status) {
    case 400:
      return KubeErrorKind::kBadRequest;
    case 401:
      return KubeErrorKind::kUnauthorized;
    case 403:
      return KubeErrorKind::kForbidden;
    case 404:
      return KubeErrorKind::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? KubeErrorKind::kAlreadyExists : KubeErrorKind::kConflict;
    case 410:
      return KubeErrorKind::kGone;
    case 422:
      return KubeErrorKind::kInvalid;
    case 429:
      return KubeErrorKind::kTooManyRequests;
    default:
      return http_status >= 500 && http_status <= 599 ? KubeErrorKind::kServerError
                                                      : KubeErrorKind::kOther;
  }
}

std::optional<std::chrono::seconds> ParseSeconds(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  long long seconds = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (error != std::errc() || end != text.data() + text.size() || seconds < 0) return std::nullopt;
  return std::chrono::seconds(seconds);
}

}  // namespace

std::string_view KubeErrorKindName(KubeErrorKind kind) {
  switch (kind) {
    case KubeErrorKind::kTransport:
      return "Transport";
    case KubeErrorKind::kCancelled:
      return "Cancelled";
    case KubeErrorKind::kConfig:
      return "Config";
    case KubeErrorKind::kMalformedReply:
      return "MalformedReply";
    case KubeErrorKind::kBadRequest:
      return "BadRequest";
    case KubeErrorKind::kUnauthorized:
      return "Unauthorized";
    case KubeErrorKind::kForbidden:
      return "Forbidden";
    case KubeErrorKind::kNotFound:
      return "NotFound";
    case KubeErrorKind::kAlreadyExists:
      return "AlreadyExists";
    case KubeErrorKind::kConflict:
      return "Conflict";
    case KubeErrorKind::kGone:
      return "Gone";
    case KubeErrorKind::kInvalid:
      return "Invalid";
    case KubeErrorKind::kTooManyRequests:
      return "TooManyRequests";
    case KubeErrorKind::kServerError:
      return "ServerError";
    case KubeErrorKind::kOther:
      return "Other";
  }
  return "Unknown";
}

bool KubeError::Retryable() const {
  return kind == KubeErrorKind::kTransport || kind == KubeErrorKind::kTooManyRequests ||
         kind == KubeErrorKind::kServerError;
}

std::string KubeError::ToString() const {
  std::string text(KubeErrorKindName(kind));
  if (http_status != 0) text += " (HTTP " + std::to_string(http_status) + ")";
  if (!reason.empty() && reason != KubeErrorKindName(kind)) text += " [" + reason + "]";
  if (!message.empty()) text += ": " + message;
  return text;
}

KubeError MakeError(KubeErrorKind kind, std::string message) {
  KubeError error;
  error.kind = kind;
  error.message = std::move(message);
  return error;
}

KubeError ErrorFromReply(int http_status, std::string_view body,
                         std::string_view retry_after_header) {
  KubeError error;
  error.http_status = http_status;
  const nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    error.reason = status.value("reason", "");
    error.message = status.value("message", "");
    const auto details = status.find("details");
    if (details != status.end() && details->is_object()) {
      const auto seconds = details->find("retryAfterSeconds");
      if (seconds != details->end() && seconds->is_number_integer() && *seconds >= 0) {
        error.retry_after = std::chrono::seconds(seconds->get<long long>());
      }
    }
  } else {
    constexpr std::size_t kMaxQuoted = 200;
    error.message = std::string(body.substr(0, kMaxQuoted));
    if (body.size() > kMaxQuoted) error.message += "…";
    if (error.message.empty()) error.message = "empty reply body";
  }
  error.kind = KindFromStatus(http_status, error.reason);
  if (const auto header = ParseSeconds(retry_after_header)) error.retry_after = header;
  return error;
}

}  // namespace tessera::kube
