// A full store, end to end: tesserad with a store size cap (store.max_size_mib, SQLite's
// max_page_count: the same SQLITE_FULL a full disk gives, without a small filesystem, which an
// unprivileged test cannot mount) is filled until submits get 507; then every kind of call still
// gets an answer within server.answer_timeout_ms, the daemon keeps running while it retries its
// writes, stops on SIGTERM, and after a restart with room every acknowledged job is there.
#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "daemon/daemon_harness.h"

namespace {

using namespace tesserad_test;
using http::verb;
using SteadyClock = std::chrono::steady_clock;

constexpr int kAnswerTimeoutMs = 2000;

std::string WriteConfig(const ScratchDir& dir, int max_size_mib) {
  const std::string path = dir.File("tesserad.yaml");
  std::ofstream(path) << "store:\n  path: " << dir.File("var/tessera.db")
                      << "\n  max_size_mib: " << max_size_mib << "\n"
                      << "server:\n  listen: 127.0.0.1:0\n  answer_timeout_ms: " << kAnswerTimeoutMs
                      << "\n";
  return path;
}

// Eight GPUs; `big`: with 16 KiB of environment, so that the store fills in few submits. The
// first two (one per 8-GPU node) end after 3 s, while the store is full, so that the engine's
// writes fail too; the others run for ten minutes.
std::string Job(int i, bool big) {
  const std::string env =
      big ? R"(,"env":{"BLOB":")" + std::string(16 * 1024, static_cast<char>('a' + i % 26)) + "\"}"
          : "";
  return R"({"queue":"default","name":"job-)" + std::to_string(i) +
         R"(","task":{"cpuMilli":1000,"memoryMib":1024,"gpuCount":8})" + env +
         R"(,"simulation":{"durationMs":)" + (i < 2 ? "3000" : "600000") + "}}";
}

// One call, which must be answered (with one of `expected`) within the answer deadline.
Reply Answered(const DaemonProcess& daemon, verb method, const std::string& target,
               std::initializer_list<int> expected, const std::string& body = "") {
  const auto start = SteadyClock::now();
  const Reply reply = Call(daemon.port(), method, target, body);
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start).count();
  INFO(target, " answered ", reply.status, " in ", took, " ms: ", reply.body.substr(0, 300));
  CHECK(took < kAnswerTimeoutMs + 1000);
  CHECK(std::find(expected.begin(), expected.end(), reply.status) != expected.end());
  return reply;
}

TEST_CASE(
    "a full store: every call is answered in time, the daemon keeps running, nothing "
    "acknowledged is lost") {
  ScratchDir dir("store-full");
  const std::string log = dir.File("tesserad.log");
  auto daemon = std::make_unique<DaemonProcess>(WriteConfig(dir, 1), "http", log);

  // Large submits until one is refused, then small ones until three in a row are: what is
  // left fits not even a job's status.
  std::vector<std::string> acknowledged;
  Reply refused;
  int refusals_in_a_row = 0;
  bool big = true;
  for (int i = 0; i < 5000 && refusals_in_a_row < 3; ++i) {
    const Reply reply = Answered(*daemon, verb::post, "/v1/jobs", {200, 507}, Job(i, big));
    if (reply.status == 200) {
      acknowledged.push_back(JobId(reply.body));
      refusals_in_a_row = 0;
    } else {
      refused = reply;
      big = false;
      ++refusals_in_a_row;
    }
  }
  REQUIRE(refusals_in_a_row == 3);
  CHECK(refused.body.find("database or disk is full") != std::string::npos);
  // Two run (one per 8-GPU node), the rest wait.
  REQUIRE(acknowledged.size() > 4);
  MESSAGE(acknowledged.size(), " submits acknowledged before the store was full");

  const std::string& running = acknowledged[2];
  const std::string& pending = acknowledged.back();
  for (int round = 0; round < 2; ++round) {
    INFO("round ", round);
    // The cancel changes the scheduler at once; the store cannot record it, and says so.
    const Reply cancel =
        Answered(*daemon, verb::post, "/v1/jobs/" + pending + ":cancel", {200, 409, 507});
    if (cancel.status == 507) {
      CHECK(cancel.body.find("the store has not recorded it yet") != std::string::npos);
    }
    Answered(*daemon, verb::post, "/v1/jobs/" + running + ":cancel", {200, 409, 507});
    Answered(*daemon, verb::get, "/v1/jobs/" + pending, {200});
    Answered(*daemon, verb::get, "/v1/jobs", {200});
    Answered(*daemon, verb::get, "/v1/events?after_seq=0&max=10", {200});
    Answered(*daemon, verb::get, "/v1/events?after_seq=100000&wait_ms=200", {200});
    Answered(*daemon, verb::get, "/v1/nodes", {200});
    Answered(*daemon, verb::get, "/v1/queues", {200});
    Answered(*daemon, verb::get, "/healthz", {200});
    Answered(*daemon, verb::get, "/metrics", {200});
    Answered(*daemon, verb::post, "/v1/jobs", {507}, Job(10000 + round, false));
    // A small write may still fit in a page that has room.
    Answered(*daemon, verb::post, "/v1/queues", {200, 409, 507}, R"({"name":"later"})");
    // The engine retries its failed writes every second (engine.store_retry): the daemon
    // lives through the retries.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    INFO(ReadFile(log));
    REQUIRE_FALSE(daemon->ExitedWithin(std::chrono::milliseconds(0)));
  }
  // The engine's own writes (the first two jobs ending, the cancels) failed and wait.
  // The engine's own writes (the first two jobs ending, the cancels) failed and wait.
  CHECK(ReadFile(log).find("store write failed, pausing decisions and retrying") !=
        std::string::npos);
  const std::string metrics = Call(daemon->port(), verb::get, "/metrics").body;
  CHECK(metrics.find("tessera_store_errors_total 0\n") == std::string::npos);

  // SIGTERM stops it although writes wait for room.
  daemon->Signal(SIGTERM);
  const bool exited = daemon->ExitedWithin(std::chrono::seconds(20));
  INFO(ReadFile(log));
  CHECK_MESSAGE(exited, "tesserad did not stop within 20 s of SIGTERM on a full store");
  daemon.reset();

  // With room again, every acknowledged job is there.
  DaemonProcess roomy(WriteConfig(dir, 64), "http", log);
  for (const std::string& id : acknowledged) {
    INFO("job ", id);
    CHECK(Call(roomy.port(), verb::get, "/v1/jobs/" + id).status == 200);
  }
  Answered(roomy, verb::post, "/v1/jobs", {200}, Job(20000, false));
}

}  // namespace
