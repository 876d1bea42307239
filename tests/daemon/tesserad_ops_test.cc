// Operating tesserad through its real binaries: backup and restore with tessctl, alerts in the
// log and on /metrics, many clients at once, and a kill -9 under load after which every
// acknowledged job is still there and none runs twice.
#include <atomic>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/daemon_harness.h"

namespace {

using namespace tesserad_test;
using http::verb;

// A configuration on the default simulated cluster (24 GPUs), no tokens (loopback), the store
// in `dir`/var, plus `extra` YAML.
std::string WriteConfig(const ScratchDir& dir, const std::string& extra = "") {
  const std::string path = dir.File("tesserad.yaml");
  std::ofstream(path) << "store:\n  path: " << dir.File("var/tessera.db") << "\n"
                      << "server:\n  listen: 127.0.0.1:0\n"
                      << extra;
  return path;
}

std::string JobJson(int gpus, int64_t duration_ms, const std::string& name = "") {
  return R"({"queue":"default","name":")" + name +
         R"(","task":{"cpuMilli":1000,"memoryMib":1024,"gpuCount":)" + std::to_string(gpus) +
         R"(},"simulation":{"durationMs":)" + std::to_string(duration_ms) + "}}";
}

// Every event after `after`, by paging through /v1/events.
std::vector<std::string> AllEvents(const DaemonProcess& daemon) {
  std::vector<std::string> events;
  uint64_t after = 0;
  while (true) {
    const Reply page =
        Call(daemon.port(), verb::get, "/v1/events?max=1000&after_seq=" + std::to_string(after));
    REQUIRE(page.status == 200);
    size_t at = 0;
    size_t found = 0;
    const std::string open = "{\"seq\":\"";
    while ((at = page.body.find(open, at)) != std::string::npos) {
      const size_t end = page.body.find('}', at);
      events.push_back(page.body.substr(at, end - at + 1));
      after = std::stoull(page.body.substr(at + open.size()));
      at = end;
      ++found;
    }
    if (found == 0) return events;
  }
}

std::string Field(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  size_t at = json.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  if (json[at] == '"') return json.substr(at + 1, json.find('"', at + 1) - at - 1);
  return json.substr(at, json.find_first_of(",}", at) - at);
}

int CountJobs(const DaemonProcess& daemon) {
  const RunResult ls = Tessctl({"--server", daemon.url(), "-o", "json", "ls"});
  REQUIRE(ls.exit_code == 0);
  int count = 0;
  for (size_t at = 0; (at = ls.out.find("\"id\":", at)) != std::string::npos; ++at) ++count;
  return count;
}

TEST_CASE("tessctl backup and restore: the store comes back as it was when backed up") {
  ScratchDir dir("backup");
  const std::string config = WriteConfig(dir);
  const std::string backup = dir.File("backup.db");
  auto daemon = std::make_unique<DaemonProcess>(config);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(Call(daemon->port(), verb::post, "/v1/jobs", JobJson(1, 0)).status == 200);
  }
  const RunResult taken = Tessctl({"--server", daemon->url(), "backup", backup});
  INFO(taken.err);
  REQUIRE(taken.exit_code == 0);
  CHECK(taken.out == backup + "\n");
  CHECK(taken.err.find("backup: ") != std::string::npos);  // progress on stderr.
  CHECK_FALSE(std::filesystem::exists(backup + ".partial"));
  // The daemon leaves no copy of its own behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "var")) {
    CHECK(entry.path().filename().string().find(".backup-") == std::string::npos);
  }
  REQUIRE(Call(daemon->port(), verb::post, "/v1/jobs", JobJson(1, 0)).status == 200);
  CHECK(CountJobs(*daemon) == 6);

  // While the daemon has the store open, restore refuses and changes nothing.
  const RunResult busy =
      Tessctl({"restore", backup, "--store", dir.File("var/tessera.db"), "--quiet"});
  CHECK(busy.exit_code == 5);
  CHECK(busy.err.find("in use by another scheduler process") != std::string::npos);

  REQUIRE(daemon->Stop(SIGTERM) == 0);
  daemon.reset();
  const RunResult restored = Tessctl({"restore", backup, "--store", dir.File("var/tessera.db")});
  INFO(restored.err);
  REQUIRE(restored.exit_code == 0);
  CHECK(restored.out.find("the previous store is in " + dir.File("var/tessera.db.pre-restore")) !=
        std::string::npos);
  CHECK(restored.err.find("restoring: ") != std::string::npos);

  daemon = std::make_unique<DaemonProcess>(config);
  CHECK(CountJobs(*daemon) == 5);
  // New jobs continue after the restored ones.
  const Reply next = Call(daemon->port(), verb::post, "/v1/jobs", JobJson(1, 0));
  CHECK(JobId(next.body) == "6");

  const RunResult not_a_store = Tessctl({"restore", config, "--store", dir.File("other.db")});
  CHECK(not_a_store.exit_code == 1);
  CHECK(not_a_store.err.find("is not a SQLite database") != std::string::npos);
}

