// tesserad serving HTTPS and tessctl verifying it, both through their real binaries: a throwaway
// self-signed certificate made at test time with the openssl command (the one docs/daemon-config.md
// shows), a daemon on a loopback port, and the failures a misconfigured side must report.
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/daemon_harness.h"

namespace {

using namespace tesserad_test;

namespace ssl = asio::ssl;

// A directory with a self-signed certificate for 127.0.0.1 (cert.pem, key.pem), an unrelated key
// (other-key.pem), the certificate's key with a passphrase (encrypted-key.pem), and a tesserad
// configuration per test.
class TlsFixture {
 public:
  explicit TlsFixture(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() /
             ("tesserad-tls-test-" + name + "-" + std::to_string(getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const RunResult made =
        Run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
            "-subj /CN=tesserad-test -addext subjectAltName=IP:127.0.0.1 -keyout " +
            ShellQuote(path("key.pem")) + " -out " + ShellQuote(path("cert.pem")) +
            " && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out " +
            ShellQuote(path("other-key.pem")) + " && openssl ec -aes128 -passout pass:secret -in " +
            ShellQuote(path("key.pem")) + " -out " + ShellQuote(path("encrypted-key.pem")));
    INFO("openssl: ", made.err);
    REQUIRE(made.exit_code == 0);
  }
  ~TlsFixture() { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& file) const { return (dir_ / file).string(); }

  // Writes a configuration serving TLS with these files and returns its path.
  std::string Config(const std::string& cert, const std::string& key) const {
    const std::string config = path("tesserad.yaml");
    std::ofstream(config) << "store:\n  path: " << path("var/tessera.db") << "\n"
                          << "server:\n  listen: 127.0.0.1:0\n  tls_cert_file: " << cert
                          << "\n  tls_key_file: " << key << "\n";
    return config;
  }

 private:
  std::filesystem::path dir_;
};

// A TLS connection held open by the test, trusting the fixture's certificate.
class TlsConnection {
 public:
  TlsConnection(unsigned short port, const std::string& ca_file)
      : context_(ssl::context::tls_client), stream_(io_, context_) {
    context_.load_verify_file(ca_file);
    context_.set_verify_mode(ssl::verify_peer);
    beast::get_lowest_layer(stream_).connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    SetReceiveTimeout(beast::get_lowest_layer(stream_).socket().native_handle());
    stream_.handshake(ssl::stream_base::client);
  }

  void Send(const std::string& target) {
    http::request<http::string_body> request{http::verb::get, target, 11};
    request.set(http::field::host, "127.0.0.1");
    http::write(stream_, request);
  }

  // The next response; status -1 with `ec` set when the connection ended instead.
  int Receive(beast::error_code& ec) {
    http::response<http::string_body> response;
    http::read(stream_, buffer_, response, ec);
    return ec ? -1 : static_cast<int>(response.result_int());
  }

  // Answers the server's close_notify with ours.
  void Shutdown() {
    beast::error_code ignored;
    stream_.shutdown(ignored);
  }

