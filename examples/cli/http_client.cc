#include "http_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/version.hpp>

#include <cctype>
#include <limits>
#include <optional>
#include <vector>

namespace tessera::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace ssl = asio::ssl;
using Request = http::request<http::string_body>;

constexpr std::chrono::seconds kConnectTimeout{5};

// Beast's deadlines (expires_after) bound asynchronous operations only; blocking calls would wait
// for ever on a server that accepts and never answers. So every step runs asynchronously on the
// call's own io_context, which runs until the step is done or its deadline has passed, and a
// failed step throws like the blocking call would.
void RunStep(asio::io_context& io, const beast::error_code& result) {
  io.run();
  io.restart();
  if (result) throw beast::system_error(result);
}

template <typename Endpoints>
void Connect(asio::io_context& io, beast::tcp_stream& stream, const Endpoints& endpoints,
             std::chrono::milliseconds timeout) {
  beast::error_code result;
  stream.expires_after(std::min<std::chrono::milliseconds>(kConnectTimeout, timeout));
  stream.async_connect(endpoints, [&result](beast::error_code ec, const auto&) { result = ec; });
  RunStep(io, result);
}

bool IsTimeout(const beast::error_code& ec) {
  return ec == beast::error::timeout || ec == asio::error::timed_out;
}

// Writes `request` and reads the response over a connected plain or TLS stream: the whole
// response within `timeout` from now, or, with a `sink`, a 2xx body piece by piece into it, each
// piece within `timeout`.
template <typename Stream>
void Exchange(asio::io_context& io, Stream& stream, const Request& request,
              std::chrono::milliseconds timeout, const BodySink* sink, HttpResponse* result) {
  beast::get_lowest_layer(stream).expires_after(timeout);
  beast::error_code step;
  http::async_write(stream, request, [&step](beast::error_code ec, size_t) { step = ec; });
  RunStep(io, step);
  beast::flat_buffer buffer;
  if (sink == nullptr) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::async_read(stream, buffer, parser, [&step](beast::error_code ec, size_t) { step = ec; });
    RunStep(io, step);
    result->status = static_cast<int>(parser.get().result_int());
    result->content_type = std::string(parser.get()[http::field::content_type]);
    result->body = std::move(parser.get().body());
    return;
  }
  http::response_parser<http::buffer_body> parser;
  // No limit; not boost::none, which Boost 1.74 compares as "exceeded" for a known length.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::async_read_header(stream, buffer, parser,
                          [&step](beast::error_code ec, size_t) { step = ec; });
  RunStep(io, step);
  result->status = static_cast<int>(parser.get().result_int());
  const bool to_sink = result->status >= 200 && result->status < 300;
  const std::optional<uint64_t> total =
      parser.content_length() ? std::optional<uint64_t>(*parser.content_length()) : std::nullopt;
  uint64_t received = 0;
  std::vector<char> piece(1 << 16);
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    beast::get_lowest_layer(stream).expires_after(timeout);
    http::async_read(stream, buffer, parser, [&step](beast::error_code ec, size_t) { step = ec; });
    io.run();
    io.restart();
    if (step && step != http::error::need_buffer) throw beast::system_error(step);
    const size_t got = piece.size() - parser.get().body().size;
    if (!to_sink) {
      result->body.append(piece.data(), got);
      continue;
    }
    if (got > 0 && !sink->write(piece.data(), got)) {
      throw beast::system_error(asio::error::operation_aborted);
    }
    received += got;
    if (sink->progress) sink->progress(received, total);
  }
}

// Asks OpenSSL to check the certificate against `host` during the handshake: the DNS names (or
// IP addresses, for an address literal) in its subjectAltName. Also sends the name as SNI.
void ExpectPeerName(SSL* ssl, const std::string& host) {
  beast::error_code ec;
  asio::ip::make_address(host, ec);
  if (!ec) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
    return;
  }
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  SSL_set1_host(ssl, host.c_str());
  SSL_set_tlsext_host_name(ssl, host.c_str());
}

// What the user can do about a certificate that failed verification, when it is not obvious.
std::string VerifyHint(long verify_result) {
  switch (verify_result) {
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return " (--cacert FILE trusts a private CA or a self-signed certificate)";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return " (the certificate's subjectAltName does not name the URL's host)";
    default:
      return "";
  }
}

}  // namespace

std::shared_ptr<ssl::context> MakeTlsClientContext(const TlsOptions& options, std::string* error) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  beast::error_code ec;
  if (options.insecure) {
    context->set_verify_mode(ssl::verify_none);
    return context;
  }
  context->set_verify_mode(ssl::verify_peer);
  if (options.ca_file.empty()) {
    context->set_default_verify_paths(ec);
  } else {
    context->load_verify_file(options.ca_file, ec);
  }
  if (ec) {
    *error = options.ca_file.empty()
                 ? "cannot load the system's trusted certificates: " + ec.message()
                 : "--cacert " + options.ca_file + ": not a readable PEM certificate file";
    return nullptr;
  }
  return context;
}