TEST_CASE("tessctl queue create, update and delete") {
  ScratchDir dir("queues");
  DaemonProcess daemon(WriteConfig(dir));
  const std::string file = dir.File("vision.yaml");
  std::ofstream(file) << "name: vision\nweight: 2\n";
  const RunResult created = Tessctl({"--server", daemon.url(), "queue", "create", "-f", file});
  INFO(created.err);
  CHECK(created.exit_code == 0);
  CHECK(created.out == "queue vision created\n");
  CHECK(Tessctl({"--server", daemon.url(), "queue", "create", "-f", file}).exit_code == 2);
  std::ofstream(file) << "name: vision\nweight: 5\n";
  const RunResult updated =
      Tessctl({"--server", daemon.url(), "-o", "json", "queue", "update", "-f", file});
  CHECK(updated.exit_code == 0);
  CHECK(updated.out.find("\"weight\":5") != std::string::npos);
  std::ofstream(file) << "name: vision\nwieght: 5\n";
  const RunResult typo = Tessctl({"--server", daemon.url(), "queue", "update", "-f", file});
  CHECK(typo.exit_code == 1);
  CHECK(typo.err.find(":2:1: wieght: unknown field") != std::string::npos);
  CHECK(Tessctl({"--server", daemon.url(), "queue", "delete", "vision"}).exit_code == 0);
  CHECK(Tessctl({"--server", daemon.url(), "queue", "delete", "vision"}).exit_code == 3);
}

TEST_CASE("tessctl backup needs an admin token") {
  ScratchDir dir("backup-auth");
  const std::string config = WriteConfig(
      dir, "auth:\n  tokens:\n    - {name: a, queue_prefix: team-a, sha256: " + Sha256("tenant") +
               "}\n");
  DaemonProcess daemon(config);
  const RunResult denied =
      Tessctl({"--server", daemon.url(), "--token", "tenant", "backup", dir.File("b.db")});
  CHECK(denied.exit_code == 4);
  CHECK(denied.err.find("only an admin token may take backups") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.File("b.db")));
  CHECK_FALSE(std::filesystem::exists(dir.File("b.db.partial")));
}

TEST_CASE("POST /v1/admin/check-store runs SQLite's check of the live store") {
  ScratchDir dir("check-store");
  DaemonProcess daemon(WriteConfig(dir));
  const Reply quick = Call(daemon.port(), verb::post, "/v1/admin/check-store");
  CHECK(quick.status == 200);
  CHECK(quick.body == "{\"ok\":true,\"level\":\"quick\"}\n");
  const Reply full = Call(daemon.port(), verb::post, "/v1/admin/check-store?level=full");
  CHECK(full.status == 200);
  CHECK(Field(full.body, "level") == "full");
  const Reply bad = Call(daemon.port(), verb::post, "/v1/admin/check-store?level=deep");
  CHECK(bad.status == 400);
  CHECK(bad.body.find("level: must be quick or full, got 'deep'") != std::string::npos);
}

