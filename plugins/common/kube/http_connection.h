// HttpConnection: one keep-alive HTTP/1.1 connection to the API server, plain TCP or TLS over
// Boost.Beast, used by one thread at a time (the pool in kube_transport.h hands it out). Every
// step (connect, handshake, write, each read) runs as an asynchronous Beast operation on the
// connection's own io_context, driven by the calling thread, so that the call's deadline (the
// stream's expiry timer) and its stop token (which posts a close onto that io_context) both
// interrupt it: a blocked read returns at once when another thread asks the call to stop.
//
// The reply body is read piece by piece (ReadBody), which is what a watch needs: a chunked
// stream that stays open for minutes, each piece handed over as it arrives. A connection is
// Reusable() for the next request only when the reply was read to its end, the server did not
// ask to close, and no call on it failed or was stopped.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "kube/http_types.h"
#include "kube/kube_error.h"

namespace tessera::kube {

// How to reach the server: its URL and, for https, the TLS context and the name to verify.
struct ConnectTarget {
  ServerUrl url;
  std::shared_ptr<boost::asio::ssl::context> tls;  // null for http
  std::string verify_name;                         // empty: verify nothing (insecure)
  std::string sni;                                 // empty: send no SNI (an IP address)
};

class HttpConnection {
 public:
  static KubeOutcome<std::unique_ptr<HttpConnection>> Open(const ConnectTarget& target,
                                                           const CallLimits& limits);
  ~HttpConnection();

  // Writes the request (target below the URL's path prefix; Host and Content-Length added).
  KubeOutcome<Done> WriteRequest(const HttpRequest& request, const CallLimits& limits);
  // Reads the status line and headers of the reply.
  KubeOutcome<HttpResponse> ReadHeader(const CallLimits& limits);
  // Appends the next piece of the body to `out` (at most `max_bytes`); false once the body has
  // ended (nothing appended).
  KubeOutcome<bool> ReadBody(std::string* out, std::size_t max_bytes, const CallLimits& limits);

  bool Reusable() const;
  // Set by the pool when the connection serves a second request: a failure before any reply
  // on a reused connection is most likely the server having closed it while idle.
  bool reused = false;
  std::chrono::steady_clock::time_point idle_since;

 private:
  explicit HttpConnection(const ConnectTarget& target);
  // Starts an operation with `start(handler)` and runs the io_context until it completes, the
  // deadline passes or the stop token fires.
  template <typename Start>
  boost::system::error_code Run(const CallLimits& limits, Start&& start);
  KubeError Failure(const char* step, const boost::system::error_code& code,
                    const CallLimits& limits);
  boost::beast::tcp_stream& Lowest();

  ConnectTarget target_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::beast::tcp_stream> plain_;
  std::unique_ptr<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
  bool broken_ = false;
  bool server_closes_ = false;
};

}  // namespace tessera::kube
