#include "aws/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <ctime>

namespace tessera::aws {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

std::string ToHex(const std::uint8_t* bytes, std::size_t size) {
  std::string hex;
  hex.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    hex.push_back(kHexDigits[bytes[i] >> 4]);
    hex.push_back(kHexDigits[bytes[i] & 0x0f]);
  }
  return hex;
}

std::string Lower(std::string_view text) {
  std::string lowered(text);
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lowered;
}

// Trims the value and folds each run of spaces inside it to one, as the canonical form asks.
std::string CanonicalHeaderValue(std::string_view value) {
  std::string folded;
  bool in_space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      in_space = true;
      continue;
    }
    if (in_space && !folded.empty()) folded.push_back(' ');
    in_space = false;
    folded.push_back(c);
  }
  return folded;
}

// Lower-cased names with their canonical values, sorted by name; a repeated name keeps its
// values in the order given, joined with ','.
std::vector<std::pair<std::string, std::string>> CanonicalHeaders(const RequestToSign& request) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [name, value] : request.headers) {
    std::string lowered = Lower(name);
    std::string canonical_value = CanonicalHeaderValue(value);
    bool merged = false;
    for (auto& existing : headers) {
      if (existing.first == lowered) {
        existing.second += "," + canonical_value;
        merged = true;
        break;
      }
    }
    if (!merged) headers.emplace_back(std::move(lowered), std::move(canonical_value));
  }
  std::stable_sort(headers.begin(), headers.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return headers;
}

std::string HeaderValue(const RequestToSign& request, std::string_view lower_name) {
  for (const auto& [name, value] : request.headers) {
    if (Lower(name) == lower_name) return value;
  }
  return {};
}

}  // namespace

std::string CredentialScope::ToString() const {
  return date + "/" + region + "/" + service + "/aws4_request";
}

std::string UriEncode(std::string_view text, bool keep_slash) {
  std::string encoded;
  encoded.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      encoded.push_back(c);
      continue;
    }
    constexpr char kUpperHex[] = "0123456789ABCDEF";
    encoded.push_back('%');
    encoded.push_back(kUpperHex[byte >> 4]);
    encoded.push_back(kUpperHex[byte & 0x0f]);
  }
  return encoded;
}

std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& params) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(params.size());
  for (const auto& [name, value] : params) {
    encoded.emplace_back(UriEncode(name, false), UriEncode(value, false));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string query;
  for (const auto& [name, value] : encoded) {
    if (!query.empty()) query.push_back('&');
    query += name + "=" + value;
  }
  return query;
}

std::string HexSha256(std::string_view data) {
  std::uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return ToHex(digest, sizeof(digest));
}

std::array<std::uint8_t, 32> HmacSha256(std::string_view key, std::string_view data) {
  std::array<std::uint8_t, 32> mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(), &length);
  return mac;
}

std::string SignedHeaderNames(const RequestToSign& request) {
  std::string names;
  for (const auto& [name, value] : CanonicalHeaders(request)) {
    if (!names.empty()) names.push_back(';');
    names += name;
  }
  return names;
}

std::string CanonicalRequest(const RequestToSign& request) {
  std::string canonical = request.method + "\n";
  canonical += UriEncode(request.path.empty() ? "/" : request.path, true) + "\n";
  canonical += CanonicalQueryString(request.query) + "\n";
  for (const auto& [name, value] : CanonicalHeaders(request)) {
    canonical += name + ":" + value + "\n";
  }
  canonical += "\n";
  canonical += SignedHeaderNames(request) + "\n";
  canonical += HexSha256(request.body);
  return canonical;
}

std::string StringToSign(std::string_view amz_date, const CredentialScope& scope,
                         std::string_view canonical_request) {
  std::string text = "AWS4-HMAC-SHA256\n";
  text += std::string(amz_date) + "\n";
  text += scope.ToString() + "\n";
  text += HexSha256(canonical_request);
  return text;
}

std::array<std::uint8_t, 32> SigningKey(std::string_view secret_access_key,
                                        const CredentialScope& scope) {
  auto as_view = [](const std::array<std::uint8_t, 32>& key) {
    return std::string_view(reinterpret_cast<const char*>(key.data()), key.size());
  };
  const std::string first_key = "AWS4" + std::string(secret_access_key);
  const auto date_key = HmacSha256(first_key, scope.date);
  const auto region_key = HmacSha256(as_view(date_key), scope.region);
  const auto service_key = HmacSha256(as_view(region_key), scope.service);
  return HmacSha256(as_view(service_key), "aws4_request");
}

std::string Signature(std::string_view secret_access_key, const CredentialScope& scope,
                      std::string_view string_to_sign) {
  const auto key = SigningKey(secret_access_key, scope);
  const auto mac = HmacSha256(
      std::string_view(reinterpret_cast<const char*>(key.data()), key.size()), string_to_sign);
  return ToHex(mac.data(), mac.size());
}

std::string AuthorizationHeader(const RequestToSign& request, const Credentials& credentials,
                                const CredentialScope& scope, std::string_view amz_date) {
  const std::string string_to_sign = StringToSign(amz_date, scope, CanonicalRequest(request));
  return "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope.ToString() +
         ", SignedHeaders=" + SignedHeaderNames(request) +
         ", Signature=" + Signature(credentials.secret_access_key, scope, string_to_sign);
}

std::string FormatAmzDate(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[17];
  std::strftime(text, sizeof(text), "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

void SignRequest(RequestToSign& request, std::string_view host, const Credentials& credentials,
                 std::string_view region, std::string_view service,
                 std::chrono::system_clock::time_point now) {
  if (HeaderValue(request, "host").empty()) request.headers.emplace_back("Host", host);
  const std::string amz_date = FormatAmzDate(now);
  request.headers.emplace_back("X-Amz-Date", amz_date);
  if (!credentials.session_token.empty()) {
    request.headers.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  const CredentialScope scope{amz_date.substr(0, 8), std::string(region), std::string(service)};
  request.headers.emplace_back("Authorization",
                               AuthorizationHeader(request, credentials, scope, amz_date));
}

}  // namespace tessera::aws