TEST_CASE("POST /v1/admin/check-store needs an admin token") {
  ScratchDir dir("check-store-auth");
  DaemonProcess daemon(WriteConfig(
      dir, "auth:\n  tokens:\n    - {name: a, queue_prefix: team-a, sha256: " + Sha256("tenant") +
               "}\n"));
  const Reply denied = Call(daemon.port(), verb::post, "/v1/admin/check-store", "", "tenant");
  CHECK(denied.status == 403);
  CHECK(denied.body.find("only an admin token may check the store") != std::string::npos);
}

TEST_CASE("tesserad logs an alert when it starts and when it resolves, and shows it on /metrics") {
  ScratchDir dir("alerts");
  const std::string log = dir.File("stderr.log");
  DaemonProcess daemon(
      WriteConfig(dir, "alerts:\n  check_interval_ms: 50\n  queue_pending_jobs: 1\n"), "http", log);
  // Two 8-GPU jobs fill the two 8-GPU nodes; the next three wait.
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(JobId(Call(daemon.port(), verb::post, "/v1/jobs", JobJson(8, 0)).body));
  }
  auto wait_for = [&](const std::string& text) {
    for (int i = 0; i < 100 && ReadFile(log).find(text) == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return ReadFile(log).find(text) != std::string::npos;
  };
  CHECK(wait_for("tesserad: alert queue_backlog firing: default: 3 pending > 1"));
  const Reply metrics = Call(daemon.port(), verb::get, "/metrics");
  CHECK(metrics.body.find("tessera_alert_threshold{alert=\"queue_backlog\"} 1") !=
        std::string::npos);
  CHECK(metrics.body.find("tessera_alert_firing{alert=\"queue_backlog\",subject=\"default\"} 1") !=
        std::string::npos);
  CHECK(metrics.body.find("tessera_decision_latency_seconds_bucket{le=\"+Inf\"}") !=
        std::string::npos);
  for (size_t i = 2; i < ids.size(); ++i) {
    CHECK(Call(daemon.port(), verb::post, "/v1/jobs/" + ids[i] + ":cancel").status == 200);
  }
  CHECK(wait_for("tesserad: alert queue_backlog resolved: default"));
}

TEST_CASE("every metric the Grafana dashboard queries is one tesserad serves") {
  ScratchDir dir("grafana");
  DaemonProcess daemon(WriteConfig(dir));
  const std::string metrics = Call(daemon.port(), verb::get, "/metrics").body;
  const std::string dashboard =
      ReadFile(std::string(TESSERA_SOURCE_DIR) + "/docs/grafana/tesserad.json");
  REQUIRE(dashboard.find("\"panels\"") != std::string::npos);
  std::set<std::string> names;
  for (size_t at = 0; (at = dashboard.find("tessera_", at)) != std::string::npos;) {
    size_t end = at;
    while (end < dashboard.size() && (std::islower(dashboard[end]) || dashboard[end] == '_')) ++end;
    names.insert(dashboard.substr(at, end - at));
    at = end;
  }
  names.erase("tessera_");  // the dashboard's uid, "tessera-tesserad", does not match; tags might.
  CHECK(names.size() > 15);
  for (std::string name : names) {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0 &&
          metrics.find("# TYPE " + name.substr(0, name.size() - s.size()) + " histogram") !=
              std::string::npos) {
        name.resize(name.size() - s.size());
      }
    }
    INFO(name);
    CHECK(metrics.find("# TYPE " + name + " ") != std::string::npos);
  }
}

