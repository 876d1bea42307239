// One connection of tesserad's HTTP server (http_server.h): (for TLS, completes the handshake,)
// reads a request, has the Api answer it, writes the response, repeats while the client keeps
// the connection alive. `Stream` is a plain or a TLS stream; the request loop is the same.
//
// What a client always gets, whatever it sends:
//   - a response within server.answer_timeout_ms of its request (plus the wait of a long poll):
//     503 when the scheduler has not answered by then;
//   - 400 for malformed HTTP, 431 for a header over server.max_header_bytes, 413 for a body over
//     server.max_request_bytes, 408 for a request begun but not complete within
//     server.request_timeout_ms; then the connection is closed;
//   - "100 Continue" when it sent Expect: 100-continue and its header is acceptable.
// An event long poll holds no thread while it waits (Api::HandleAsync), and ends when its client
// closes the connection.
//
// Thread safety: everything but the Api call runs on the connection's strand; Stop from any
// thread.
#pragma once

#include <sys/socket.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "api.h"
#include "http_codec.h"

namespace tesserad {

struct ServerLimits {
  uint64_t max_request_bytes = 1 << 20;
  uint32_t max_header_bytes = 16384;
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds answer_timeout{30000};
  int max_connections = 1000;
  int workers = 16;
};

// What the server needs of a connection of either kind.
class Connection {
 public:
  virtual ~Connection() = default;
  // Closes the connection now if it is waiting for a request, else after the current response;
  // a long poll in flight is answered at once.
  virtual void Stop() = 0;
};

using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

template <typename Stream>
class Session : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // `open_connections` counts this session until it is destroyed (null: not counted). With
  // `refuse` set the session only answers 503 (the server is at server.max_connections).
  // `stream_args` construct the Stream: the accepted socket, then for TLS the SSL context.
  template <typename... StreamArgs>
  Session(Api& api, boost::asio::thread_pool& workers, const ServerLimits& limits,
          const std::atomic<bool>& stopping, std::shared_ptr<std::atomic<int>> open_connections,
          bool refuse, StreamArgs&&... stream_args)
      : stream_(std::forward<StreamArgs>(stream_args)...),
        api_(api),
        workers_(workers),
        limits_(limits),
        stopping_(stopping),
        open_connections_(std::move(open_connections)),
        refuse_(refuse),
        read_timer_(stream_.get_executor()),
        answer_timer_(stream_.get_executor()) {}

  ~Session() override {
    if (open_connections_) open_connections_->fetch_sub(1);
  }

