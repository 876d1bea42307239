// Kill -9 at random moments under load: tesserad on the simulated cluster, several clients
// submitting (with idempotency keys, retried until acknowledged, as a careful client does),
// cancelling and long-polling events, while the test kills the daemon with SIGKILL at random
// moments and starts it again on the same store. After every restart CrashInvariants
// (crash_invariants.h) reads the daemon and checks its rules; every fifth kill the load pauses
// until every job has ended and the stricter settled rules are checked too.
//
// The kill moments, job shapes and client pauses come from one seed, printed at the start; the
// run is not deterministic (threads, fsync), but a seed makes a failure's shape repeatable.
//   TESSERA_CRASH_SEED   the seed (default: random)
//   TESSERA_CRASH_KILLS  how many kills (default 20, about 30 s; ctest runs this test alone
//                        as "daemon_crash")
#include <google/protobuf/util/json_util.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "daemon/crash_invariants.h"
#include "daemon/daemon_harness.h"
#include "tessera/options.h"
#include "tessera/v1/api.pb.h"
#include "tessera/v1/job.pb.h"

namespace {

using namespace tesserad_test;
using http::verb;
using Milliseconds = std::chrono::milliseconds;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : fallback;
}

// Lets the test stop every client between two of its calls and know when all have stopped.
class LoadGate {
 public:
  explicit LoadGate(int clients) : clients_(clients) {}
  // A client between calls: waits while paused.
  void Between() {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !paused_; });
    --waiting_;
  }
  // Returns once every client waits in Between.
  void Pause() {
    std::unique_lock lock(mu_);
    paused_ = true;
    cv_.wait(lock, [&] { return waiting_ == clients_; });
  }
  void Resume() {
    std::lock_guard lock(mu_);
    paused_ = false;
    cv_.notify_all();
  }

 private:
  const int clients_;
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool paused_ = false;
};

// `grace_s` > 0: a stopped (cancelled) task keeps running that long, as if checkpointing, so
// that kills land while cancels are in progress.
std::string JobJson(const std::string& name, int tasks, int gpus, int64_t duration_ms,
                    int grace_s) {
  return R"({"queue":"default","name":")" + name + R"(","tasks":)" + std::to_string(tasks) +
         R"(,"checkpointGraceS":)" + std::to_string(grace_s) +
         R"(,"task":{"cpuMilli":1000,"memoryMib":1024,"gpuCount":)" + std::to_string(gpus) +
         R"(},"simulation":{"durationMs":)" + std::to_string(duration_ms) + "}}";
}

const std::map<std::string, std::string> kBinary = {{"Accept", "application/x-protobuf"}};

// Whether every job has ended.
bool AllEnded(unsigned short port) {
  const Reply live = Call(
      port, verb::get, "/v1/jobs?page_size=1&state=PENDING,ADMITTED,STARTING,RUNNING,PREEMPTING");
  return live.status == 200 && live.body == "{}";
}