TEST_CASE("tesserad serves many clients at once without losing or doubling a submit") {
  ScratchDir dir("clients");
  DaemonProcess daemon(WriteConfig(dir));
  constexpr int kClients = 32;
  constexpr int kJobsPerClient = 25;
  std::mutex mu;
  std::set<std::string> ids;
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int j = 0; j < kJobsPerClient; ++j) {
        const std::string key = "client-" + std::to_string(c) + "-" + std::to_string(j);
        const Reply first = Call(daemon.port(), verb::post, "/v1/jobs", JobJson(0, 10, key),
                                 nullptr, {{"Idempotency-Key", key}});
        // A retry with the same key (a client that lost the reply) gets the same job back.
        const Reply retry = Call(daemon.port(), verb::post, "/v1/jobs", JobJson(0, 10, key),
                                 nullptr, {{"Idempotency-Key", key}});
        // Readers interleaved with the writers.
        const Reply listed = Call(daemon.port(), verb::get, "/v1/jobs?page_size=10");
        const Reply metrics = Call(daemon.port(), verb::get, "/metrics");
        if (first.status != 200 || retry.status != 200 || listed.status != 200 ||
            metrics.status != 200 || JobId(first.body) != JobId(retry.body)) {
          ++failures;
          continue;
        }
        std::lock_guard lock(mu);
        ids.insert(JobId(first.body));
      }
    });
  }
  for (auto& client : clients) client.join();
  CHECK(failures.load() == 0);
  CHECK(ids.size() == kClients * kJobsPerClient);
  CHECK(CountJobs(daemon) == kClients * kJobsPerClient);
}

TEST_CASE("kill -9 under load: every acknowledged job survives and none runs twice") {
  ScratchDir dir("kill9");
  const std::string config = WriteConfig(dir);
  auto daemon = std::make_unique<DaemonProcess>(config);
  const unsigned short port = daemon->port();
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::set<std::string> acknowledged;
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      while (!stop.load()) {
        // Short jobs, so that some are running and some have finished when the daemon dies.
        const Reply reply = Call(port, verb::post, "/v1/jobs", JobJson(1, 30));
        if (reply.status != 200) continue;  // in flight at the kill: not acknowledged.
        std::lock_guard lock(mu);
        acknowledged.insert(JobId(reply.body));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  daemon->Signal(SIGKILL);
  CHECK(daemon->Wait() == -1);
  stop.store(true);
  for (auto& client : clients) client.join();
  daemon.reset();
  REQUIRE(acknowledged.size() > 50);

  daemon = std::make_unique<DaemonProcess>(config);
  for (const std::string& id : acknowledged) {
    const Reply job = Call(daemon->port(), verb::get, "/v1/jobs/" + id);
    INFO("job ", id);
    CHECK(job.status == 200);
  }
  // Every job runs to its end once the restarted daemon has worked through the queue.
  bool drained = false;
  for (int i = 0; i < 600 && !drained; ++i) {
    const Reply live =
        Call(daemon->port(), verb::get, "/v1/jobs?state=PENDING,ADMITTED,STARTING,RUNNING");
    drained = live.status == 200 && live.body == "{}";
    if (!drained) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(drained);

  // From the event log: no job is ever RUNNING twice at once, and none succeeds twice.
  std::map<std::string, bool> running;
  std::map<std::string, int> succeeded;
  int lost = 0;
  const std::vector<std::string> events = AllEvents(*daemon);
  for (const std::string& event : events) {
    if (Field(event, "kind") != "JOB_STATE_CHANGED") continue;
    const std::string job = Field(event, "jobId");
    const std::string to = Field(event, "toState");
    INFO(event);
    if (to == "RUNNING") {
      CHECK_FALSE(running[job]);
      running[job] = true;
    } else if (to != "PREEMPTING") {
      running[job] = false;
    }
    if (to == "SUCCEEDED") ++succeeded[job];
    if (to == "LOST") ++lost;
  }
  MESSAGE(acknowledged.size(), " jobs acknowledged before the kill, ", lost,
          " lost with the daemon and run again, ", events.size(), " events");
  for (const std::string& id : acknowledged) {
    INFO("job ", id);
    CHECK(succeeded[id] == 1);
  }
}

}  // namespace
