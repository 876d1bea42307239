// The HTTP/1.1 server of tesserad: accepts connections with Boost.Beast on Asio (plain HTTP, or
// only HTTPS once EnableTls has a context), reads requests up to the configured size and time
// limits, and hands each to the Api. A job submit is answered asynchronously (Api::HandleAsync:
// the library awaits its commit and the reply is encoded back on the connection's strand); every
// other request runs on a worker pool (it may block: an event watch long-polls), so the network
// threads never wait on the scheduler.
//
// Thread safety: EnableTls, Listen and Start before running the io_context; Shutdown from any
// thread.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api.h"
#include "tessera/status.h"

namespace tesserad {

class Connection;

struct ServerLimits {
  uint64_t max_request_bytes = 1 << 20;
  std::chrono::milliseconds request_timeout{30000};
  int workers = 16;
};

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

  // Stops accepting, closes idle connections and lets requests in flight finish; the io_context
  // then runs out of work. Then waits for the workers.
  void Shutdown();
  void JoinWorkers();

 private:
  void Accept();
  template <typename SessionType>
  void Track(std::shared_ptr<SessionType> session);

  boost::asio::io_context& io_;
  Api& api_;
  const ServerLimits limits_;
  std::unique_ptr<boost::asio::ssl::context> tls_context_;  // null: plain HTTP.
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::thread_pool workers_;
  std::atomic<bool> stopping_{false};
  std::mutex sessions_mutex_;
  std::vector<std::weak_ptr<Connection>> sessions_;
};

}  // namespace tesserad
