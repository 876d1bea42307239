// The plain HTTP values the Kubernetes transport carries (kube_transport.h): the server's URL
// split into its parts, one request, one reply, and the per-call limits (a deadline and a stop
// token) every blocking call of this library takes.
#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::kube {

using Headers = std::vector<std::pair<std::string, std::string>>;

// The first header named `name` (case-insensitive) in `headers`, or "".
std::string FindHeader(const Headers& headers, std::string_view name);

struct ServerUrl {
  std::string scheme;       // "https" or "http"
  std::string host;         // "10.0.0.1", "api.example", "::1" (no brackets)
  std::string port;         // "6443"; the scheme's default when the URL has none
  std::string path_prefix;  // "" or "/k8s/clusters/c-1" (no trailing slash)

  // "https://10.0.0.1:6443", "http://127.0.0.1:8001/prefix", "https://[::1]:6443". False, with
  // the reason in `error`, on anything else.
  static bool Parse(std::string_view url, ServerUrl* parsed, std::string* error);
  // The Host header: host (bracketed when IPv6), and ":port" unless it is the scheme's default.
  std::string HostHeader() const;
  std::string ToString() const;
};

struct HttpRequest {
  std::string method = "GET";
  std::string target = "/";  // path and query, below the server's path prefix
  Headers headers;           // sent as given; Host, User-Agent and Content-Length are added
  std::string body;
};

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;
  std::string Header(std::string_view name) const { return FindHeader(headers, name); }
};

// The limits of one blocking call: it fails with kTransport ("deadline exceeded") when
// `deadline` passes and with kCancelled as soon as `stop` is requested (from any thread).
struct CallLimits {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::stop_token stop;

  static CallLimits Within(std::chrono::steady_clock::duration timeout, std::stop_token stop = {}) {
    return {std::chrono::steady_clock::now() + timeout, std::move(stop)};
  }
};

}  // namespace tessera::kube
