#include "tessera/status.h"

#include <cstdio>
#include <cstdlib>

namespace tessera {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {
  if (code_ == StatusCode::kOk) message_.clear();
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithField(std::string field) const {
  if (ok()) return *this;
  Status copy = *this;
  copy.field_ = std::move(field);
  return copy;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_).WithField(field_);
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

namespace internal {

void AbortNoValue(const Status& status) {
  std::fprintf(stderr, "StatusOr holds no value: %s\n", status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

}  // namespace tessera