TEST_CASE("kill -9 at random moments under load: every restart keeps the invariants") {
  const uint64_t seed = EnvOr("TESSERA_CRASH_SEED", std::random_device{}());
  const int kills = static_cast<int>(EnvOr("TESSERA_CRASH_KILLS", 20));
  MESSAGE("seed ", seed, ", ", kills, " kills (replay: TESSERA_CRASH_SEED=", seed, ")");
  std::mt19937_64 random(seed);

  ScratchDir dir("crash");
  const std::string config = dir.File("tesserad.yaml");
  std::ofstream(config) << "store:\n  path: " << dir.File("var/tessera.db") << "\n"
                        << "server:\n  listen: 127.0.0.1:0\n";
  const std::string log = dir.File("tesserad.log");
  auto daemon = std::make_unique<DaemonProcess>(config, "http", log);
  std::atomic<unsigned short> port{daemon->port()};

  CrashInvariants invariants(tessera::DefaultSimulatedCluster());
  constexpr int kSubmitters = 3;
  constexpr int kClients = kSubmitters + 2;  // + a canceller and an event long poller.
  LoadGate gate(kClients);
  std::atomic<bool> stop{false};
  std::atomic<int> unexpected{0};
  std::mutex unexpected_mu;
  std::string first_unexpected;
  auto note_unexpected = [&](const std::string& what, const Reply& reply) {
    if (unexpected++ > 0) return;
    std::lock_guard lock(unexpected_mu);
    first_unexpected = what + ": " + std::to_string(reply.status) + " " + reply.body;
  };
  std::mutex ids_mu;
  std::vector<uint64_t> acknowledged_ids;
  std::atomic<int> cancels_acknowledged{0};

  std::vector<std::thread> clients;
  for (int c = 0; c < kSubmitters; ++c) {
    clients.emplace_back([&, c, client_seed = random()] {
      std::mt19937_64 rng(client_seed);
      for (int n = 0; !stop.load(); ++n) {
        gate.Between();
        const std::string key = "s" + std::to_string(c) + "-" + std::to_string(n);
        const int tasks = std::uniform_int_distribution<int>(1, 2)(rng);
        const int gpus = std::uniform_int_distribution<int>(0, 4)(rng);
        // One job in four runs for seconds and takes a second to stop.
        const bool slow = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
        const int64_t duration = std::uniform_int_distribution<int64_t>(1, slow ? 2000 : 400)(rng);
        const std::string body = JobJson(key, tasks, gpus, duration, slow ? 1 : 0);
        invariants.KeySent(key);
        // Retried with the same key until answered: the daemon may be down or just restarted.
        while (true) {
          const Reply reply =
              Call(port.load(), verb::post, "/v1/jobs", body, nullptr,
                   {{"Idempotency-Key", key}, {"Accept", "application/x-protobuf"}});
          if (reply.status == -1 || reply.status == 503) {
            std::this_thread::sleep_for(Milliseconds(5));
            continue;
          }
          tessera::v1::Job job;
          if (reply.status != 200 || !job.ParseFromString(reply.body)) {
            note_unexpected("submit " + key, reply);
            break;
          }
          invariants.AcknowledgedSubmit(key, job.id());
          std::lock_guard lock(ids_mu);
          acknowledged_ids.push_back(job.id());
          break;
        }
        std::this_thread::sleep_for(Milliseconds(std::uniform_int_distribution<int>(10, 60)(rng)));
      }
    });
  }
  clients.emplace_back([&, client_seed = random()] {
    std::mt19937_64 rng(client_seed);
    while (!stop.load()) {
      gate.Between();
      std::this_thread::sleep_for(Milliseconds(std::uniform_int_distribution<int>(10, 60)(rng)));
      uint64_t id = 0;
      {
        std::lock_guard lock(ids_mu);
        if (acknowledged_ids.empty()) continue;
        // Mostly recent jobs, which are still pending or running.
        const size_t back = std::min<size_t>(acknowledged_ids.size(), 30);
        id = acknowledged_ids[acknowledged_ids.size() - 1 -
                              std::uniform_int_distribution<size_t>(0, back - 1)(rng)];
      }
      const Reply reply = Call(port.load(), verb::post,
                               "/v1/jobs/" + std::to_string(id) + ":cancel", "", nullptr, kBinary);
      tessera::v1::Job job;
      if (reply.status == 200 && job.ParseFromString(reply.body)) {
        invariants.AcknowledgedCancel(id, job.status().attempt());
        ++cancels_acknowledged;
      } else if (reply.status != 409 && reply.status != -1 && reply.status != 503) {
        note_unexpected("cancel " + std::to_string(id), reply);
      }
    }
  });
  clients.emplace_back([&] {
    uint64_t after = 0;
    while (!stop.load()) {
      gate.Between();
      tessera::v1::WatchEventsResponse page;
      const Reply reply = Call(port.load(), verb::get,
                               "/v1/events?max=100&wait_ms=300&after_seq=" + std::to_string(after),
                               "", nullptr, kBinary);
      if (reply.status == 200 && page.ParseFromString(reply.body)) {
        after = page.next_after_seq();
      } else if (reply.status != -1 && reply.status != 503) {
        note_unexpected("event long poll", reply);
      } else {
        std::this_thread::sleep_for(Milliseconds(5));
      }
    }
  });

  auto violated = [&](const std::optional<tessera::scenario::Violation>& v,
                      const std::string& when) {
    if (!v) return false;
    const std::string text = ReadFile(log);
    FAIL_CHECK("seed ", seed, ", ", when, ": ", v->invariant, ": ", v->detail,
               "\n--- tesserad log (end) ---\n",
               text.substr(text.size() > 3000 ? text.size() - 3000 : 0));
    return true;
  };
  // Waits (the load paused or stopped) until every job has ended, then checks the settled rules.
  auto settle_and_check = [&](const std::string& when) {
    bool ended = false;
    for (int i = 0; i < 1200 && !(ended = AllEnded(port.load())); ++i) {
      std::this_thread::sleep_for(Milliseconds(50));
    }
    if (!ended) {
      const Reply live =
          Call(port.load(), verb::get,
               "/v1/jobs?page_size=5&state=PENDING,ADMITTED,STARTING,RUNNING,PREEMPTING");
      const std::string text = ReadFile(log);
      FAIL_CHECK("seed ", seed, ", ", when, ": jobs still live after 60 s: ", live.body,
                 "\n--- tesserad log (end) ---\n",
                 text.substr(text.size() > 3000 ? text.size() - 3000 : 0));
    }
    return !violated(invariants.Check(port.load(), ended), when + " (settled)");
  };

  int kill = 0;
  for (; kill < kills; ++kill) {
    std::this_thread::sleep_for(Milliseconds(std::uniform_int_distribution<int>(50, 1200)(random)));
    daemon->Signal(SIGKILL);
    REQUIRE(daemon->Wait() == -1);
    daemon = std::make_unique<DaemonProcess>(config, "http", log);
    port.store(daemon->port());
    const std::string when = "after kill " + std::to_string(kill + 1);
    if (violated(invariants.Check(port.load(), false), when)) break;
    if ((kill + 1) % 5 == 0) {
      gate.Pause();
      const bool ok = settle_and_check(when);
      gate.Resume();
      if (!ok) break;
    }
  }
  stop.store(true);
  for (auto& client : clients) client.join();
  if (kill == kills) settle_and_check("at the end");
  CHECK(unexpected.load() == 0);
  if (unexpected.load() != 0) MESSAGE("first unexpected answer: ", first_unexpected);
  MESSAGE(kill, " kills, ", invariants.jobs_seen(), " jobs, ", cancels_acknowledged.load(),
          " cancels acknowledged, ", invariants.events_seen(), " events");
  CHECK(invariants.jobs_seen() > 100);
  CHECK(cancels_acknowledged.load() > 10);
}

}  // namespace
