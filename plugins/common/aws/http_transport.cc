#include "aws/http_transport.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cctype>

namespace tessera::aws {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

Ec2Error TransportError(std::string_view step, const beast::error_code& code,
                        const HttpEndpoint& endpoint) {
  Ec2Error error;
  error.code = "TransportError";
  error.message = std::string(step) + " " + endpoint.scheme + "://" + endpoint.HostHeader() + ": " +
                  code.message();
  return error;
}

http::request<http::string_body> BuildRequest(const HttpEndpoint& endpoint,
                                              const HttpRequest& request) {
  http::request<http::string_body> message;
  message.method_string(request.method);
  message.target(request.target);
  message.version(11);
  bool has_host = false;
  for (const auto& [name, value] : request.headers) {
    if (EqualsIgnoringCase(name, "host")) has_host = true;
    message.insert(name, value);
  }
  if (!has_host) message.set(http::field::host, endpoint.HostHeader());
  message.set(http::field::connection, "close");
  message.body() = request.body;
  message.prepare_payload();
  return message;
}

HttpResponse ToResponse(http::response<http::string_body>& message) {
  HttpResponse response;
  response.status = static_cast<int>(message.result_int());
  for (const auto& field : message) {
    response.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  response.body = std::move(message.body());
  return response;
}

// Write the request and read the reply on a connected stream (plain or TLS).
template <typename Stream>
Ec2Outcome<HttpResponse> Exchange(Stream& stream, const HttpEndpoint& endpoint,
                                  const HttpRequest& request) {
  beast::error_code code;
  auto message = BuildRequest(endpoint, request);
  http::write(stream, message, code);
  if (code) return TransportError("writing to", code, endpoint);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  http::read(stream, buffer, parser, code);
  if (code) return TransportError("reading from", code, endpoint);
  return ToResponse(parser.get());
}

}  // namespace

bool HttpEndpoint::Parse(std::string_view url, HttpEndpoint* endpoint, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  HttpEndpoint parsed;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    *error = "endpoint '" + std::string(url) + "' has no scheme (http:// or https://)";
    return false;
  }
  parsed.scheme = std::string(url.substr(0, scheme_end));
  if (parsed.scheme != "http" && parsed.scheme != "https") {
    *error = "endpoint scheme '" + parsed.scheme + "' is neither http nor https";
    return false;
  }
  std::string_view rest = url.substr(scheme_end + 3);
  const auto path_at = rest.find('/');
  if (path_at != std::string_view::npos) {
    if (rest.substr(path_at) != "/") {
      *error = "endpoint '" + std::string(url) + "' has a path; only the root is supported";
      return false;
    }
    rest = rest.substr(0, path_at);
  }
  const auto colon = rest.rfind(':');
  if (colon != std::string_view::npos && rest.find(']') == std::string_view::npos) {
    parsed.host = std::string(rest.substr(0, colon));
    parsed.port = std::string(rest.substr(colon + 1));
  } else {
    parsed.host = std::string(rest);
    parsed.port = parsed.scheme == "https" ? "443" : "80";
  }
  if (parsed.host.empty() || parsed.port.empty()) {
    *error = "endpoint '" + std::string(url) + "' has no host or port";
    return false;
  }
  *endpoint = std::move(parsed);
  return true;
}

std::string HttpEndpoint::HostHeader() const {
  const bool default_port =
      (scheme == "https" && port == "443") || (scheme == "http" && port == "80");
  return default_port ? host : host + ":" + port;
}

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [header, value] : headers) {
    if (EqualsIgnoringCase(header, name)) return value;
  }
  return {};
}

Ec2Outcome<HttpResponse> BeastHttpTransport::Send(const HttpEndpoint& endpoint,
                                                  const HttpRequest& request) {
  asio::io_context context;
  beast::error_code code;
  tcp::resolver resolver(context);
  const auto addresses = resolver.resolve(endpoint.host, endpoint.port, code);
  if (code) return TransportError("resolving", code, endpoint);

  if (endpoint.scheme == "http") {
    beast::tcp_stream stream(context);
    stream.expires_after(timeout_);
    stream.connect(addresses, code);
    if (code) return TransportError("connecting to", code, endpoint);
    auto reply = Exchange(stream, endpoint, request);
    stream.socket().shutdown(tcp::socket::shutdown_both, code);
    return reply;
  }

  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.set_verify_mode(asio::ssl::verify_peer);
  if (endpoint.ca_file.empty()) {
    tls.set_default_verify_paths(code);
  } else {
    tls.load_verify_file(endpoint.ca_file, code);
  }
  if (code) return TransportError("loading CA certificates for", code, endpoint);
  tls.set_verify_callback(asio::ssl::host_name_verification(endpoint.host));
  beast::ssl_stream<beast::tcp_stream> stream(context, tls);
  // SNI: AWS endpoints serve several names from one address.
  if (!SSL_set_tlsext_host_name(stream.native_handle(), endpoint.host.c_str())) {
    return TransportError(
        "setting SNI for",
        beast::error_code(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category()),
        endpoint);
  }
  beast::get_lowest_layer(stream).expires_after(timeout_);
  beast::get_lowest_layer(stream).connect(addresses, code);
  if (code) return TransportError("connecting to", code, endpoint);
  stream.handshake(asio::ssl::stream_base::client, code);
  if (code) return TransportError("TLS handshake with", code, endpoint);
  auto reply = Exchange(stream, endpoint, request);
  stream.shutdown(code);  // a peer that just closes is normal ("stream truncated")
  return reply;
}

}  // namespace tessera::aws
