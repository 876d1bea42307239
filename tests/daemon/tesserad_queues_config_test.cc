// tesserad's `queues:` section through the real binary: applied at every start (created, then
// unchanged, then updated when the file changes), and a conflicting declaration stops the start
// with the entry named, the store left as it was.
#include <fstream>
#include <string>

#include "daemon/daemon_harness.h"

namespace {

using namespace tesserad_test;

// Writes dir/tesserad.yaml: port 0, the store in dir/var (created by tesserad), then `extra`.
std::string WriteConfig(const ScratchDir& dir, const std::string& extra) {
  std::ofstream config(dir.File("tesserad.yaml"));
  config << "store:\n  path: " << dir.File("var/tessera.db") << "\n"
         << "server:\n  listen: 127.0.0.1:0\n"
         << extra;
  return dir.File("tesserad.yaml");
}

// Starts tesserad and returns its exit code and stderr, for a start that must fail.
RunResult FailedStart(const std::string& config) {
  return Run(ShellQuote(TESSERAD_PATH) + " --config " + ShellQuote(config));
}

}  // namespace

TEST_CASE("tesserad applies the declared queues at every start, idempotently") {
  const ScratchDir dir("queues-config");
  const std::string declared =
      "queues:\n"
      "  - {name: research/vision, weight: 2}\n"
      "  - {name: research, weight: 3}\n";
  const std::string config = WriteConfig(dir, declared);
  const std::string log = dir.File("stderr.log");
  {
    DaemonProcess daemon(config, "http", log);
    const RunResult queues = Tessctl({"--server", daemon.url(), "queues"});
    INFO(queues.out);
    CHECK(queues.out.find("research/vision   2 ") != std::string::npos);
    CHECK(queues.out.find("research          3 ") != std::string::npos);
    CHECK(daemon.Stop() == 0);
  }
  CHECK(ReadFile(log).find("tesserad: queues: 2 created, 0 updated, 0 unchanged, 1 not declared "
                           "(kept); created research; created research/vision") !=
        std::string::npos);
  {
    DaemonProcess daemon(config, "http", log);
    CHECK(daemon.Stop() == 0);
  }
  CHECK(ReadFile(log).find("queues: 0 created, 0 updated, 2 unchanged") != std::string::npos);

  WriteConfig(dir, "queues:\n  - {name: research, weight: 5}\n");
  DaemonProcess daemon(config, "http", log);
  CHECK(ReadFile(log).find("queues: 0 created, 1 updated, 0 unchanged, 2 not declared (kept); "
                           "updated research") != std::string::npos);
  const RunResult queues = Tessctl({"--server", daemon.url(), "queues", "-o", "json"});
  CHECK(queues.out.find(R"("name":"research","weight":5)") != std::string::npos);
  CHECK(queues.out.find(R"("name":"research/vision")") != std::string::npos);
}

TEST_CASE("tesserad refuses to start with a queue declaration that conflicts") {
  const ScratchDir dir("queues-conflict");
  const std::string config = WriteConfig(dir, "");
  {
    DaemonProcess daemon(config);
    REQUIRE(Tessctl({"--server", daemon.url(), "submit", "--queue", "default"}).exit_code == 0);
    CHECK(daemon.Stop() == 0);
  }
  WriteConfig(dir, "queues:\n  - {name: default/child}\n");
  const RunResult refused = FailedStart(config);
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("tesserad: FAILED_PRECONDITION: queues[0].name: cannot create "
                         "'default/child': 'default' holds unfinished jobs, so it must stay a "
                         "leaf") != std::string::npos);

  WriteConfig(dir, "queues:\n  - {name: a}\n  - {name: a}\n");
  const RunResult duplicate = FailedStart(config);
  CHECK(duplicate.exit_code == 1);
  CHECK(duplicate.err.find("queues[1].name: 'a' is declared twice (also queues[0])") !=
        std::string::npos);
}

TEST_CASE("tesserad refuses an events page larger than the HTTP API allows (docs/errors.md)") {
  const ScratchDir dir("events-max");
  DaemonProcess daemon(WriteConfig(dir, ""));
  const Reply reply = Call(daemon.port(), http::verb::get, "/v1/events?max=5000", "", nullptr);
  CHECK(reply.status == 400);
  CHECK(reply.body.find("max: must be in 1..1000, got 5000") != std::string::npos);
}
