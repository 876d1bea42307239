#include "http_server.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <iostream>
#include <utility>

namespace tesserad {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

HttpServer::HttpServer(asio::io_context& io, Api& api, ServerLimits limits)
    : io_(io),
      api_(api),
      limits_(limits),
      acceptor_(asio::make_strand(io)),
      accept_pause_(acceptor_.get_executor()),
      workers_(static_cast<size_t>(limits.workers)) {}

HttpServer::~HttpServer() { JoinWorkers(); }

void HttpServer::EnableTls(std::unique_ptr<asio::ssl::context> context) {
  tls_context_ = std::move(context);
}

bool HttpServer::tls() const { return tls_context_ != nullptr; }

template <typename SessionType>
void HttpServer::Track(std::shared_ptr<SessionType> session) {
  {
    std::lock_guard lock(sessions_mutex_);
    std::erase_if(sessions_, [](const auto& weak) { return weak.expired(); });
    sessions_.push_back(session);
  }
  session->Start();
}

tessera::Status HttpServer::Listen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return tessera::InvalidArgumentError("server.listen: expected host:port, got \"" + listen +
                                         "\"");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = listen.substr(colon + 1);
  beast::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(host, port, tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return tessera::InvalidArgumentError("server.listen: cannot resolve \"" + listen +
                                         "\": " + ec.message());
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return tessera::UnavailableError("server.listen: cannot listen on " + listen + ": " +
                                     ec.message());
  }
  return tessera::Status::Ok();
}

tcp::endpoint HttpServer::local_endpoint() const { return acceptor_.local_endpoint(); }

void HttpServer::Start() { Accept(); }

namespace {

// How long accepting pauses when the process is out of file descriptors; connections that close
// meanwhile make room.
constexpr std::chrono::milliseconds kAcceptPause{100};
constexpr std::chrono::seconds kLogInterval{10};

bool OutOfResources(const beast::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
         ec == asio::error::no_memory || ec.value() == ENFILE;
}

}  // namespace

void HttpServer::Accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_.load() || !acceptor_.is_open()) return;
    if (OutOfResources(ec)) return PauseAccepting(ec);
    if (!ec) OnAccepted(std::move(socket));
    Accept();
  });
}

void HttpServer::OnAccepted(tcp::socket socket) {
  const bool refuse = open_connections_->load() >= limits_.max_connections;
  std::shared_ptr<std::atomic<int>> counted;
  if (refuse) {
    Report(Trouble::kAtConnectionCap, "server.max_connections (" +
                                          std::to_string(limits_.max_connections) +
                                          ") connections open; answering new ones 503");
  } else {
    open_connections_->fetch_add(1);
    counted = open_connections_;
  }
  if (tls_context_ != nullptr) {
    Track(std::make_shared<Session<TlsStream>>(api_, workers_, limits_, stopping_, counted, refuse,
                                               std::move(socket), *tls_context_));
  } else {
    Track(std::make_shared<Session<PlainStream>>(api_, workers_, limits_, stopping_, counted,
                                                 refuse, std::move(socket)));
  }
}

void HttpServer::PauseAccepting(const beast::error_code& ec) {
  Report(Trouble::kOutOfDescriptors,
         "cannot accept connections: " + ec.message() + " (" +
             std::to_string(open_connections_->load()) +
             " connections open; raise the open-file limit, ulimit -n, or lower "
             "server.max_connections); retrying every " +
             std::to_string(kAcceptPause.count()) + " ms");
  accept_pause_.expires_after(kAcceptPause);
  accept_pause_.async_wait([this](beast::error_code wait_ec) {
    if (wait_ec || stopping_.load() || !acceptor_.is_open()) return;
    Accept();
  });
}

void HttpServer::Report(Trouble trouble, const std::string& line) {
  TroubleLog& log = trouble_log_[static_cast<int>(trouble)];
  const auto now = std::chrono::steady_clock::now();
  if (log.last != std::chrono::steady_clock::time_point{} && now - log.last < kLogInterval) {
    ++log.unreported;
    return;
  }
  std::cerr << "tesserad: " << line;
  if (log.unreported > 0) std::cerr << " (" << log.unreported << " more since the last report)";
  std::cerr << std::endl;
  log.last = now;
  log.unreported = 0;
}

void HttpServer::Shutdown() {
  stopping_.store(true);
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    accept_pause_.cancel();
  });
  std::lock_guard lock(sessions_mutex_);
  for (const auto& weak : sessions_) {
    if (auto session = weak.lock()) session->Stop();
  }
}

void HttpServer::JoinWorkers() { workers_.join(); }

}  // namespace tesserad
