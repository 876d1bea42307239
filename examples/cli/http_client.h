// A tiny synchronous HTTP/1.1 client for tessctl: one connection per request, plain HTTP or
// HTTPS (TLS 1.2+, the server's certificate and name verified unless told otherwise; through
// the TLS module, tls_transport.h).
//
// Thread safety: an HttpClient holds no connection between calls; use one per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace tessera::cli {

class TlsTransport;

// Where tesserad listens, parsed from a URL such as "http://127.0.0.1:8080",
// "https://scheduler.example.com" or "http://[::1]:8080/prefix".
struct ServerAddress {
  bool tls = false;  // https://
  std::string host;
  std::string port = "80";  // 443 for https:// without a port.
  std::string base_path;    // prepended to every request target; no trailing '/'.
};

// Parses `url`. Returns false and sets `error` for anything but an http:// or https:// URL.
bool ParseServerUrl(const std::string& url, ServerAddress* address, std::string* error);

// How the server's certificate is checked on https://.
struct TlsOptions {
  // PEM certificates to trust instead of the system's store (a private CA, or a self-signed
  // server certificate). Empty: the system trust store.
  std::string ca_file;
  // Skip verification of the certificate and the host name. For testing only: anyone on the path
  // can then read and change the traffic, bearer token included.
  bool insecure = false;
};

struct HttpResponse {
  // The HTTP status, or 0 when no response came back (refused, reset, timed out, a failed TLS
  // handshake or certificate verification); then `transport_error` says why.
  int status = 0;
  std::string body;
  std::string content_type;  // of `body`, as the server said.
  std::string transport_error;
};

// Where a downloaded body goes as it arrives.
struct BodySink {
  // Stores one piece; false aborts the transfer.
  std::function<bool(const char* data, size_t size)> write;
  // Bytes received so far and the total when the server said (Content-Length). May be empty.
  std::function<void(uint64_t received, std::optional<uint64_t> total)> progress;
};

class HttpClient {
 public:
  // `token` empty sends no Authorization header. `tls` (TlsTransport::Load) is required for an
  // https:// address and unused for http://.
  HttpClient(ServerAddress address, std::string token,
             std::shared_ptr<const TlsTransport> tls = nullptr);

  // Sends one request and waits for the whole response, for at most `timeout`. `target` is the
  // path and query, without the base path. `body` non-empty is sent as application/json.
  HttpResponse Send(const std::string& method, const std::string& target, const std::string& body,
                    const std::map<std::string, std::string>& headers,
                    std::chrono::milliseconds timeout) const;

  // GET `target`, with a 2xx body passed to `sink` piece by piece instead of held in memory (a
  // backup may be gigabytes); `timeout` bounds each piece, so a slow but steady transfer
  // finishes. An error response's body is in the result as with Send.
  HttpResponse Download(const std::string& target, std::chrono::milliseconds timeout,
                        const BodySink& sink) const;

 private:
  HttpResponse Perform(const std::string& method, const std::string& target,
                       const std::string& body, const std::map<std::string, std::string>& headers,
                       std::chrono::milliseconds timeout, const BodySink* sink) const;

  ServerAddress address_;
  std::string token_;
  std::shared_ptr<const TlsTransport> tls_;
};

// Percent-encodes a query parameter value or path segment.
std::string UrlEncode(const std::string& text);

}  // namespace tessera::cli
