#include "auth.h"

#include <openssl/evp.h>

#include <cctype>

namespace tesserad {

bool Principal::Owns(std::string_view queue) const {
  if (admin) return true;
  if (queue_prefix.empty()) return false;
  if (queue.substr(0, queue_prefix.size()) != queue_prefix) return false;
  return queue.size() == queue_prefix.size() || queue[queue_prefix.size()] == '/';
}

bool Principal::MayUse(std::string_view priority_class) const {
  if (admin) return true;
  for (const std::string& granted : priority_classes) {
    if (granted == priority_class) return true;
  }
  return false;
}

namespace {

// A token's priority classes: those it lists, else the default class and every class of a
// lower or equal value, in the configured order.
std::vector<std::string> GrantedClasses(const tessera::v1::DaemonConfig& config,
                                        const tessera::v1::TokenConfig& token) {
  if (token.priority_classes_size() > 0) {
    return {token.priority_classes().begin(), token.priority_classes().end()};
  }
  int32_t ceiling = 0;
  for (const auto& c : config.priority_classes()) {
    if (c.name() == config.default_priority_class()) ceiling = c.value();
  }
  std::vector<std::string> granted;
  for (const auto& c : config.priority_classes()) {
    if (c.value() <= ceiling) granted.push_back(c.name());
  }
  return granted;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

TokenAuthenticator::TokenAuthenticator(const tessera::v1::DaemonConfig& config) {
  for (const auto& token : config.auth().tokens()) {
    std::string digest = token.sha256();
    for (char& c : digest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    by_digest_[digest] = Principal{
        token.name(), token.admin(), token.queue_prefix(),
        token.admin() ? std::vector<std::string>() : GrantedClasses(config, token), digest};
  }
}

std::optional<Principal> TokenAuthenticator::Authenticate(std::string_view authorization) const {
  if (by_digest_.empty()) return Principal{"anonymous", true, "", {}, ""};
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization.size() <= kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) !=
        std::tolower(static_cast<unsigned char>(kScheme[i]))) {
      return std::nullopt;
    }
  }
  auto it = by_digest_.find(Sha256Hex(authorization.substr(kScheme.size())));
  if (it == by_digest_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tesserad
