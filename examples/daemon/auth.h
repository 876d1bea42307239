// Bearer-token authentication for tesserad: maps the token in an Authorization header to the
// principal it stands for, an admin or a tenant owning one queue subtree and granted some
// priority classes (auth.tokens in the daemon configuration). Tokens are configured as SHA-256
// hex digests, never in clear.
//
// Thread safety: immutable after construction; Authenticate may be called from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/v1/config.pb.h"

namespace tesserad {

struct Principal {
  std::string name;          // for logs.
  bool admin = false;        // full access.
  std::string queue_prefix;  // a tenant's subtree, e.g. "research/vision".
  // A tenant's priority classes (auth.tokens[].priority_classes, or its default).
  std::vector<std::string> priority_classes;
  std::string token_digest;  // which token it is, for per-token limits.

  // Whether `queue` is the tenant's prefix or lies below it (always true for an admin).
  bool Owns(std::string_view queue) const;
  // Whether the principal may submit jobs of priority class `name` (always true for an admin).
  bool MayUse(std::string_view priority_class) const;
};

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

class TokenAuthenticator {
 public:
  // `config` as completed by tessera::ApplyDaemonConfigDefaults: its auth section, and its
  // priority classes for the classes a token gets by default.
  explicit TokenAuthenticator(const tessera::v1::DaemonConfig& config);

  // The principal the "Authorization: Bearer <token>" header value maps to, or nullopt when the
  // header is missing, malformed or names an unknown token. With no tokens configured every
  // caller is an admin (configuration validation allows that only on a loopback listener).
  std::optional<Principal> Authenticate(std::string_view authorization) const;

 private:
  std::unordered_map<std::string, Principal> by_digest_;
};

}  // namespace tesserad
