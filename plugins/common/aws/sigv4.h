// AWS Signature Version 4: how a request to an AWS API proves who sent it and that nothing in it
// changed on the way. The signer hashes a canonical form of the request (method, path, sorted
// query, the signed headers in lower case, the body's SHA-256), signs that hash together with the
// time and a credential scope (date/region/service/aws4_request) with a key derived from the
// secret by a chain of HMAC-SHA256s, and sends the result in an `Authorization` header beside
// `X-Amz-Date` (and `X-Amz-Security-Token` for temporary credentials).
//
// The steps are separate functions so that each can be checked against AWS's published test
// suite (tests/unit/plugins_common/aws_sigv4_test.cc); SignRequest() runs them all for one
// request. What it leaves out: the path is signed as given ("/" for the EC2 Query API), without
// the dot-segment normalisation and double encoding of the generic suite, and S3's unsigned
// payload and chunked modes are not there. All functions are pure and thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::aws {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  // Empty for long-term keys; set for temporary ones (STS, instance roles), then sent and signed
  // as X-Amz-Security-Token.
  std::string session_token;
};

// What a signature is valid for: a day, a region and a service ("ec2").
struct CredentialScope {
  std::string date;  // YYYYMMDD, the first eight characters of the X-Amz-Date value
  std::string region;
  std::string service;
  // "<date>/<region>/<service>/aws4_request"
  std::string ToString() const;
};

// A request as the signer sees it. Query parameters are unencoded names and values (the signer
// encodes them); header names keep the caller's case (the signer lowers them). Every header in
// `headers` is signed, so callers add only headers that no proxy will change.
struct RequestToSign {
  std::string method = "POST";
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// Percent-encodes everything but RFC 3986's unreserved characters (A-Z a-z 0-9 - _ . ~), with
// upper-case hex and %20 for a space; a '/' stays when `keep_slash` (paths).
std::string UriEncode(std::string_view text, bool keep_slash);

// "name=value" pairs encoded with UriEncode, sorted by name then value, joined with '&': the
// query line of the canonical request, and the form body of an EC2 Query API call.
std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& params);

std::string HexSha256(std::string_view data);
std::array<std::uint8_t, 32> HmacSha256(std::string_view key, std::string_view data);

// Lower-case header names, sorted, joined with ';'.
std::string SignedHeaderNames(const RequestToSign& request);

// The six lines: method, encoded path, canonical query, "name:value" headers (names lowered,
// values trimmed with inner runs of spaces folded to one, repeated names joined with ','), the
// signed header names, hex SHA-256 of the body.
std::string CanonicalRequest(const RequestToSign& request);

// "AWS4-HMAC-SHA256\n<amz_date>\n<scope>\n<hex SHA-256 of canonical_request>".
std::string StringToSign(std::string_view amz_date, const CredentialScope& scope,
                         std::string_view canonical_request);

// HMAC chain: "AWS4"+secret → date → region → service → "aws4_request".
std::array<std::uint8_t, 32> SigningKey(std::string_view secret_access_key,
                                        const CredentialScope& scope);

// Hex HMAC-SHA256 of `string_to_sign` under the signing key.
std::string Signature(std::string_view secret_access_key, const CredentialScope& scope,
                      std::string_view string_to_sign);

// The Authorization header's value for `request` exactly as it stands (its headers must already
// hold the date the scope names, as X-Amz-Date or Date).
std::string AuthorizationHeader(const RequestToSign& request, const Credentials& credentials,
                                const CredentialScope& scope, std::string_view amz_date);

// YYYYMMDDTHHMMSSZ in UTC.
std::string FormatAmzDate(std::chrono::system_clock::time_point time);

// Signs `request` for `region`/`service` at `now`: sets Host (from `host`, when the request has
// none), X-Amz-Date, X-Amz-Security-Token (temporary credentials), then Authorization. The
// Authorization header itself is not signed.
void SignRequest(RequestToSign& request, std::string_view host, const Credentials& credentials,
                 std::string_view region, std::string_view service,
                 std::chrono::system_clock::time_point now);

}  // namespace tessera::aws
