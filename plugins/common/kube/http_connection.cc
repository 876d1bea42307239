#include "kube/http_connection.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/version.hpp>
#include <cstdint>
#include <limits>
#include <stop_token>

namespace tessera::kube {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

}  // namespace

HttpConnection::HttpConnection(const ConnectTarget& target) : target_(target) {
  if (target_.tls) {
    tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(io_, *target_.tls);
  } else {
    plain_ = std::make_unique<beast::tcp_stream>(io_);
  }
}

HttpConnection::~HttpConnection() {
  beast::error_code ignored;
  Lowest().socket().close(ignored);
}

beast::tcp_stream& HttpConnection::Lowest() {
  return tls_ ? beast::get_lowest_layer(*tls_) : *plain_;
}

template <typename Start>
beast::error_code HttpConnection::Run(const CallLimits& limits, Start&& start) {
  if (limits.stop.stop_requested()) {
    broken_ = true;
    return asio::error::operation_aborted;
  }
  if (limits.deadline == std::chrono::steady_clock::time_point::max()) {
    Lowest().expires_never();
  } else {
    Lowest().expires_at(limits.deadline);
  }
  beast::error_code result = asio::error::would_block;
  start([&result](beast::error_code code, auto&&...) { result = code; });
  {
    // Closing from the io_context's own thread is the one safe way to interrupt the operation.
    std::stop_callback on_stop(limits.stop, [this] {
      asio::post(io_, [this] {
        beast::error_code ignored;
        Lowest().socket().close(ignored);
      });
    });
    io_.restart();
    io_.run();
  }
  if (limits.stop.stop_requested()) {
    broken_ = true;
    return asio::error::operation_aborted;
  }
  if (result) broken_ = true;
  return result;
}

KubeError HttpConnection::Failure(const char* step, const beast::error_code& code,
                                  const CallLimits& limits) {
  broken_ = true;
  if (limits.stop.stop_requested()) {
    return MakeError(KubeErrorKind::kCancelled,
                     std::string(step) + " " + target_.url.ToString() + ": stopped by the caller");
  }
  std::string why = code == beast::error::timeout ? "deadline exceeded" : code.message();
  if (code.category() == asio::error::get_ssl_category()) {
    const unsigned long detail = ::ERR_get_error();
    if (detail != 0) {
      char text[256];
      ::ERR_error_string_n(detail, text, sizeof text);
      why += std::string(" (") + text + ")";
    }
  }
  return MakeError(KubeErrorKind::kTransport,
                   std::string(step) + " " + target_.url.ToString() + ": " + why);
}

KubeOutcome<std::unique_ptr<HttpConnection>> HttpConnection::Open(const ConnectTarget& target,
                                                                  const CallLimits& limits) {
  std::unique_ptr<HttpConnection> connection(new HttpConnection(target));
  tcp::resolver resolver(connection->io_);
  tcp::resolver::results_type addresses;
  auto code = connection->Run(limits, [&](auto handler) {
    resolver.async_resolve(
        target.url.host, target.url.port,
        [&addresses, handler](beast::error_code c, tcp::resolver::results_type results) mutable {
          addresses = std::move(results);
          handler(c);
        });
  });
  const auto unsent = [&](const char* step, const beast::error_code& failure) {
    KubeError error = connection->Failure(step, failure, limits);
    error.unsent = true;
    return error;
  };
  if (code) return unsent("resolving", code);
  code = connection->Run(
      limits, [&](auto handler) { connection->Lowest().async_connect(addresses, handler); });
  if (code) return unsent("connecting to", code);
  connection->Lowest().socket().set_option(tcp::no_delay(true), code);
  if (!connection->tls_) return connection;

  SSL* ssl = connection->tls_->native_handle();
  if (!target.sni.empty() && !SSL_set_tlsext_host_name(ssl, target.sni.c_str())) {
    KubeError error = MakeError(KubeErrorKind::kTransport,
                                "setting SNI " + target.sni + " for " + target.url.ToString());
    error.unsent = true;
    return error;
  }
  if (!target.verify_name.empty()) {
    connection->tls_->set_verify_callback(asio::ssl::host_name_verification(target.verify_name));
  }
  code = connection->Run(limits, [&](auto handler) {
    connection->tls_->async_handshake(asio::ssl::stream_base::client, handler);
  });
  if (code) return unsent("TLS handshake with", code);
  return connection;
}

KubeOutcome<Done> HttpConnection::WriteRequest(const HttpRequest& request,
                                               const CallLimits& limits) {
  http::request<http::string_body> message;
  message.method_string(request.method);
  message.target(target_.url.path_prefix + request.target);
  message.version(11);
  message.set(http::field::host, target_.url.HostHeader());
  for (const auto& [name, value] : request.headers) message.set(name, value);
  message.body() = request.body;
  message.prepare_payload();
  auto code = Run(limits, [&](auto handler) {
    if (tls_) {
      http::async_write(*tls_, message, handler);
    } else {
      http::async_write(*plain_, message, handler);
    }
  });
  if (code) return Failure("writing to", code, limits);
  return Done{};
}

KubeOutcome<HttpResponse> HttpConnection::ReadHeader(const CallLimits& limits) {
  parser_.emplace();
  // Watches are unbounded; ReadBody callers cap what they keep. Not boost::none: Boost 1.74's
  // parser compares a Content-Length against an empty limit as if it were exceeded.
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  auto code = Run(limits, [&](auto handler) {
    if (tls_) {
      http::async_read_header(*tls_, buffer_, *parser_, handler);
    } else {
      http::async_read_header(*plain_, buffer_, *parser_, handler);
    }
  });
  if (code) return Failure("reading the reply from", code, limits);
  HttpResponse response;
  const auto& header = parser_->get();
  response.status = static_cast<int>(header.result_int());
  for (const auto& field : header) {
    response.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  server_closes_ = !parser_->keep_alive();
  return response;
}

KubeOutcome<bool> HttpConnection::ReadBody(std::string* out, std::size_t max_bytes,
                                           const CallLimits& limits) {
  if (!parser_) return false;
  if (parser_->is_done()) return false;
  const std::size_t start = out->size();
  out->resize(start + max_bytes);
  auto& body = parser_->get().body();
  body.data = out->data() + start;
  body.size = max_bytes;
  auto code = Run(limits, [&](auto handler) {
    if (tls_) {
      http::async_read_some(*tls_, buffer_, *parser_, handler);
    } else {
      http::async_read_some(*plain_, buffer_, *parser_, handler);
    }
  });
  if (code == http::error::need_buffer) {
    code = {};
    broken_ = false;  // need_buffer only says the piece is full
  }
  const std::size_t got = max_bytes - body.size;
  out->resize(start + got);
  body.data = nullptr;
  body.size = 0;
  if (code) return Failure("reading the reply body from", code, limits);
  if (got == 0 && parser_->is_done()) return false;
  return true;
}

bool HttpConnection::Reusable() const {
  return !broken_ && !server_closes_ && parser_.has_value() && parser_->is_done();
}

}  // namespace tessera::kube
