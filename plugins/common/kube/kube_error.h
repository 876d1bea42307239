// KubeError and KubeOutcome<T>: how a Kubernetes API call fails. The API server answers a failed
// request with a `Status` object ({"kind":"Status","status":"Failure","message":…,
// "reason":"NotFound","code":404,"details":{…}}); ErrorFromReply turns that body and its HTTP
// status into a KubeError whose `kind` names the case a caller branches on (not found, already
// exists, conflict, invalid, expired resource version, throttled, server error, …), keeping the
// HTTP code, the server's reason and message. Failures that never reached a reply (connection
// refused, TLS, deadline, a reset mid-reply) are kind kTransport with code 0; a stop requested
// by the caller is kCancelled; a configuration that cannot be used is kConfig; a reply that is
// not what the API promises is kMalformedReply. Plain values, no shared state.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tessera::kube {

enum class KubeErrorKind {
  kTransport,        // no complete reply: connect, TLS, write, read, deadline
  kCancelled,        // the caller's stop token fired
  kConfig,           // kubeconfig / in-cluster / TLS material unusable
  kMalformedReply,   // a reply that is not JSON, or not the shape the API documents
  kBadRequest,       // 400
  kUnauthorized,     // 401: no or bad credentials (a rotated token: re-read it)
  kForbidden,        // 403: RBAC says no
  kNotFound,         // 404
  kAlreadyExists,    // 409, reason AlreadyExists (a create of a name in use)
  kConflict,         // 409, reason Conflict (stale resourceVersion on update, binding taken)
  kGone,             // 410, reason Expired/Gone: the resourceVersion is compacted; relist
  kInvalid,          // 422: the object fails validation
  kTooManyRequests,  // 429: throttled (Retry-After says when to come back)
  kServerError,      // 5xx
  kOther,            // any other non-2xx status
};

// "Transport", "NotFound", … (for messages and logs).
std::string_view KubeErrorKindName(KubeErrorKind kind);

struct KubeError {
  KubeErrorKind kind = KubeErrorKind::kTransport;
  int http_status = 0;  // 0 when no reply came back
  std::string reason;   // Status.reason as sent ("NotFound", "AlreadyExists", "Expired", …)
  std::string message;  // Status.message, or what failed and where
  // From the Retry-After header (seconds) or Status.details.retryAfterSeconds, when sent.
  std::optional<std::chrono::seconds> retry_after;
  // kTransport only: the failure came before any byte of the request was written (resolve,
  // connect, TLS handshake), so the server cannot have acted on it; even a create may be resent.
  bool unsent = false;

  // Whether the same request may be sent again after a back-off: 429, 5xx, and transport
  // failures. Whether it is *safe* to resend depends on the verb as well (retry_policy.h).
  bool Retryable() const;
  // "NotFound (HTTP 404): pods \"x\" not found".
  std::string ToString() const;
};

KubeError MakeError(KubeErrorKind kind, std::string message);

// The error a non-2xx reply means: `body` is parsed as a Status when it is one (the kind comes
// from the HTTP status and, for 409, from Status.reason); otherwise the kind comes from the HTTP
// status alone and the message is the start of the body. `retry_after_header` is the raw
// Retry-After header ("" when absent); a whole number of seconds is honoured.
KubeError ErrorFromReply(int http_status, std::string_view body,
                         std::string_view retry_after_header = {});

// A value or the error that prevented it.
template <typename T>
class KubeOutcome {
 public:
  KubeOutcome(T value) : value_(std::move(value)) {}          // NOLINT: implicit, as StatusOr
  KubeOutcome(KubeError error) : error_(std::move(error)) {}  // NOLINT
  bool ok() const { return value_.has_value(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const KubeError& error() const { return error_; }

 private:
  std::optional<T> value_;
  KubeError error_;
};

// For calls with no value (a delete whose reply is not needed, a config check).
struct Done {};

}  // namespace tessera::kube
