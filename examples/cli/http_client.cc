#include "http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/version.hpp>
#include <cctype>

namespace tessera::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::chrono::seconds kConnectTimeout{5};

}  // namespace

bool ParseServerUrl(const std::string& url, ServerAddress* address, std::string* error) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    *error = "server URL must start with http:// (TLS is not supported yet): " + url;
    return false;
  }
  std::string rest = url.substr(kScheme.size());
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

HttpClient::HttpClient(ServerAddress address, std::string token)
    : address_(std::move(address)), token_(std::move(token)) {}

HttpResponse HttpClient::Send(const std::string& method, const std::string& target,
                              const std::string& body,
                              const std::map<std::string, std::string>& headers,
                              std::chrono::milliseconds timeout) const {
  HttpResponse result;
  try {
    asio::io_context io;
    asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    const auto endpoints = resolver.resolve(address_.host, address_.port);
    stream.expires_after(kConnectTimeout);
    stream.connect(endpoints);

    http::request<http::string_body> request(http::string_to_verb(method),
                                             address_.base_path + target, 11);
    const bool ipv6 = address_.host.find(':') != std::string::npos;
    request.set(http::field::host,
                (ipv6 ? "[" + address_.host + "]" : address_.host) + ":" + address_.port);
    request.set(http::field::user_agent, "tessctl");
    request.set(http::field::accept, "application/json");
    if (!token_.empty()) request.set(http::field::authorization, "Bearer " + token_);
    for (const auto& [name, value] : headers) request.set(name, value);
    if (!body.empty()) {
      request.set(http::field::content_type, "application/json");
      request.body() = body;
    }
    request.prepare_payload();

    stream.expires_after(timeout);
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::read(stream, buffer, parser);
    result.status = static_cast<int>(parser.get().result_int());
    result.body = std::move(parser.get().body());
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  } catch (const beast::system_error& e) {
    result.status = 0;
    result.transport_error = e.code().message();
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
