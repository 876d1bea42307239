#include "kube/http_types.h"

#include <cctype>

namespace tessera::kube {
namespace {

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

}  // namespace

std::string FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [header, value] : headers) {
    if (EqualsIgnoringCase(header, name)) return value;
  }
  return {};
}

bool ServerUrl::Parse(std::string_view url, ServerUrl* parsed, std::string* error) {
  ServerUrl result;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    *error = "server '" + std::string(url) + "' has no scheme (https:// or http://)";
    return false;
  }
  result.scheme = std::string(url.substr(0, scheme_end));
  if (result.scheme != "https" && result.scheme != "http") {
    *error = "server scheme '" + result.scheme + "' is neither https nor http";
    return false;
  }
  std::string_view rest = url.substr(scheme_end + 3);
  const auto path_at = rest.find('/');
  std::string_view authority = rest.substr(0, path_at);
  if (path_at != std::string_view::npos) {
    std::string_view path = rest.substr(path_at);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    if (path.find_first_of("?#") != std::string_view::npos) {
      *error = "server '" + std::string(url) + "' has a query or fragment";
      return false;
    }
    result.path_prefix = std::string(path);
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      *error = "server '" + std::string(url) + "' has an unclosed IPv6 bracket";
      return false;
    }
    result.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        *error = "server '" + std::string(url) + "': junk after the IPv6 address";
        return false;
      }
      port = after.substr(1);
    }
  } else {
    const auto colon = authority.rfind(':');
    result.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (result.host.empty()) {
    *error = "server '" + std::string(url) + "' has no host";
    return false;
  }
  for (const char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      *error = "server '" + std::string(url) + "' has a port that is not a number";
      return false;
    }
  }
  result.port = port.empty() ? (result.scheme == "https" ? "443" : "80") : std::string(port);
  *parsed = std::move(result);
  return true;
}

std::string ServerUrl::HostHeader() const {
  const std::string name = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  const bool default_port =
      (scheme == "https" && port == "443") || (scheme == "http" && port == "80");
  return default_port ? name : name + ":" + port;
}

std::string ServerUrl::ToString() const { return scheme + "://" + HostHeader() + path_prefix; }

}  // namespace tessera::kube
