// What the tests of tesserad share: starting the real tesserad binary on a loopback port with a
// configuration file, talking HTTP to it, running the real tessctl (cli/tessctl_runner.h), and a
// scratch directory per test. TESSERAD_PATH and TESSCTL_PATH are set by tests/CMakeLists.txt.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/tessctl_runner.h"

namespace tesserad_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A fresh directory under the system's temporary directory, removed with the object.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("tesserad-test-" + name + "-" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct Reply {
  int status = 0;  // -1 when no response came back.
  std::string body;
  std::string content_type;
};

// One HTTP/1.1 request to 127.0.0.1:`port` on a new connection.
inline Reply Call(unsigned short port, http::verb method, const std::string& target,
                  const std::string& body = "", const char* token = nullptr,
                  const std::map<std::string, std::string>& headers = {}) {
  asio::io_context io;
  tcp::socket socket(io);
  beast::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return {-1, ec.message(), ""};
  http::request<http::string_body> request{method, target, 11};
  request.set(http::field::host, "127.0.0.1");
  if (token != nullptr) request.set(http::field::authorization, std::string("Bearer ") + token);
  for (const auto& [key, value] : headers) request.set(key, value);
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  http::write(socket, request, ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  if (!ec) http::read(socket, buffer, response, ec);
  Reply reply;
  reply.status = ec ? -1 : static_cast<int>(response.result_int());
  reply.body = ec ? ec.message() : response.body();
  reply.content_type = std::string(response[http::field::content_type]);
  return reply;
}

// A raw TCP connection to 127.0.0.1:`port`, for what Call cannot send: malformed requests,
// requests left waiting. Each read gives up after `timeout`.
class RawConnection {
 public:
  explicit RawConnection(unsigned short port,
                         std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConnection() { Close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads one response: its header, then Content-Length bytes of body; stops early when the
  // peer closes or a read times out. Returns what arrived ("" for nothing).
  std::string ReadResponse() {
    std::string in = std::move(pending_);
    pending_.clear();
    size_t header_end = std::string::npos;
    while ((header_end = in.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadMore(in)) return in;
    }
    size_t length = 0;
    const size_t field = in.find("Content-Length: ");
    if (field != std::string::npos && field < header_end)
      length = std::stoul(in.substr(field + 16));
    const size_t end = header_end + 4 + length;
    while (in.size() < end) {
      if (!ReadMore(in)) return in;
    }
    pending_ = in.substr(end);
    return in.substr(0, end);
  }
  // Whether the peer has closed the connection (a read returns end of stream in time).
  bool PeerClosed() {
    char c;
    return recv(fd_, &c, 1, 0) == 0;
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  bool ReadMore(std::string& in) {
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    if (n <= 0) return false;
    in.append(buffer, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;
};

// The status code of the raw response `raw` ("HTTP/1.1 400 Bad Request..."), 0 if none.
inline int StatusOf(const std::string& raw) {
  if (raw.size() < 12 || raw.compare(0, 5, "HTTP/") != 0) return 0;
  return std::stoi(raw.substr(9, 3));
}
inline std::string BodyOf(const std::string& raw) {
  const size_t end = raw.find("\r\n\r\n");
  return end == std::string::npos ? "" : raw.substr(end + 4);
}

// A tesserad process started with `config`, killed (SIGKILL) with the object unless stopped.
// Its stderr goes to `stderr_path` (appended) when given.
class DaemonProcess {
 public:
  // `max_open_files` > 0 runs it under that RLIMIT_NOFILE (ulimit -n).
  DaemonProcess(const std::string& config, const std::string& scheme = "http",
                const std::string& stderr_path = "", int max_open_files = 0) {
    int out[2];
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      if (!stderr_path.empty()) {
        const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (err >= 0) dup2(err, STDERR_FILENO);
      }
      if (max_open_files > 0) {
        const rlimit limit{static_cast<rlim_t>(max_open_files),
                           static_cast<rlim_t>(max_open_files)};
        setrlimit(RLIMIT_NOFILE, &limit);
      }
      execl(TESSERAD_PATH, TESSERAD_PATH, "--config", config.c_str(), nullptr);
      _exit(127);
    }
    close(out[1]);
    std::string line;
    char c;
    while (read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
    close(out[0]);
    INFO("first line: ", line);
    REQUIRE(line.find("tesserad: listening on " + scheme + "://127.0.0.1:") == 0);
    port_ = static_cast<unsigned short>(std::stoi(line.substr(line.rfind(':') + 1)));
  }
  ~DaemonProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  unsigned short port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url(const std::string& scheme = "http", const std::string& host = "127.0.0.1") const {
    return scheme + "://" + host + ":" + std::to_string(port_);
  }

  void Signal(int signal) const { kill(pid_, signal); }

  // Waits for the daemon to exit; returns its exit status, or -1 if a signal ended it.
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Waits up to `timeout` (0: only looks) for the daemon to exit; true if it has (it is then
  // reaped, as by Wait).
  bool ExitedWithin(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    do {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < end);
    return false;
  }

  int Stop(int signal = SIGTERM) {
    Signal(signal);
    return Wait();
  }

 private:
  pid_t pid_ = -1;
  unsigned short port_ = 0;
};

// SHA-256 of `token` in hex, as auth.tokens[].sha256 wants it.
inline std::string Sha256(const std::string& token) {
  const RunResult digest = Run("printf %s " + ShellQuote(token) + " | sha256sum");
  REQUIRE(digest.out.size() >= 64);
  return digest.out.substr(0, 64);
}

// The job id in a Job's JSON ({"id":"7",...}).
inline std::string JobId(const std::string& json) {
  const std::string key = "\"id\":\"";
  const size_t start = json.find(key);
  REQUIRE(start != std::string::npos);
  return json.substr(start + key.size(), json.find('"', start + key.size()) - start - key.size());
}

}  // namespace tesserad_test
