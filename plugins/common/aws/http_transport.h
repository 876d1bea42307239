// HttpTransport: one HTTP request, one reply, for the EC2 client and the instance-metadata
// poller. BeastHttpTransport speaks plain HTTP (a local endpoint: the tests' fault proxy, the
// instance metadata service at 169.254.169.254) or HTTPS with OpenSSL (AWS), chosen by the
// endpoint's scheme; HTTPS verifies the server's certificate chain and host name against the
// system's CA store, or against `ca_file` when one is given. Each Send() opens its own
// connection and closes it after the reply (EC2 calls are rare enough that keep-alive buys
// nothing), under one deadline covering resolve, connect, handshake, write and read.
//
// A failure before a complete reply is an Ec2Error with code "TransportError", status 0, and
// the step that failed in its message. Send() is safe to call from several threads at once:
// each call has its own I/O context and connection.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aws/ec2_error.h"

namespace tessera::aws {

struct HttpEndpoint {
  std::string scheme = "https";  // "http" or "https"
  std::string host;
  std::string port = "443";
  // HTTPS only: a PEM file of trusted CAs in place of the system store (tests with their own CA).
  std::string ca_file;

  // "https://ec2.us-east-1.amazonaws.com", "http://127.0.0.1:5123"; the port defaults to the
  // scheme's, and a path other than "/" is refused. False (and `error`, when not null, says
  // why) on anything else.
  static bool Parse(std::string_view url, HttpEndpoint* endpoint, std::string* error);
  // The Host header: host, and ":port" when it is not the scheme's default.
  std::string HostHeader() const;
};

struct HttpRequest {
  std::string method = "POST";
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;  // sent as given, in this order
  std::string body;
};

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The first header named `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual Ec2Outcome<HttpResponse> Send(const HttpEndpoint& endpoint,
                                        const HttpRequest& request) = 0;
};

class BeastHttpTransport : public HttpTransport {
 public:
  explicit BeastHttpTransport(std::chrono::milliseconds timeout = std::chrono::seconds(30))
      : timeout_(timeout) {}
  Ec2Outcome<HttpResponse> Send(const HttpEndpoint& endpoint, const HttpRequest& request) override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace tessera::aws
