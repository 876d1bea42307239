// Fuzz target: one HTTP request to tesserad, from its bytes to its response, without a socket:
// Boost.Beast's request parser (what http_server.cc reads with), then Api::Handle or, for a
// submit, Api::HandleAsync — authentication, the router, the query and body codec
// (http_codec.h) and the scheduler call behind the route. The scheduler is opened once, in
// memory, on the default simulated cluster, with an admin token ("admin-token") and a tenant
// token ("tenant-token", queue prefix "default") configured, as the seeds use them. Every
// request must get a response with a valid status; a crash, a hang or a sanitizer report is a
// finding.

#include <atomic>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <variant>

#include "api.h"
#include "auth.h"
#include "fuzz_support.h"
#include "tessera/daemon_config.h"
#include "tessera/scheduler.h"

namespace http = boost::beast::http;

namespace {

// Long polls return at once: stopping is set (so /readyz answers 503, as during a shutdown).
std::atomic<bool> stopping{true};

tesserad::Api& TheApi() {
  static tesserad::Api* api = [] {
    tessera::v1::DaemonConfig config;
    tessera::v1::TokenConfig* admin = config.mutable_auth()->add_tokens();
    admin->set_sha256(tesserad::Sha256Hex("admin-token"));
    admin->set_name("admin");
    admin->set_admin(true);
    tessera::v1::TokenConfig* tenant = config.mutable_auth()->add_tokens();
    tenant->set_sha256(tesserad::Sha256Hex("tenant-token"));
    tenant->set_name("tenant");
    tenant->set_queue_prefix("default");
    // The scheduler's store is in memory; /v1/admin/backup writes its copy (then unlinks it)
    // next to the configured path, which is kept out of the working directory.
    static std::string dir =
        (std::filesystem::temp_directory_path() / "tessera-fuzz-http-XXXXXX").string();
    FUZZ_CHECK(::mkdtemp(dir.data()) != nullptr);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    config.mutable_store()->set_path(dir + "/tessera.db");
    tessera::ApplyDaemonConfigDefaults(&config);
    auto options = tessera::ToOptions(config);
    FUZZ_CHECK(options.ok());
    options->store.path = "";  // in memory: nothing left on disk, nothing shared between runs.
    options->log.level = tessera::LogLevel::kOff;
    auto scheduler = tessera::Scheduler::Open(*options);
    FUZZ_CHECK(scheduler.ok());
    return new tesserad::Api(scheduler->release(), config, &stopping);
  }();
  return *api;
}

int StatusOf(const tesserad::ApiResponse& response) {
  return std::visit([](const auto& r) { return static_cast<int>(r.result_int()); }, response);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  TheApi();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::asio::const_buffer rest(data, size);
  boost::beast::error_code ec;
  while (rest.size() > 0 && !parser.is_done()) {
    const size_t used = parser.put(rest, ec);
    if (ec == http::error::need_more) return 0;
    if (ec) return 0;  // Beast refuses it; http_server.cc answers 400 without reaching Api.
    rest += used;
  }
  if (!parser.is_done()) return 0;
  auto request = std::make_shared<const tesserad::HttpRequest>(parser.release());

  tesserad::Api& api = TheApi();
  int status = 0;
  if (tesserad::Api::AnswersAsync(*request)) {
    auto answered = std::make_shared<std::promise<int>>();
    std::future<int> done = answered->get_future();
    api.HandleAsync(request, [answered](std::function<tesserad::ApiResponse()> encode) {
      answered->set_value(StatusOf(encode()));
    });
    FUZZ_CHECK(done.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    status = done.get();
  } else {
    status = StatusOf(api.Handle(*request));
  }
  FUZZ_CHECK(status >= 100 && status <= 599);
  return 0;
}
