#include "http_client.h"

#include <sys/socket.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <sstream>

#include "http_exchange.h"
#include "tls_transport.h"

namespace tessera::cli {

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

HttpClient::HttpClient(ServerAddress address, std::string token,
                       std::shared_ptr<const TlsTransport> tls)
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
  namespace asio = exchange::asio;
  namespace beast = exchange::beast;
  namespace http = exchange::http;
  http::request<http::string_body> request(http::string_to_verb(method),
                                           address_.base_path + target, 11);
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
  std::ostringstream serialized;
  serialized << request;
  const std::string bytes = serialized.str();
  if (address_.tls) return tls_->Perform(address_.host, address_.port, bytes, timeout, sink);

  HttpResponse result;
  asio::io_context io;
  try {
    asio::ip::tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(address_.host, address_.port);
    beast::tcp_stream stream(io);
    exchange::Connect(io, stream, endpoints, timeout);
    exchange::Exchange(io, stream, bytes, timeout, sink, &result);
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  } catch (const beast::system_error& e) {
    result.status = 0;
    result.transport_error = exchange::TransportError(e.code(), timeout);
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
