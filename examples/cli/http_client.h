// A tiny synchronous HTTP/1.1 client for tessctl: one connection per request, plain HTTP only.
//
// Thread safety: an HttpClient holds no connection between calls; use one per thread.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace tessera::cli {

// Where tesserad listens, parsed from a URL such as "http://127.0.0.1:8080" or
// "http://[::1]:8080/prefix".
struct ServerAddress {
  std::string host;
  std::string port = "80";
  std::string base_path;  // prepended to every request target; no trailing '/'.
};

// Parses `url`. Returns false and sets `error` for anything but an http:// URL.
bool ParseServerUrl(const std::string& url, ServerAddress* address, std::string* error);

struct HttpResponse {
  // The HTTP status, or 0 when no response came back (refused, reset, timed out); then
  // `transport_error` says why.
  int status = 0;
  std::string body;
  std::string transport_error;
};

class HttpClient {
 public:
  // `token` empty sends no Authorization header.
  HttpClient(ServerAddress address, std::string token);

  // Sends one request and waits for the whole response, for at most `timeout`. `target` is the
  // path and query, without the base path. `body` non-empty is sent as application/json.
  HttpResponse Send(const std::string& method, const std::string& target, const std::string& body,
                    const std::map<std::string, std::string>& headers,
                    std::chrono::milliseconds timeout) const;

 private:
  ServerAddress address_;
  std::string token_;
};

// Percent-encodes a query parameter value or path segment.
std::string UrlEncode(const std::string& text);

}  // namespace tessera::cli
