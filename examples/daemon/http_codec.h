// How tesserad reads requests and writes responses: query strings, protobuf bodies as JSON (the
// proto3 JSON mapping) or binary when the client sends or accepts application/x-protobuf, and
// errors as {"code":"NOT_FOUND","message":"..."} with the HTTP status that matches the library's
// status code, and "field":"task.gpu_count" beside them when the library names the field at
// fault (Status::field()). Every route uses these, so all endpoints speak the same dialect.
//
// Thread safety: free functions on values.
#pragma once

#include <boost/beast/http.hpp>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <google/protobuf/message.h>

#include "tessera/status.h"

namespace tesserad {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

// A response whose body is a file streamed from disk (a store backup), which may be far larger
// than a response held in memory should be.
using FileResponse = boost::beast::http::response<boost::beast::http::file_body>;

// What a request gets: almost always an HttpResponse.
using ApiResponse = std::variant<HttpResponse, FileResponse>;

// How an asynchronous handler answers: with a function that encodes the response, so that the
// caller runs the encoding on a thread of its choosing (not the library's commit thread).
using Responder = std::function<void(std::function<ApiResponse()> encode)>;

// Ends an asynchronous request early (its client went away); its Responder still runs, once.
// Null for a request that cannot be cancelled.
using Canceller = std::function<void()>;

inline constexpr std::string_view kProtobufType = "application/x-protobuf";
inline constexpr std::string_view kJsonType = "application/json";

// Boost 1.74's Beast has its own string_view.
inline std::string_view Sv(boost::beast::string_view s) { return {s.data(), s.size()}; }

// The HTTP status for a library status code (INVALID_ARGUMENT 400, NOT_FOUND 404, ...).
int HttpStatusFor(tessera::StatusCode code);

// "%2F" → "/"; with `plus_is_space` (query strings) "+" → " ".
std::string PercentDecode(std::string_view s, bool plus_is_space);

// A parsed query string; a key may repeat (?state=RUNNING&state=PENDING).
using Query = std::multimap<std::string, std::string, std::less<>>;
Query ParseQuery(std::string_view query);
std::optional<std::string> First(const Query& query, std::string_view key);

// The integer value of `key`, or `fallback` when absent.
// Errors: INVALID_ARGUMENT "<key>: not an integer: "<text>"".
template <typename Int>
tessera::StatusOr<Int> QueryInt(const Query& query, std::string_view key, Int fallback) {
  auto text = First(query, key);
  if (!text) return fallback;
  Int value{};
  auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || p != text->data() + text->size()) {
    return tessera::InvalidFieldError(std::string(key), "not an integer: \"" + *text + "\"");
  }
  return value;
}

// A response to `request` (same HTTP version and keep-alive) with this status and body.
HttpResponse MakeResponse(const HttpRequest& request, int status, std::string_view content_type,
                          std::string body);

// The JSON error body every failed request gets, with no request to answer (HTTP/1.1):
// {"code":...,"message":...}, with "field" when `field` is not empty.
HttpResponse ErrorResponse(int http_status, std::string_view code, std::string_view message,
                           std::string_view field = {});
// The error for a failed library call, answering `request`.
HttpResponse ErrorFor(const HttpRequest& request, const tessera::Status& status);
// 405 with an Allow header ("GET, POST").
HttpResponse MethodNotAllowed(const HttpRequest& request, std::string_view allow);
// 403 PERMISSION_DENIED.
HttpResponse Forbidden(const HttpRequest& request, const std::string& what);

// Refuses a request header that HTTP/1.1 framing allows but a server must not guess at:
// Content-Length together with Transfer-Encoding (RFC 9112 section 6.1; a proxy in front could
// frame it differently, smuggling a second request).
// Errors: INVALID_ARGUMENT "Content-Length together with Transfer-Encoding".
tessera::Status CheckFraming(const HttpRequest& request);
// Whether the client waits for "100 Continue" before it sends the body (Expect: 100-continue).
bool ExpectsContinue(const HttpRequest& request);

// Reads the body as binary protobuf (Content-Type: application/x-protobuf) or JSON. Strict
// either way: a binary field the message type does not declare, or JSON that is not RFC 8259
// JSON (a trailing comma), is refused.
// Errors: INVALID_ARGUMENT "request body: ...".
tessera::Status ParseBody(const HttpRequest& request, google::protobuf::Message* message);
// 200 with `message` as JSON, or binary when the request's Accept names application/x-protobuf.
HttpResponse Reply(const HttpRequest& request, const google::protobuf::Message& message);

}  // namespace tesserad
