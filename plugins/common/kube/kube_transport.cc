#include "kube/kube_transport.h"

#include <openssl/err.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>

namespace tessera::kube {

namespace asio = boost::asio;

// The idle connections, shared by the transport and the streams it handed out.
class ConnectionPool {
 public:
  ConnectionPool(ConnectTarget target, TransportOptions options)
      : target_(std::move(target)), options_(std::move(options)) {}

  const ConnectTarget& target() const { return target_; }
  const TransportOptions& options() const { return options_; }

  // An idle connection, or null when none is fit for reuse.
  std::unique_ptr<HttpConnection> TakeIdle() {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    while (!idle_.empty()) {
      std::unique_ptr<HttpConnection> connection = std::move(idle_.back());
      idle_.pop_back();
      if (now - connection->idle_since < options_.idle_timeout) {
        connection->reused = true;
        return connection;
      }
    }
    return nullptr;
  }

  KubeOutcome<std::unique_ptr<HttpConnection>> OpenNew(const CallLimits& limits) {
    auto connection = HttpConnection::Open(target_, limits);
    if (connection.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++opened_;
    }
    return connection;
  }

  void GiveBack(std::unique_ptr<HttpConnection> connection) {
    if (!connection || !connection->Reusable()) return;
    connection->idle_since = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int>(idle_.size()) < options_.max_idle_connections) {
      idle_.push_back(std::move(connection));
    }
  }

  int opened() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return opened_;
  }

 private:
  const ConnectTarget target_;
  const TransportOptions options_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<HttpConnection>> idle_;  // guarded by mutex_
  int opened_ = 0;                                     // guarded by mutex_
};

namespace {

KubeError ConfigError(const ClusterConfig& config, const std::string& what) {
  unsigned long detail = ::ERR_get_error();
  std::string text = config.source.empty() ? what : config.source + ": " + what;
  if (detail != 0) {
    char buffer[256];
    ::ERR_error_string_n(detail, buffer, sizeof buffer);
    text += std::string(" (") + buffer + ")";
  }
  ::ERR_clear_error();
  return MakeError(KubeErrorKind::kConfig, text);
}

bool IsIpAddress(const std::string& host) {
  boost::system::error_code code;
  asio::ip::make_address(host, code);
  return !code;
}

bool IsIdempotent(const std::string& method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS";
}

KubeOutcome<std::shared_ptr<asio::ssl::context>> MakeTls(const ClusterConfig& config) {
  auto tls = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  boost::system::error_code code;
  tls->set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                   asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  if (config.insecure_skip_tls_verify) {
    tls->set_verify_mode(asio::ssl::verify_none);
  } else {
    tls->set_verify_mode(asio::ssl::verify_peer);
    if (config.ca_pem.empty()) {
      tls->set_default_verify_paths(code);
      if (code) return ConfigError(config, "loading the system's CA certificates");
    } else {
      tls->add_certificate_authority(asio::buffer(config.ca_pem), code);
      if (code) return ConfigError(config, "certificate-authority: not a usable PEM certificate");
    }
  }
  if (!config.client_cert_pem.empty()) {
    tls->use_certificate_chain(asio::buffer(config.client_cert_pem), code);
    if (code) return ConfigError(config, "client-certificate: not a usable PEM certificate");
    tls->use_private_key(asio::buffer(config.client_key_pem), asio::ssl::context::pem, code);
    if (code) return ConfigError(config, "client-key: not a usable PEM private key");
    if (SSL_CTX_check_private_key(tls->native_handle()) != 1) {
      return ConfigError(config, "client-key: does not match client-certificate");
    }
  }
  return tls;
}

}  // namespace

ResponseStream::ResponseStream(std::shared_ptr<ConnectionPool> pool,
                               std::unique_ptr<HttpConnection> connection, HttpResponse head)
    : pool_(std::move(pool)), connection_(std::move(connection)), head_(std::move(head)) {}

ResponseStream::~ResponseStream() { pool_->GiveBack(std::move(connection_)); }

KubeOutcome<bool> ResponseStream::Read(std::string* out, const CallLimits& limits) {
  constexpr std::size_t kPiece = 64 * 1024;
  return connection_->ReadBody(out, kPiece, limits);
}

KubeOutcome<std::string> ResponseStream::ReadAll(const CallLimits& limits, std::size_t max_bytes) {
  std::string body;
  while (true) {
    auto more = Read(&body, limits);
    if (!more.ok()) return more.error();
    if (!more.value()) return body;
    if (body.size() > max_bytes) {
      return MakeError(KubeErrorKind::kMalformedReply,
                       "reply body passes " + std::to_string(max_bytes) + " bytes");
    }
  }
}

KubeTransport::KubeTransport(ConnectTarget target, TransportOptions options)
    : pool_(std::make_shared<ConnectionPool>(std::move(target), std::move(options))) {}

KubeTransport::~KubeTransport() = default;

KubeOutcome<std::unique_ptr<KubeTransport>> KubeTransport::Create(const ClusterConfig& config,
                                                                  const TransportOptions& options) {
  ConnectTarget target;
  std::string error;
  if (!ServerUrl::Parse(config.server, &target.url, &error)) {
    return ConfigError(config, "server: " + error);
  }
  if (target.url.scheme == "https") {
    auto tls = MakeTls(config);
    if (!tls.ok()) return tls.error();
    target.tls = tls.value();
    const std::string name =
        config.tls_server_name.empty() ? target.url.host : config.tls_server_name;
    if (!config.insecure_skip_tls_verify) target.verify_name = name;
    if (!IsIpAddress(name)) target.sni = name;
  } else if (!config.client_cert_pem.empty()) {
    return ConfigError(config, "a client certificate needs an https server, not " + config.server);
  }
  return std::unique_ptr<KubeTransport>(new KubeTransport(std::move(target), options));
}

const ServerUrl& KubeTransport::url() const { return pool_->target().url; }

int KubeTransport::ConnectionsOpened() const { return pool_->opened(); }

KubeOutcome<std::unique_ptr<ResponseStream>> KubeTransport::OpenStream(const HttpRequest& request,
                                                                       const CallLimits& limits) {
  HttpRequest sent = request;
  if (FindHeader(sent.headers, "User-Agent").empty()) {
    sent.headers.emplace_back("User-Agent", pool_->options().user_agent);
  }
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<HttpConnection> connection = attempt == 0 ? pool_->TakeIdle() : nullptr;
    if (!connection) {
      auto opened = pool_->OpenNew(limits);
      if (!opened.ok()) return opened.error();
      connection = std::move(opened).value();
    }
    const bool reused = connection->reused;
    auto written = connection->WriteRequest(sent, limits);
    if (!written.ok()) {
      if (reused && written.error().kind == KubeErrorKind::kTransport) continue;
      return written.error();
    }
    auto head = connection->ReadHeader(limits);
    if (!head.ok()) {
      if (reused && head.error().kind == KubeErrorKind::kTransport && IsIdempotent(sent.method)) {
        continue;
      }
      return head.error();
    }
    return std::make_unique<ResponseStream>(pool_, std::move(connection), std::move(head).value());
  }
}

KubeOutcome<HttpResponse> KubeTransport::Send(const HttpRequest& request,
                                              const CallLimits& limits) {
  auto stream = OpenStream(request, limits);
  if (!stream.ok()) return stream.error();
  constexpr std::size_t kMaxReply = 512u * 1024 * 1024;
  auto body = stream.value()->ReadAll(limits, kMaxReply);
  if (!body.ok()) return body.error();
  HttpResponse response = stream.value()->head();
  response.body = std::move(body).value();
  return response;
}

}  // namespace tessera::kube
