// How an idempotency key and its scope (SubmitOptions) are kept in the store's one
// idempotency_key column, whose unique index then makes keys unique per scope: "<scope>\x1f<key>",
// or the bare key in the empty scope. Neither part may contain the separator 0x1f, so no key of
// one scope can be spelled as a key of another. Keys stored before scopes existed are bare, so
// they stay in the empty scope.
//
// Thread safety: free functions on values.
#pragma once

#include <string>
#include <string_view>

#include "tessera/scheduler.h"
#include "tessera/status.h"

namespace tessera {

inline constexpr char kIdempotencyScopeSeparator = '\x1f';

// The column value for `options`, "" for no key. Errors: INVALID_ARGUMENT naming
// idempotency_key or idempotency_scope when either holds the separator.
inline StatusOr<std::string> StoredIdempotencyKey(const SubmitOptions& options) {
  if (options.idempotency_key.find(kIdempotencyScopeSeparator) != std::string::npos) {
    return InvalidFieldError("idempotency_key", "must not contain the byte 0x1f");
  }
  if (options.idempotency_scope.find(kIdempotencyScopeSeparator) != std::string::npos) {
    return InvalidFieldError("idempotency_scope", "must not contain the byte 0x1f");
  }
  if (options.idempotency_key.empty() || options.idempotency_scope.empty()) {
    return options.idempotency_key;
  }
  return options.idempotency_scope + kIdempotencyScopeSeparator + options.idempotency_key;
}

// The key as its submitter gave it: the column value without its scope.
inline std::string UnscopedIdempotencyKey(std::string_view stored) {
  const size_t separator = stored.find(kIdempotencyScopeSeparator);
  return std::string(separator == std::string_view::npos ? stored : stored.substr(separator + 1));
}

}  // namespace tessera
