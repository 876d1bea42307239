// ScriptedHttpServer: a tiny HTTP/1.1 server on loopback for the Kubernetes transport and client
// tests (kube_transport_test.cc): each request is answered by the test's handler, which may
// reply at once, stream a chunked body piece by piece (as a watch does), stall, or close the
// connection. It is NOT a fake API server (the Kubernetes stand-in backed by etcd is the
// kube_fake integration test's): it knows no resources, no auth, no resourceVersions, only what
// each test scripts. Connections are kept alive as HTTP/1.1 says, so tests can count them.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::kube::testing {

struct ScriptedRequest {
  std::string method;
  std::string target;
  std::string authorization;
  std::string content_type;
  std::string body;
};

// What the handler does with a request. It writes through the functions below, which return
// false once the client has gone.
class ScriptedReply {
 public:
  // A whole reply with Content-Length.
  virtual void Send(int status, const std::string& body,
                    const std::vector<std::pair<std::string, std::string>>& headers = {}) = 0;
  // The head of a chunked reply, then its chunks, then its end.
  virtual bool StartChunked(int status) = 0;
  virtual bool Chunk(const std::string& bytes) = 0;
  virtual bool EndChunked() = 0;
  // Drop the connection without (further) reply.
  virtual void Close() = 0;
  virtual ~ScriptedReply() = default;
};

using ScriptedHandler = std::function<void(const ScriptedRequest&, ScriptedReply&)>;

class ScriptedHttpServer {
 public:
  explicit ScriptedHttpServer(ScriptedHandler handler);
  ~ScriptedHttpServer();

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  std::vector<ScriptedRequest> requests() const;
  // Closes every open connection (as a server restart, or an idle timeout, would).
  void DropConnections();

 private:
  void Accept();
  void Serve(std::shared_ptr<boost::asio::ip::tcp::socket> socket);

  ScriptedHandler handler_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<int> connections_{0};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<ScriptedRequest> requests_;                             // guarded by mutex_
  std::vector<std::weak_ptr<boost::asio::ip::tcp::socket>> sockets_;  // guarded by mutex_
  std::vector<std::thread> threads_;                                  // guarded by mutex_
  std::thread acceptor_thread_;
};

}  // namespace tessera::kube::testing
