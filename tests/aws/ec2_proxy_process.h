// Ec2ProxyProcess: the fault proxy (plugins/common/aws/testing/ec2_fault_proxy.py), which starts
// moto_server, run by a test binary for its whole run on free loopback ports and stopped (with
// its moto_server: one process group) when the binary ends; and the calls a test makes of its
// control endpoint (/fault/...). Shared by the EC2 client's and the aws-ec2 plugin's tests.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "aws/http_transport.h"

namespace tessera::aws::testing {

inline bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string directories = path;
  std::size_t start = 0;
  while (start <= directories.size()) {
    const std::size_t end = directories.find(':', start);
    const std::string directory =
        directories.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!directory.empty() && ::access((directory + "/" + program).c_str(), X_OK) == 0) {
      return true;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

// POST /fault/<what> with a JSON body: the HTTP status and body (0 and the error without reply).
inline std::pair<int, std::string> PostFault(const HttpEndpoint& proxy, const std::string& what,
                                             const std::string& json) {
  BeastHttpTransport transport(std::chrono::seconds(10));
  HttpRequest request;
  request.target = "/fault/" + what;
  request.headers = {{"Content-Type", "application/json"}};
  request.body = json;
  const auto reply = transport.Send(proxy, request);
  if (!reply.ok()) return {0, reply.error().ToString()};
  return {reply.value().status, reply.value().body};
}

// GET /fault/stats: the proxy's counters as JSON text.
inline std::string GetStats(const HttpEndpoint& proxy) {
  BeastHttpTransport transport(std::chrono::seconds(10));
  HttpRequest request;
  request.method = "GET";
  request.target = "/fault/stats";
  const auto reply = transport.Send(proxy, request);
  return reply.ok() ? reply.value().body : "";
}

class Ec2ProxyProcess {
 public:
  // Starts the proxy with signature checks for `access_key`/`secret`, and HTTPS beside HTTP
  // when the openssl command can make a certificate for localhost and `tls` is set.
  bool Start(const std::string& script, const std::string& access_key, const std::string& secret,
             bool tls, std::string* error) {
    directory_ = std::filesystem::temp_directory_path() /
                 ("tessera-ec2-proxy-" + std::to_string(::getpid()));
    std::filesystem::remove_all(directory_);
    std::filesystem::create_directories(directory_);
    const std::filesystem::path port_file = directory_ / "port";
    tls = tls && MakeTestCertificate();
    std::vector<std::string> args = {
        "python3",      script,     "--start-moto",    "--port-file", port_file.string(),
        "--verify-key", access_key, "--verify-secret", secret};
    if (tls) {
      args.insert(args.end(), {"--tls-cert", (directory_ / "cert.pem").string(), "--tls-key",
                               (directory_ / "key.pem").string(), "--tls-port-file",
                               (directory_ / "tls-port").string()});
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      ::execvp("python3", argv.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        *error = "the fault proxy exited before listening (status " + std::to_string(status) + ")";
        return false;
      }
      // The HTTPS port is written first, so both are known once the plain one is.
      const std::string port = ReadPort(port_file);
      if (!port.empty()) {
        endpoint_ = {"http", "127.0.0.1", port, ""};
        if (tls) {
          tls_port_ = ReadPort(directory_ / "tls-port");
          tls_cert_ = (directory_ / "cert.pem").string();
        }
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    *error = "the fault proxy did not listen within 60 s";
    return false;
  }

  const HttpEndpoint& endpoint() const { return endpoint_; }
  const std::string& tls_port() const { return tls_port_; }  // empty without TLS
  const std::string& tls_cert() const { return tls_cert_; }
  // "http://127.0.0.1:<port>"
  std::string url() const { return "http://127.0.0.1:" + endpoint_.port; }

  ~Ec2ProxyProcess() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGTERM);  // its process group: the proxy and the moto_server it started
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

 private:
  // A self-signed certificate for localhost, made with the openssl command; false without it.
  bool MakeTestCertificate() const {
    const std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
        " -addext subjectAltName=DNS:localhost -keyout '" +
        (directory_ / "key.pem").string() + "' -out '" + (directory_ / "cert.pem").string() +
        "' >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
  }

  static std::string ReadPort(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string port;
    in >> port;
    return port;
  }

  pid_t pid_ = -1;
  std::filesystem::path directory_;
  HttpEndpoint endpoint_;
  std::string tls_port_;
  std::string tls_cert_;
};

}  // namespace tessera::aws::testing
