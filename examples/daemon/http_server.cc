#include "http_server.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <optional>
#include <type_traits>
#include <utility>

namespace tesserad {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// What the server needs of a connection of either kind.
class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the connection now if it is waiting for a request, else after the current response.
  virtual void Stop() = 0;
};

namespace {

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// close_notify is a courtesy to the client; one that never answers ours must not hold up the
// daemon's exit.
constexpr std::chrono::seconds kTlsShutdownTimeout{2};

// One connection: (for TLS, completes the handshake,) reads a request, runs it on a worker,
// writes the response, repeats while the client keeps the connection alive. Everything but the
// handler runs on the session's strand. `Stream` is PlainStream or TlsStream; the request loop is
// the same for both.
template <typename Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `stream_args` construct the Stream: the accepted socket, then for TLS the SSL context.
  template <typename... StreamArgs>
  Session(Api& api, asio::thread_pool& workers, const ServerLimits& limits,
          const std::atomic<bool>& stopping, StreamArgs&&... stream_args)
      : stream_(std::forward<StreamArgs>(stream_args)...),
        api_(api),
        workers_(workers),
        limits_(limits),
        stopping_(stopping) {}

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Handshake();
      } else {
        self->Read();
      }
    });
  }

  void Stop() override {
    // Cancelling the read lets its handler close the connection, so a TLS shutdown never runs
    // alongside a pending read on the same stream.
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (!self->busy_) self->tcp().cancel();
    });
  }

 private:
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  // A client that connects and never completes the handshake is cut off like one that never
  // completes its request.
  void Handshake() {
    tcp().expires_after(limits_.request_timeout);
    stream_.async_handshake(asio::ssl::stream_base::server,
                            [self = this->shared_from_this()](beast::error_code ec) {
                              if (ec) return self->CloseSocket();  // e.g. plain HTTP, or a timeout.
                              self->handshake_done_ = true;
                              self->Read();
                            });
  }

  void Read() {
    if (stopping_.load()) return Close();
    parser_.emplace();
    parser_->body_limit(limits_.max_request_bytes);
    tcp().expires_after(limits_.request_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      busy_ = true;
      HttpResponse response = Api::Error(413, "PAYLOAD_TOO_LARGE",
                                         "request body exceeds server.max_request_bytes (" +
                                             std::to_string(limits_.max_request_bytes) + " bytes)");
      response.keep_alive(false);
      return Write(std::move(response));
    }
    // Closed by the peer, timed out, stopped, or malformed HTTP.
    if (ec) return Close();
    busy_ = true;
    tcp().expires_never();
    auto request = std::make_shared<HttpRequest>(parser_->release());
    if (Api::AnswersAsync(*request)) {
      // A submit waits for its commit in the library, not in a worker; the response is encoded
      // back on this connection's strand. The guard keeps the io_context running meanwhile.
      api_.HandleAsync(request, [self = this->shared_from_this(),
                                 guard = asio::make_work_guard(stream_.get_executor())](
                                    std::function<ApiResponse()> encode) {
        asio::post(self->stream_.get_executor(), [self, encode = std::move(encode)] {
          ApiResponse response = encode();
          std::visit([&self](auto& r) { self->Write(std::move(r)); }, response);
        });
      });
      return;
    }
    // The guard keeps the io_context running while the worker holds the request.
    asio::post(workers_, [self = this->shared_from_this(), request,
                          guard = asio::make_work_guard(stream_.get_executor())] {
      ApiResponse response = self->api_.Handle(*request);
      asio::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        std::visit([&self](auto& r) { self->Write(std::move(r)); }, response);
      });
    });
  }

  void Write(HttpResponse response) {
    if (stopping_.load()) response.keep_alive(false);
    auto owned = std::make_shared<HttpResponse>(std::move(response));
    tcp().expires_after(limits_.request_timeout);
    const bool keep_alive = owned->keep_alive();
    http::async_write(stream_, *owned,
                      [self = this->shared_from_this(), owned, keep_alive](
                          beast::error_code ec, std::size_t) { self->AfterWrite(ec, keep_alive); });
  }

  // A file body takes as long as the client needs to read it, but not for ever: the request
  // timeout plus one second per MiB.
  void Write(FileResponse file) {
    if (stopping_.load()) file.keep_alive(false);
    const uint64_t size = file.body().size();
    auto owned = std::make_shared<FileResponse>(std::move(file));
    tcp().expires_after(limits_.request_timeout + std::chrono::seconds(size >> 20));
    const bool keep_alive = owned->keep_alive();
    http::async_write(stream_, *owned,
                      [self = this->shared_from_this(), owned, keep_alive](
                          beast::error_code ec, std::size_t) { self->AfterWrite(ec, keep_alive); });
  }

  void AfterWrite(beast::error_code ec, bool keep_alive) {
    busy_ = false;
    if (ec) return CloseSocket();
    if (!keep_alive) return Close();
    Read();
  }

  // Ends the connection: for TLS, with a close_notify first, so the client can tell the end of
  // the stream from a truncation.
  void Close() {
    if constexpr (kTls) {
      if (handshake_done_ && !shutting_down_) {
        shutting_down_ = true;
        tcp().expires_after(kTlsShutdownTimeout);
        stream_.async_shutdown(
            [self = this->shared_from_this()](beast::error_code) { self->CloseSocket(); });
        return;
      }
    }
    CloseSocket();
  }

  void CloseSocket() {
    beast::error_code ignored;
    tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp().close();
  }

  Stream stream_;
  Api& api_;
  asio::thread_pool& workers_;
  const ServerLimits& limits_;
  const std::atomic<bool>& stopping_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool busy_ = false;
  bool handshake_done_ = false;
  bool shutting_down_ = false;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& io, Api& api, ServerLimits limits)
    : io_(io),
      api_(api),
      limits_(limits),
      acceptor_(asio::make_strand(io)),
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

void HttpServer::Accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_.load() || !acceptor_.is_open()) return;
    if (!ec) {
      if (tls_context_ != nullptr) {
        Track(std::make_shared<Session<TlsStream>>(api_, workers_, limits_, stopping_,
                                                   std::move(socket), *tls_context_));
      } else {
        Track(std::make_shared<Session<PlainStream>>(api_, workers_, limits_, stopping_,
                                                     std::move(socket)));
      }
    }
    Accept();
  });
}

void HttpServer::Shutdown() {
  stopping_.store(true);
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  std::lock_guard lock(sessions_mutex_);
  for (const auto& weak : sessions_) {
    if (auto session = weak.lock()) session->Stop();
  }
}

void HttpServer::JoinWorkers() { workers_.join(); }

}  // namespace tesserad