  void Start() {
    boost::asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Handshake();
      } else {
        self->BeginServing();
      }
    });
  }

  void Stop() override {
    boost::asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (!self->busy_) {
        error_code ignored;  // the socket may be closed already.
        self->tcp().socket().cancel(ignored);
        return;
      }
      if (self->cancel_) std::exchange(self->cancel_, nullptr)();
    });
  }

 private:
  using Socket = boost::asio::ip::tcp::socket;
  using error_code = boost::beast::error_code;

  boost::beast::tcp_stream& tcp() { return boost::beast::get_lowest_layer(stream_); }

  // A client that connects and never completes the handshake is cut off like one that never
  // completes its request.
  void Handshake() {
    tcp().expires_after(limits_.request_timeout);
    stream_.async_handshake(boost::asio::ssl::stream_base::server,
                            [self = this->shared_from_this()](error_code ec) {
                              if (ec) return self->CloseSocket();  // e.g. plain HTTP, or a timeout.
                              self->handshake_done_ = true;
                              self->BeginServing();
                            });
  }

  void BeginServing() {
    if (!refuse_) return Read();
    WriteError(Api::Error(503, "UNAVAILABLE",
                          "too many connections (server.max_connections " +
                              std::to_string(limits_.max_connections) + "); retry shortly"),
               "1");
  }

  // The request timeout runs from the first read of a request to its last byte; on expiry the
  // read is cancelled (the socket stays open, so that the client can be told 408).
  void ArmReadTimer() {
    read_timed_out_ = false;
    read_timer_.expires_after(limits_.request_timeout);
    read_timer_.async_wait([self = this->shared_from_this(), seq = request_seq_](error_code ec) {
      if (ec || seq != self->request_seq_ || self->busy_) return;
      self->read_timed_out_ = true;
      error_code ignored;
      self->tcp().socket().cancel(ignored);
    });
  }

  void Read() {
    if (stopping_.load()) return Close();
    parser_.emplace();
    parser_->body_limit(limits_.max_request_bytes);
    parser_->header_limit(limits_.max_header_bytes);
    tcp().expires_never();
    ArmReadTimer();
    boost::beast::http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](error_code ec, std::size_t) { self->OnHeader(ec); });
  }

  void OnHeader(error_code ec) {
    if (ec) return OnReadError(ec);
    const HttpRequest& header = parser_->get();
    if (tessera::Status framing = CheckFraming(header); !framing.ok()) {
      return WriteError(Api::Error(400, "BAD_REQUEST", framing.message()));
    }
    if (parser_->is_done()) return OnRequest();
    if (!ExpectsContinue(header)) return ReadBody();
    auto go_on = std::make_shared<boost::beast::http::response<boost::beast::http::empty_body>>(
        boost::beast::http::status::continue_, header.version());
    boost::beast::http::async_write(
        stream_, *go_on, [self = this->shared_from_this(), go_on](error_code ec, std::size_t) {
          if (ec) return self->CloseSocket();
          self->ReadBody();
        });
  }

  void ReadBody() {
    boost::beast::http::async_read(stream_, buffer_, *parser_,
                                   [self = this->shared_from_this()](error_code ec, std::size_t) {
                                     if (ec) return self->OnReadError(ec);
                                     self->OnRequest();
                                   });
  }

  void OnReadError(error_code ec) {
    namespace http = boost::beast::http;
    read_timer_.cancel();
    if (ec == http::error::body_limit) {
      return WriteError(Api::Error(413, "PAYLOAD_TOO_LARGE",
                                   "request body exceeds server.max_request_bytes (" +
                                       std::to_string(limits_.max_request_bytes) + " bytes)"));
    }
    if (ec == http::error::header_limit) {
      return WriteError(Api::Error(431, "REQUEST_HEADER_FIELDS_TOO_LARGE",
                                   "request line and headers exceed server.max_header_bytes (" +
                                       std::to_string(limits_.max_header_bytes) + " bytes)"));
    }
    if (read_timed_out_) {
      // An idle keep-alive connection is simply closed; a request begun gets told.
      if (!parser_->got_some() && buffer_.size() == 0) return Close();
      return WriteError(Api::Error(408, "REQUEST_TIMEOUT",
                                   "request not complete within server.request_timeout_ms (" +
                                       std::to_string(limits_.request_timeout.count()) + " ms)"));
    }
    const bool malformed =
        ec.category() == http::make_error_code(http::error::bad_method).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message;
    if (malformed) {
      return WriteError(Api::Error(400, "BAD_REQUEST", "malformed HTTP request: " + ec.message()));
    }
    Close();  // closed by the peer, reset, or stopped.
  }

  // Hands the request to the Api: on a worker (it may block on the store), or without one for
  // submits and long polls, which the library answers by callback.
  void OnRequest() {
    read_timer_.cancel();
    busy_ = true;
    answered_ = false;
    const uint64_t seq = ++request_seq_;
    auto request = std::make_shared<HttpRequest>(parser_->release());
    ArmAnswerTimer(seq, AnswerDeadline(*request));
    // The guards keep the io_context running while the library or a worker holds the request.
    if (Api::AnswersAsync(*request)) {
      cancel_ =
          api_.HandleAsync(request, [self = this->shared_from_this(), seq,
                                     guard = boost::asio::make_work_guard(stream_.get_executor())](
                                        std::function<ApiResponse()> encode) {
            boost::asio::post(self->stream_.get_executor(),
                              [self, seq, encode = std::move(encode)] {
                                if (self->Answering(seq)) self->WriteResponse(encode());
                              });
          });
      if (cancel_) WatchForHangup(seq);
      return;
    }
    boost::asio::post(workers_, [self = this->shared_from_this(), request, seq,
                                 guard = boost::asio::make_work_guard(stream_.get_executor())] {
      auto response = std::make_shared<ApiResponse>(self->api_.Handle(*request));
      boost::asio::post(self->stream_.get_executor(), [self, seq, response] {
        if (self->Answering(seq)) self->WriteResponse(std::move(*response));
      });
    });
  }

  // How long the Api may take: the answer timeout, plus the wait a long poll asked for.
  std::chrono::milliseconds AnswerDeadline(const HttpRequest& request) const {
    if (!Api::AnswersAsync(request) || request.method() != boost::beast::http::verb::get) {
      return limits_.answer_timeout;
    }
    const std::string_view target = Sv(request.target());
    const size_t question = target.find('?');
    if (question == std::string_view::npos) return limits_.answer_timeout;
    auto wait_ms = QueryInt<int64_t>(ParseQuery(target.substr(question + 1)), "wait_ms", 0);
    const int64_t wait = wait_ms.ok() ? std::clamp<int64_t>(*wait_ms, 0, 3600000) : 0;
    return limits_.answer_timeout + std::chrono::milliseconds(wait);
  }

  // Whether the answer to request `seq` is still awaited; the first answer (the Api's or the
  // timeout's) wins.
  bool Answering(uint64_t seq) {
    if (seq != request_seq_ || answered_) return false;
    answered_ = true;
    answer_timer_.cancel();
    cancel_ = nullptr;
    return true;
  }

  void ArmAnswerTimer(uint64_t seq, std::chrono::milliseconds deadline) {
    answer_timer_.expires_after(deadline);
    answer_timer_.async_wait([self = this->shared_from_this(), seq](error_code ec) {
      if (ec) return;
      Canceller cancel = self->cancel_;
      if (!self->Answering(seq)) return;
      if (cancel) cancel();
      HttpResponse response =
          Api::Error(503, "UNAVAILABLE",
                     "the scheduler did not answer within server.answer_timeout_ms (" +
                         std::to_string(self->limits_.answer_timeout.count()) +
                         " ms); a write may still complete: read before retrying");
      response.set(boost::beast::http::field::retry_after, "1");
      response.keep_alive(false);
      self->Write(std::move(response));
    });
  }

  // While a long poll waits, the client closing the connection ends the poll. The socket turning
  // readable is only a hint: the reactor may report a readiness edge left over from the request's
  // own bytes (read already, speculatively, by another thread), so the socket is peeked: end of
  // stream or an error means the client went; nothing to read means the wake-up was stale and
  // the watch goes on. (Bytes there, a pipelined request or a TLS alert, end the watch without
  // cancelling.)
  void WatchForHangup(uint64_t seq) {
    tcp().socket().async_wait(Socket::wait_read,
                              [self = this->shared_from_this(), seq](error_code ec) {
                                if (ec || seq != self->request_seq_ || self->answered_) return;
                                switch (self->PeekForHangup()) {
                                  case Peek::kNothingYet:
                                    return self->WatchForHangup(seq);
                                  case Peek::kBytes:
                                    return;
                                  case Peek::kClosed:
                                    if (self->cancel_) std::exchange(self->cancel_, nullptr)();
                                    return;
                                }
                              });
  }

  enum class Peek { kNothingYet, kBytes, kClosed };
  Peek PeekForHangup() {
    char byte = 0;
    const ssize_t got = ::recv(tcp().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (got > 0) return Peek::kBytes;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return Peek::kNothingYet;
    }
    return Peek::kClosed;  // 0: an orderly close; any other error: reset.
  }

  void WriteResponse(ApiResponse response) {
    std::visit([this](auto& r) { Write(std::move(r)); }, response);
  }

  // Answers a request that is refused before it was read whole, then closes the connection,
  // reading and dropping what the client still sends so that it sees the response.
  void WriteError(HttpResponse response, const char* retry_after = nullptr) {
    busy_ = true;
    drain_on_close_ = true;
    response.keep_alive(false);
    if (retry_after != nullptr) response.set(boost::beast::http::field::retry_after, retry_after);
    Write(std::move(response));
  }

  void Write(HttpResponse response) {
    if (stopping_.load()) response.keep_alive(false);
    auto owned = std::make_shared<HttpResponse>(std::move(response));
    tcp().expires_after(limits_.request_timeout);
    const bool keep_alive = owned->keep_alive();
    boost::beast::http::async_write(
        stream_, *owned,
        [self = this->shared_from_this(), owned, keep_alive](error_code ec, std::size_t) {
          self->AfterWrite(ec, keep_alive);
        });
  }

  // A file body takes as long as the client needs to read it, but not for ever: the request
  // timeout plus one second per MiB.
  void Write(FileResponse file) {
    if (stopping_.load()) file.keep_alive(false);
    const uint64_t size = file.body().size();
    auto owned = std::make_shared<FileResponse>(std::move(file));
    tcp().expires_after(limits_.request_timeout + std::chrono::seconds(size >> 20));
    const bool keep_alive = owned->keep_alive();
    boost::beast::http::async_write(
        stream_, *owned,
        [self = this->shared_from_this(), owned, keep_alive](error_code ec, std::size_t) {
          self->AfterWrite(ec, keep_alive);
        });
  }

  void AfterWrite(error_code ec, bool keep_alive) {
    busy_ = false;
    if (ec) return CloseSocket();
    if (!keep_alive) return Close();
    Read();
  }

  // Ends the connection: for TLS, with a close_notify first, so the client can tell the end of
  // the stream from a truncation; for plain HTTP after a refusal, once the client has stopped
  // sending (closing with unread bytes would reset the connection and lose the response).
  void Close() {
    if constexpr (kTls) {
      if (handshake_done_ && !shutting_down_) {
        shutting_down_ = true;
        tcp().expires_after(kShutdownTimeout);
        stream_.async_shutdown(
            [self = this->shared_from_this()](error_code) { self->CloseSocket(); });
        return;
      }
    } else {
      if (drain_on_close_) {
        drain_on_close_ = false;
        error_code ignored;
        tcp().socket().shutdown(Socket::shutdown_send, ignored);
        tcp().expires_after(kShutdownTimeout);
        return Drain();
      }
    }
    CloseSocket();
  }

  void Drain() {
    tcp().async_read_some(boost::asio::buffer(drain_buffer_),
                          [self = this->shared_from_this()](error_code ec, std::size_t n) {
                            self->drained_ += n;
                            if (ec || self->drained_ > kMaxDrainBytes) return self->CloseSocket();
                            self->Drain();
                          });
  }

  void CloseSocket() {
    error_code ignored;
    tcp().socket().shutdown(Socket::shutdown_both, ignored);
    tcp().close();
  }

  // close_notify, and the reading of a refused client's leftovers, are courtesies: a client that
  // never finishes must not hold the connection.
  static constexpr std::chrono::seconds kShutdownTimeout{2};
  static constexpr size_t kMaxDrainBytes = 4 << 20;

  Stream stream_;
  Api& api_;
  boost::asio::thread_pool& workers_;
  const ServerLimits& limits_;
  const std::atomic<bool>& stopping_;
  const std::shared_ptr<std::atomic<int>> open_connections_;
  const bool refuse_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::asio::steady_timer read_timer_;
  boost::asio::steady_timer answer_timer_;
  uint64_t request_seq_ = 0;  // the request being read or answered.
  bool busy_ = false;         // a request is being answered.
  bool answered_ = false;     // its response is written or being written.
  bool read_timed_out_ = false;
  Canceller cancel_;  // ends the long poll in flight.
  bool handshake_done_ = false;
  bool shutting_down_ = false;
  bool drain_on_close_ = false;
  std::array<char, 16384> drain_buffer_;
  size_t drained_ = 0;
};

}  // namespace tesserad
