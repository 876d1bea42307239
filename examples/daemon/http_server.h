// The HTTP/1.1 server of tesserad: accepts connections with Boost.Beast on Asio (plain HTTP, or
// only HTTPS once EnableTls has a context) and runs each as a Session (http_session.h), which
// reads requests within the configured limits and hands them to the Api. Job submits and event
// long polls are answered by the library's callbacks; every other request runs on a worker pool
// (it may block on the store), so the network threads never wait on the scheduler.
//
// Connections are capped at server.max_connections: one more is answered 503 and closed. When
// the process runs out of file descriptors, accepting pauses (and says so on stderr) instead of
// spinning, and resumes as connections close.
//
// Thread safety: EnableTls, Listen and Start before running the io_context; Shutdown from any
// thread.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api.h"
#include "http_session.h"
#include "tessera/status.h"

namespace tesserad {

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, Api& api, ServerLimits limits);
  ~HttpServer();

  // Serves HTTPS with `context` (see LoadServerTlsContext) instead of plain HTTP.
  void EnableTls(std::unique_ptr<boost::asio::ssl::context> context);
  bool tls() const;

  // Binds `listen` ("host:port", "[v6]:port"; port 0 picks a free port).
  // Errors: INVALID_ARGUMENT (cannot parse), UNAVAILABLE (cannot bind).
  tessera::Status Listen(const std::string& listen);
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  void Start();

  // Stops accepting, closes idle connections, ends long polls, and lets requests in flight
  // finish; the io_context then runs out of work. Then waits for the workers.
  void Shutdown();
  void JoinWorkers();

 private:
  // What the accept loop reports on stderr, each kind at most once per kLogInterval.
  enum class Trouble { kOutOfDescriptors, kAtConnectionCap };
  struct TroubleLog {
    std::chrono::steady_clock::time_point last{};
    int unreported = 0;
  };

  void Accept();
  void OnAccepted(boost::asio::ip::tcp::socket socket);
  // After an accept failed for want of descriptors (or memory): retries after a pause.
  void PauseAccepting(const boost::system::error_code& ec);
  void Report(Trouble trouble, const std::string& line);  // acceptor strand only.
  template <typename SessionType>
  void Track(std::shared_ptr<SessionType> session);

  boost::asio::io_context& io_;
  Api& api_;
  const ServerLimits limits_;
  std::unique_ptr<boost::asio::ssl::context> tls_context_;  // null: plain HTTP.
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_pause_;  // on the acceptor's strand.
  TroubleLog trouble_log_[2];               // acceptor strand only.
  boost::asio::thread_pool workers_;
  std::atomic<bool> stopping_{false};
  // Sessions alive and counted against max_connections; shared, since a session may outlive the
  // server by a little at exit.
  std::shared_ptr<std::atomic<int>> open_connections_ = std::make_shared<std::atomic<int>>(0);
  std::mutex sessions_mutex_;
  std::vector<std::weak_ptr<Connection>> sessions_;
};

}  // namespace tesserad
