// Status and StatusOr<T>: how every public Tessera call reports success or failure.
//
// A Status is either OK or carries one of a handful of codes plus a message written for a human
// (it names the field or the resource at fault). When one input field is at fault, field() names
// it as data too, so that a form can mark it without parsing the message:
//
//   Status s = scheduler->CreateQueue(spec);
//   if (s.code() == StatusCode::kInvalidArgument && !s.field().empty())
//     form.MarkInvalid(s.field(), s.message());   // "weight", "cap.gpu_milli", ...
//
// StatusOr<T> holds either a value or a non-OK Status. No exception crosses the public API.
//
// Thread safety: both are plain values; distinct objects may be used from distinct threads.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "tessera/export.h"

namespace tessera {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the caller's input is wrong; the message names the field.
  kNotFound,            // the named job, queue or node does not exist.
  kAlreadyExists,       // creating something that exists.
  kFailedPrecondition,  // the system is not in a state that allows the call (e.g. queue not empty).
  kResourceExhausted,   // out of disk, store quota or another bounded resource.
  kUnavailable,         // transient: retry later (store locked, scheduler shutting down).
  kPermissionDenied,    // the caller may not do this.
  kInternal,            // a broken invariant; a bug.
};

// Returns "INVALID_ARGUMENT" and so on.
TESSERA_EXPORT std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] TESSERA_EXPORT Status {
 public:
  Status() = default;  // OK.
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "INVALID_ARGUMENT: task.cpu_milli: must be > 0".
  std::string ToString() const;

  // The input field at fault, as a path into what the call was given: "task.gpu_count" or
  // "tasks" of a JobSpec, "cap.gpu_milli" of a QueueSpec, "store.busy_timeout" of Options,
  // "idempotency_key" of SubmitOptions, "queues[1].name" of a declared queue tree. Empty when
  // the error is not about one field. Set for INVALID_ARGUMENT by the validation of those
  // inputs (docs/errors.md says which); the message then starts with the same path.
  const std::string& field() const { return field_; }

  // Returns a copy naming `field` as the field at fault; OK stays OK.
  Status WithField(std::string field) const;

  // Returns a copy whose message is "<context>: <message>"; the field stays. OK stays OK.
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_ && a.field_ == b.field_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
};

TESSERA_EXPORT std::ostream& operator<<(std::ostream& os, const Status& status);

inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
// INVALID_ARGUMENT about one field: the message "<field>: <problem>", and field() set.
inline Status InvalidFieldError(std::string field, std::string_view problem) {
  std::string message = field + ": ";
  message += problem;
  return Status(StatusCode::kInvalidArgument, std::move(message)).WithField(std::move(field));
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status ResourceExhaustedError(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status PermissionDeniedError(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

namespace internal {
// Prints "StatusOr holds no value: <status>" to stderr and aborts.
[[noreturn]] TESSERA_EXPORT void AbortNoValue(const Status& status);
}  // namespace internal

// Either a T or a non-OK Status. Constructing one from an OK Status is a bug and yields an
// Internal error instead.
//
// Safe use: check ok() first, or use value_or(). Reading the value of an error is a bug; in every
// build type it prints "StatusOr holds no value: <status>" to stderr and aborts, so the message
// names the failure instead of a segfault. On a temporary (`*scheduler->ListQueues()`) the value
// is returned by value, so `for (auto& q : *s->ListQueues())` iterates a live object, not a
// reference into the destroyed StatusOr.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design.
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design.
    if (status_.ok()) status_ = InternalError("StatusOr constructed from an OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // Precondition: ok(); aborts with the status printed otherwise.
  T& value() & {
    CheckHasValue();
    return *value_;
  }
  const T& value() const& {
    CheckHasValue();
    return *value_;
  }
  T value() && {
    CheckHasValue();
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The value, or `fallback` when this holds an error.
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }
  T value_or(T fallback) && { return ok() ? std::move(*value_) : std::move(fallback); }

 private:
  void CheckHasValue() const {
    if (!ok()) internal::AbortNoValue(status_);
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace tessera

// Returns early from the enclosing function when `expr` (a Status) is not OK.
#define TESSERA_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::tessera::Status tessera_status_ = (expr);        \
    if (!tessera_status_.ok()) return tessera_status_; \
  } while (0)

#define TESSERA_STATUS_CONCAT_INNER(a, b) a##b
#define TESSERA_STATUS_CONCAT(a, b) TESSERA_STATUS_CONCAT_INNER(a, b)

// Declares `lhs` from a StatusOr expression, or returns its error.
#define TESSERA_ASSIGN_OR_RETURN(lhs, expr) \
  TESSERA_ASSIGN_OR_RETURN_IMPL(TESSERA_STATUS_CONCAT(tessera_statusor_, __LINE__), lhs, expr)
#define TESSERA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