  // So a daemon that never answers fails the test instead of hanging it.
  static void SetReceiveTimeout(int fd) {
    timeval timeout{.tv_sec = 10, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }

 private:
  asio::io_context io_;
  ssl::context context_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
};

}  // namespace

TEST_CASE("tesserad serves HTTPS and tessctl verifies its certificate") {
  TlsFixture tls("serve");
  DaemonProcess daemon(tls.Config(tls.path("cert.pem"), tls.path("key.pem")), "https");
  const std::string cacert = tls.path("cert.pem");

  SUBCASE("tessctl trusting the certificate submits and gets a job") {
    const RunResult submitted =
        Tessctl({"--server", daemon.url("https"), "--cacert", cacert, "submit", "--queue",
                 "default", "--gpus", "1", "--", "sleep", "600"});
    INFO(submitted.err);
    REQUIRE(submitted.exit_code == 0);
    const std::string id = submitted.out.substr(0, submitted.out.find('\n'));
    const RunResult got =
        Tessctl({"-o", "json", "get", id},
                {"TESSERA_SERVER=" + daemon.url("https"), "TESSERA_CACERT=" + cacert});
    INFO(got.err);
    CHECK(got.exit_code == 0);
    CHECK(got.out.find("\"id\": \"" + id + "\"") != std::string::npos);
  }

  SUBCASE("an untrusted certificate, a wrong name or a non-TLS URL: exit 5, nothing sent") {
    const RunResult untrusted = Tessctl({"--server", daemon.url("https"), "queues"});
    CHECK(untrusted.exit_code == 5);
    CHECK(untrusted.err.find("TLS certificate verification failed: self-signed certificate") !=
          std::string::npos);
    CHECK(untrusted.err.find("--cacert") != std::string::npos);
    CHECK(untrusted.out.empty());

    // The certificate names 127.0.0.1 only.
    const RunResult wrong_name =
        Tessctl({"--server", daemon.url("https", "localhost"), "--cacert", cacert, "queues"});
    CHECK(wrong_name.exit_code == 5);
    CHECK(wrong_name.err.find("TLS certificate verification failed: hostname mismatch (the "
                              "certificate's subjectAltName does not name the URL's host)") !=
          std::string::npos);

    const RunResult plain = Tessctl({"--server", daemon.url("http"), "queues"});
    CHECK(plain.exit_code == 5);
    CHECK(plain.err.find("cannot reach") != std::string::npos);

    const RunResult insecure = Tessctl({"--server", daemon.url("https"), "--insecure", "queues"});
    INFO(insecure.err);
    CHECK(insecure.exit_code == 0);
    CHECK(insecure.out.find("default") != std::string::npos);
  }

  SUBCASE("a CA file that cannot be loaded is a usage error") {
    const RunResult missing =
        Tessctl({"--server", daemon.url("https"), "--cacert", tls.path("none.pem"), "queues"});
    CHECK(missing.exit_code == 1);
    CHECK(missing.err.find("--cacert") != std::string::npos);
  }

  SUBCASE("a plain HTTP request to the TLS port gets no response, and the daemon carries on") {
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), daemon.port()));
    TlsConnection::SetReceiveTimeout(socket.native_handle());
    const std::string request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    asio::write(socket, asio::buffer(request));
    const auto start = std::chrono::steady_clock::now();
    std::string received;
    beast::error_code ec;
    char buffer[512];
    while (!ec) received.append(buffer, socket.read_some(asio::buffer(buffer), ec));
    CHECK(ec == asio::error::eof);  // closed by the daemon, not by our timeout.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    CHECK(received.rfind("HTTP/", 0) != 0);

    const RunResult after =
        Tessctl({"--server", daemon.url("https"), "--cacert", cacert, "queues"});
    INFO(after.err);
    CHECK(after.exit_code == 0);
  }

  SUBCASE("SIGTERM closes TLS connections with close_notify and exits 0") {
    TlsConnection idle(daemon.port(), cacert);
    TlsConnection polling(daemon.port(), cacert);
    polling.Send("/v1/events?after_seq=1000000&wait_ms=20000");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the poll is waiting.
    const auto start = std::chrono::steady_clock::now();
    daemon.Signal(SIGTERM);

    beast::error_code ec;
    CHECK(polling.Receive(ec) == 200);  // the request in flight finishes.
    CHECK(polling.Receive(ec) == -1);
    CHECK(ec == http::error::end_of_stream);  // a clean end, not ssl::error::stream_truncated.
    polling.Shutdown();
    CHECK(idle.Receive(ec) == -1);
    CHECK(ec == http::error::end_of_stream);
    idle.Shutdown();

    CHECK(daemon.Wait() == 0);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  }
}

TEST_CASE("tesserad refuses to start with TLS files it cannot use, naming the field") {
  TlsFixture tls("refuse");
  struct Case {
    std::string cert;
    std::string key;
    std::string message;
  };
  const std::vector<Case> cases = {
      {tls.path("cert.pem"), tls.path("missing-key.pem"),
       "server.tls_key_file: cannot read " + tls.path("missing-key.pem")},
      {tls.path("missing.pem"), tls.path("key.pem"),
       "server.tls_cert_file: cannot read " + tls.path("missing.pem")},
      {tls.path("cert.pem"), tls.path("other-key.pem"),
       "server.tls_key_file: " + tls.path("other-key.pem") +
           " does not match server.tls_cert_file"},
      {tls.path("cert.pem"), tls.path("cert.pem"),
       "server.tls_key_file: " + tls.path("cert.pem") + " is not an unencrypted PEM private key"},
      {tls.path("cert.pem"), tls.path("encrypted-key.pem"),
       "server.tls_key_file: " + tls.path("encrypted-key.pem") +
           " is not an unencrypted PEM private key: bad decrypt"},
      {tls.path("key.pem"), tls.path("key.pem"),
       "server.tls_cert_file: " + tls.path("key.pem") +
           " is not a PEM certificate chain: no start line"},
  };
  for (const Case& c : cases) {
    const RunResult run = Run(std::string(TESSERAD_PATH) + " --config " +
                              ShellQuote(tls.Config(c.cert, c.key)) + " </dev/null");
    INFO(c.message);
    INFO(run.err);
    CHECK(run.exit_code == 1);
    CHECK(run.err.find(c.message) != std::string::npos);
    CHECK(run.out.empty());
    // Refused before the store was created.
    CHECK(!std::filesystem::exists(tls.path("var")));
  }
}