bool ParseServerUrl(const std::string& url, ServerAddress* address, std::string* error) {
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  address->tls = url.rfind(kHttps, 0) == 0;
  if (!address->tls && url.rfind(kHttp, 0) != 0) {
    *error = "server URL must start with http:// or https://: " + url;
    return false;
  }
  address->port = address->tls ? "443" : "80";
  std::string rest = url.substr(address->tls ? kHttps.size() : kHttp.size());
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  address->base_path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!address->base_path.empty() && address->base_path.back() == '/') {
    address->base_path.pop_back();
  }
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) {
      *error = "unbalanced '[' in server URL: " + url;
      return false;
    }
    address->host = authority.substr(1, close - 1);
    authority = authority.substr(close + 1);
    if (!authority.empty() && authority.front() == ':') address->port = authority.substr(1);
  } else {
    const size_t colon = authority.rfind(':');
    address->host = authority.substr(0, colon);
    if (colon != std::string::npos) address->port = authority.substr(colon + 1);
  }
  if (address->host.empty() || address->port.empty()) {
    *error = "server URL needs a host and port: " + url;
    return false;
  }
  return true;
}

HttpClient::HttpClient(ServerAddress address, std::string token, std::shared_ptr<ssl::context> tls)
    : address_(std::move(address)), token_(std::move(token)), tls_(std::move(tls)) {}

HttpResponse HttpClient::Send(const std::string& method, const std::string& target,
                              const std::string& body,
                              const std::map<std::string, std::string>& headers,
                              std::chrono::milliseconds timeout) const {
  return Perform(method, target, body, headers, timeout, nullptr);
}

HttpResponse HttpClient::Download(const std::string& target, std::chrono::milliseconds timeout,
                                  const BodySink& sink) const {
  return Perform("GET", target, "", {}, timeout, &sink);
}

HttpResponse HttpClient::Perform(const std::string& method, const std::string& target,
                                 const std::string& body,
                                 const std::map<std::string, std::string>& headers,
                                 std::chrono::milliseconds timeout, const BodySink* sink) const {
  Request request(http::string_to_verb(method), address_.base_path + target, 11);
  const bool ipv6 = address_.host.find(':') != std::string::npos;
  request.set(http::field::host,
              (ipv6 ? "[" + address_.host + "]" : address_.host) + ":" + address_.port);
  request.set(http::field::user_agent, "tessctl");
  request.set(http::field::accept, sink == nullptr ? "application/json" : "*/*");
  if (!token_.empty()) request.set(http::field::authorization, "Bearer " + token_);
  for (const auto& [name, value] : headers) request.set(name, value);
  if (!body.empty()) {
    if (request.find(http::field::content_type) == request.end()) {
      request.set(http::field::content_type, "application/json");
    }
    request.body() = body;
  }
  request.prepare_payload();

  HttpResponse result;
  asio::io_context io;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_stream;
  bool handshaking = false;
  try {
    asio::ip::tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(address_.host, address_.port);
    if (!address_.tls) {
      beast::tcp_stream stream(io);
      Connect(io, stream, endpoints, timeout);
      Exchange(io, stream, request, timeout, sink, &result);
      beast::error_code ignored;
      stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
      return result;
    }
    tls_stream.emplace(io, *tls_);
    ExpectPeerName(tls_stream->native_handle(), address_.host);
    Connect(io, beast::get_lowest_layer(*tls_stream), endpoints, timeout);
    handshaking = true;
    beast::error_code handshake;
    beast::get_lowest_layer(*tls_stream).expires_after(timeout);
    tls_stream->async_handshake(ssl::stream_base::client,
                                [&handshake](beast::error_code ec) { handshake = ec; });
    RunStep(io, handshake);
    handshaking = false;
    Exchange(io, *tls_stream, request, timeout, sink, &result);
    // No close_notify exchange: the response is complete by its Content-Length, so a truncation
    // cannot go unnoticed, and waiting for the server's close_notify would only add a round trip.
    beast::get_lowest_layer(*tls_stream).close();
  } catch (const beast::system_error& e) {
    result.status = 0;
    result.transport_error = e.code().message();
    if (e.code() == asio::error::operation_aborted) {
      result.transport_error = "the received data could not be stored";
      return result;
    }
    if (IsTimeout(e.code())) {
      result.transport_error = "no reply within " + std::to_string(timeout.count()) + " ms";
      if (handshaking) result.transport_error += " (during the TLS handshake)";
      return result;
    }
    if (!handshaking) return result;
    result.transport_error = "TLS handshake failed: " + e.code().message();
    const long verify = SSL_get_verify_result(tls_stream->native_handle());
    if (verify != X509_V_OK) {
      result.transport_error = std::string("TLS certificate verification failed: ") +
                               X509_verify_cert_error_string(verify) + VerifyHint(verify);
    }
  }
  return result;
}

std::string UrlEncode(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace tessera::cli
