#include "unit/plugins_common/kube_scripted_server.h"

#include <cstdio>

namespace tessera::kube::testing {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

class SocketReply : public ScriptedReply {
 public:
  explicit SocketReply(tcp::socket& socket) : socket_(socket) {}

  void Send(int status, const std::string& body,
            const std::vector<std::pair<std::string, std::string>>& headers) override {
    http::response<http::string_body> response(static_cast<http::status>(status), 11);
    response.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) response.set(name, value);
    response.body() = body;
    response.prepare_payload();
    beast::error_code code;
    http::write(socket_, response, code);
    if (code) closed = true;
    replied = true;
  }

  bool StartChunked(int status) override {
    std::string head =
        "HTTP/1.1 " + std::to_string(status) +
        " OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    replied = true;
    return Write(head);
  }

  bool Chunk(const std::string& bytes) override {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
    return Write(size + bytes + "\r\n");
  }

  bool EndChunked() override { return Write("0\r\n\r\n"); }

  void Close() override {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    closed = true;
    replied = true;
  }

  bool replied = false;
  bool closed = false;

 private:
  bool Write(const std::string& bytes) {
    beast::error_code code;
    boost::asio::write(socket_, boost::asio::buffer(bytes), code);
    if (code) closed = true;
    return !code;
  }

  tcp::socket& socket_;
};

}  // namespace

ScriptedHttpServer::ScriptedHttpServer(ScriptedHandler handler)
    : handler_(std::move(handler)), acceptor_(io_, tcp::endpoint(tcp::v4(), 0)) {
  port_ = acceptor_.local_endpoint().port();
  acceptor_thread_ = std::thread([this] { Accept(); });
}

ScriptedHttpServer::~ScriptedHttpServer() {
  stopping_ = true;
  beast::error_code ignored;
  acceptor_.close(ignored);
  // Wake the blocking accept() with a connection of our own.
  {
    boost::asio::io_context io;
    tcp::socket poke(io);
    poke.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_), ignored);
  }
  acceptor_thread_.join();
  DropConnections();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    threads.swap(threads_);
  }
  for (std::thread& thread : threads) thread.join();
}

std::vector<ScriptedRequest> ScriptedHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

void ScriptedHttpServer::DropConnections() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& weak : sockets_) {
    if (auto socket = weak.lock()) {
      beast::error_code ignored;
      socket->shutdown(tcp::socket::shutdown_both, ignored);
    }
  }
}

void ScriptedHttpServer::Accept() {
  while (!stopping_) {
    auto socket = std::make_shared<tcp::socket>(io_);
    beast::error_code code;
    acceptor_.accept(*socket, code);
    if (code || stopping_) return;
    connections_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mutex_);
    sockets_.push_back(socket);
    threads_.emplace_back([this, socket] { Serve(socket); });
  }
}

void ScriptedHttpServer::Serve(std::shared_ptr<tcp::socket> socket) {
  beast::flat_buffer buffer;
  while (!stopping_) {
    http::request<http::string_body> request;
    beast::error_code code;
    http::read(*socket, buffer, request, code);
    if (code) return;
    ScriptedRequest seen;
    seen.method = std::string(request.method_string());
    seen.target = std::string(request.target());
    seen.authorization = std::string(request[http::field::authorization]);
    seen.content_type = std::string(request[http::field::content_type]);
    seen.body = request.body();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back(seen);
    }
    SocketReply reply(*socket);
    handler_(seen, reply);
    if (reply.closed || !reply.replied || !request.keep_alive()) {
      beast::error_code ignored;
      socket->shutdown(tcp::socket::shutdown_both, ignored);
      return;
    }
  }
}

}  // namespace tessera::kube::testing
