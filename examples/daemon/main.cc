// tesserad: the Tessera scheduler as a service (docs/daemon.md).
//
//   tesserad [--config FILE]
//
// Loads the configuration (no file: the embedded defaults), opens the scheduler, serves the HTTP
// API (HTTPS when server.tls_cert_file and tls_key_file are set) until SIGTERM or SIGINT, then
// stops accepting, finishes the requests in flight and closes the scheduler, which flushes the
// store. Exit status: 0 after a clean shutdown, 1 when the configuration (TLS files included) is
// bad or the scheduler or listener cannot start, 2 for a bad command line.
#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "api.h"
#include "http_server.h"
#include "tessera/daemon_config.h"
#include "tessera/queue_tree.h"
#include "tessera/scheduler.h"
#include "tls_context.h"

namespace {

constexpr std::string_view kUsage = "usage: tesserad [--config FILE]\n";

int Fail(const std::string& what) {
  std::cerr << "tesserad: " << what << "\n";
  return 1;
}

spdlog::level::level_enum SpdlogLevel(tessera::LogLevel level) {
  switch (level) {
    case tessera::LogLevel::kDebug:
      return spdlog::level::debug;
    case tessera::LogLevel::kInfo:
      return spdlog::level::info;
    case tessera::LogLevel::kWarning:
      return spdlog::level::warn;
    case tessera::LogLevel::kError:
      return spdlog::level::err;
    case tessera::LogLevel::kOff:
      break;
  }
  return spdlog::level::off;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if ((arg == "--config" || arg == "-c") && i + 1 < argc) {
      config_path = argv[++i];
    } else if (arg.substr(0, 9) == "--config=") {
      config_path = std::string(arg.substr(9));
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << kUsage;
      return 2;
    }
  }

  // A write to a closed pipe or socket must fail with EPIPE, not end the daemon: a supervisor
  // may stop reading stdout after the "listening" line (the library's first log line, often
  // "store write failed" on a full store, used to kill it there).
  std::signal(SIGPIPE, SIG_IGN);
  // The library logs (store errors, plugin failures) where tesserad's own lines go: stderr,
  // through spdlog's "[time] [tessera] [level] message" lines.
  std::shared_ptr<spdlog::logger> library_log = spdlog::stderr_logger_mt("tessera");

  auto config = tessera::LoadDaemonConfig(config_path);
  if (!config.ok()) return Fail(config.status().ToString());
  auto options = tessera::ToOptions(*config);
  if (!options.ok()) return Fail(options.status().ToString());
  options->log.sink = [library_log](tessera::LogLevel level, std::string_view message) {
    library_log->log(SpdlogLevel(level), "{}", message);
  };

  // Before the store is touched, so that bad TLS files change nothing.
  std::unique_ptr<boost::asio::ssl::context> tls_context;
  if (!config->server().tls_cert_file().empty()) {
    auto loaded = tesserad::LoadServerTlsContext(config->server().tls_cert_file(),
                                                 config->server().tls_key_file());
    if (!loaded.ok()) return Fail(loaded.status().ToString());
    tls_context = std::move(*loaded);
  }

  const std::filesystem::path store_dir = std::filesystem::path(options->store.path).parent_path();
  std::error_code fs_error;
  if (!store_dir.empty()) std::filesystem::create_directories(store_dir, fs_error);
  if (fs_error)
    return Fail("store.path: cannot create " + store_dir.string() + ": " + fs_error.message());

  // Block the signals before any thread starts, so that only the signal_set sees them.
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);

  auto scheduler = tessera::Scheduler::Open(*options);
  if (!scheduler.ok()) return Fail(scheduler.status().ToString());
  if (config->queues_size() > 0) {
    auto applied = tessera::ApplyQueueTree(**scheduler, config->queues());
    if (!applied.ok()) return Fail(applied.status().ToString());
    std::cerr << "tesserad: queues: " << applied->created.size() << " created, "
              << applied->updated.size() << " updated, " << applied->unchanged.size()
              << " unchanged, " << applied->undeclared.size() << " not declared (kept)";
    for (const std::string& name : applied->created) std::cerr << "; created " << name;
    for (const std::string& name : applied->updated) std::cerr << "; updated " << name;
    std::cerr << std::endl;
  }

  std::atomic<bool> stopping{false};
  tesserad::AlertMonitor alerts(**scheduler, config->alerts(), [](const std::string& line) {
    std::cerr << "tesserad: " << line << std::endl;
  });
  tesserad::Api api(scheduler->get(), *config, &stopping, &alerts);
  tesserad::ServerLimits limits;
  limits.max_request_bytes = static_cast<uint64_t>(config->server().max_request_bytes());
  limits.request_timeout = std::chrono::milliseconds(config->server().request_timeout_ms());
  limits.max_header_bytes =
      static_cast<uint32_t>(std::min<int64_t>(config->server().max_header_bytes(), UINT32_MAX));
  limits.answer_timeout = std::chrono::milliseconds(config->server().answer_timeout_ms());
  limits.max_connections = config->server().max_connections();
  tesserad::HttpServer server(io, api, limits);
  if (tls_context != nullptr) server.EnableTls(std::move(tls_context));
  if (auto s = server.Listen(config->server().listen()); !s.ok()) return Fail(s.ToString());

  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    std::cerr << "tesserad: signal " << signal << ", shutting down\n";
    stopping.store(true);
    server.Shutdown();
  });
  server.Start();
  alerts.Start();

  const auto endpoint = server.local_endpoint();
  std::string host = endpoint.address().to_string();
  if (endpoint.address().is_v6()) host = "[" + host + "]";
  std::cout << "tesserad: listening on " << (server.tls() ? "https://" : "http://") << host << ":"
            << endpoint.port() << std::endl;

  // Network threads: they read requests, and for submits also decode and encode JSON (the
  // protobuf JSON mapping costs tens of microseconds a message), so a few more than one keep
  // replies flowing while another thread encodes; 4 measured best on 2 cores (docs/benchmarks.md).
  constexpr int kNetworkThreads = 4;
  std::vector<std::thread> threads;
  for (int i = 1; i < kNetworkThreads; ++i) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
  server.JoinWorkers();
  alerts.Stop();
  scheduler->reset();  // waits for writes in flight and closes the store.
  std::cerr << "tesserad: stopped\n";
  return 0;
}
