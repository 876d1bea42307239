// tesserad through its real binary: a daemon started with a temporary configuration (port 0,
// store in a temporary directory, three bearer tokens), spoken to over loopback HTTP.
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "daemon/daemon_harness.h"

namespace {

using namespace tesserad_test;

constexpr const char* kAdmin = "admin-secret";
constexpr const char* kTenantA = "team-a-secret";
constexpr const char* kTenantB = "team-b-secret";

// A tesserad with a configuration in `dir`: port 0, its store in dir/var, three bearer tokens.
class Daemon {
 public:
  // `extra` is appended to the configuration (top-level keys).
  explicit Daemon(const std::filesystem::path& dir, const std::string& extra = "") : dir_(dir) {
    std::filesystem::create_directories(dir_);
    std::ofstream config(dir_ / "tesserad.yaml");
    config << "store:\n  path: " << (dir_ / "var" / "tessera.db").string() << "\n"
           << "server:\n  listen: 127.0.0.1:0\n  max_request_bytes: 4096\n"
           << "auth:\n  tokens:\n"
           << "    - {name: admin, admin: true, sha256: " << Sha256(kAdmin) << "}\n"
           << "    - {name: a, queue_prefix: team-a, sha256: " << Sha256(kTenantA) << "}\n"
           << "    - {name: b, queue_prefix: team-b, sha256: " << Sha256(kTenantB) << "}\n"
           << extra;
  }

  void Start() { process_.emplace((dir_ / "tesserad.yaml").string()); }
  std::string url() const { return process_->url(); }

  // Sends `signal` and returns the exit status (or -1 if it did not exit normally).
  int Stop(int signal = SIGTERM) {
    const int status = process_->Stop(signal);
    process_.reset();
    return status;
  }

  Reply Call(http::verb method, const std::string& target, const std::string& body = "",
             const char* token = kAdmin, std::map<std::string, std::string> headers = {}) {
    return tesserad_test::Call(process_->port(), method, target, body, token, headers);
  }

 private:
  std::filesystem::path dir_;
  std::optional<DaemonProcess> process_;
};

std::string JobSpec(const std::string& queue) {
  return R"({"queue":")" + queue +
         R"(","task":{"cpuMilli":1000,"memoryMib":1024,"gpuCount":1},"simulation":{"durationMs":600000}})";
}

TEST_CASE("tesserad serves the REST API and keeps acknowledged jobs across a restart") {
  const ScratchDir dir("api");
  Daemon daemon(dir.path());
  daemon.Start();
  using http::verb;

  SUBCASE("health, readiness and metrics") {
    CHECK(daemon.Call(verb::get, "/healthz", "", nullptr).status == 200);
    CHECK(daemon.Call(verb::get, "/readyz", "", nullptr).status == 200);
    Reply metrics = daemon.Call(verb::get, "/metrics");
    CHECK(metrics.status == 200);
    CHECK(metrics.content_type.find("version=0.0.4") != std::string::npos);
    for (const char* name :
         {"tessera_queue_pending_jobs{queue=\"default\"}", "tessera_queue_running_jobs",
          "tessera_queue_dominant_share", "tessera_decisions_total", "tessera_preemptions_total",
          "tessera_decision_latency_seconds_count", "tessera_gpu_utilization_ratio",
          "tessera_gpu_memory_used_bytes", "tessera_gpu_temperature_celsius",
          "tessera_gpu_power_watts"}) {
      INFO(name);
      CHECK(metrics.body.find(name) != std::string::npos);
    }
  }

  SUBCASE("jobs: submit, get, list, cancel") {
    Reply submitted = daemon.Call(verb::post, "/v1/jobs", JobSpec("default"), kAdmin,
                                  {{"Idempotency-Key", "once"}});
    REQUIRE(submitted.status == 200);
    const std::string id = JobId(submitted.body);
    Reply again = daemon.Call(verb::post, "/v1/jobs", JobSpec("default"), kAdmin,
                              {{"Idempotency-Key", "once"}});
    CHECK(JobId(again.body) == id);

    Reply got = daemon.Call(verb::get, "/v1/jobs/" + id);
    CHECK(got.status == 200);
    CHECK(got.body.find("\"queue\":\"default\"") != std::string::npos);
    Reply listed = daemon.Call(
        verb::get, "/v1/jobs?queue=default&state=PENDING,ADMITTED,STARTING&state=RUNNING");
    CHECK(listed.status == 200);
    CHECK(listed.body.find("\"id\":\"" + id + "\"") != std::string::npos);
    CHECK(daemon.Call(verb::get, "/v1/jobs?state=BOGUS").status == 400);

    Reply cancelled = daemon.Call(verb::post, "/v1/jobs/" + id + ":cancel");
    CHECK(cancelled.status == 200);
    CHECK(cancelled.body.find("cancelRequested") != std::string::npos);
    CHECK(daemon.Call(verb::get, "/v1/jobs/999999").status == 404);
    CHECK(daemon.Call(verb::get, "/v1/jobs/" + id + ":cancel").status == 405);
  }

  SUBCASE("jobs: a spec naming no queue goes to the default queue") {
    Reply submitted = daemon.Call(verb::post, "/v1/jobs",
                                  R"({"task":{"cpuMilli":1000,"memoryMib":1024}})", kAdmin);
    CHECK(submitted.status == 200);
    CHECK(submitted.body.find("\"queue\":\"default\"") != std::string::npos);
  }

  SUBCASE("jobs: a node selector is kept, shown and obeyed") {
    // The default simulated cluster labels its H100 nodes rack=rack-2.
    Reply submitted = daemon.Call(
        verb::post, "/v1/jobs",
        R"({"queue":"default","task":{"cpuMilli":1000,"memoryMib":1024,"gpuCount":1},)"
        R"("nodeSelector":{"rack":"rack-2"},"tolerations":[{"key":"spot","operator":"EXISTS"}]})");
    REQUIRE(submitted.status == 200);
    const std::string id = JobId(submitted.body);
    std::string body;
    for (int i = 0; i < 100; ++i) {
      body = daemon.Call(verb::get, "/v1/jobs/" + id).body;
      if (body.find("\"node\"") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK_MESSAGE(body.find(R"("nodeSelector":{"rack":"rack-2"})") != std::string::npos, body);
    CHECK_MESSAGE(
        body.find(R"("tolerations":[{"key":"spot","operator":"EXISTS"}])") != std::string::npos,
        body);
    CHECK_MESSAGE(body.find(R"("node":"sim-h100-)") != std::string::npos, body);
  }

  SUBCASE("queues: create, get, update, delete") {
    Reply created = daemon.Call(verb::post, "/v1/queues", R"({"name":"research","weight":2})");
    CHECK(created.status == 200);
    CHECK(daemon.Call(verb::post, "/v1/queues", R"({"name":"research/vision"})").status == 200);
    CHECK(daemon.Call(verb::post, "/v1/queues", R"({"name":"research"})").status == 409);
    Reply nested = daemon.Call(verb::get, "/v1/queues/research/vision");
    CHECK(nested.status == 200);
    CHECK(nested.body.find("\"name\":\"research/vision\"") != std::string::npos);
    CHECK(daemon.Call(verb::put, "/v1/queues/research%2Fvision", R"({"weight":3})").status == 200);
    CHECK(daemon.Call(verb::get, "/v1/queues").body.find("research/vision") != std::string::npos);
    CHECK(daemon.Call(verb::delete_, "/v1/queues/research").status == 409);  // has a child.
    CHECK(daemon.Call(verb::delete_, "/v1/queues/research/vision").status == 200);
    CHECK(daemon.Call(verb::get, "/v1/queues/research/vision").status == 404);
  }

  SUBCASE("nodes: list and cordon") {
    Reply nodes = daemon.Call(verb::get, "/v1/nodes");
    CHECK(nodes.status == 200);
    CHECK(nodes.body.find("sim-a100-0") != std::string::npos);
    Reply cordoned = daemon.Call(verb::post, "/v1/nodes/sim-a100-0:cordon");
    CHECK(cordoned.status == 200);
    CHECK(cordoned.body.find("\"cordoned\":true") != std::string::npos);
    CHECK(daemon.Call(verb::post, "/v1/nodes/sim-a100-0:uncordon").status == 200);
    CHECK(daemon.Call(verb::post, "/v1/nodes/no-such-node:drain").status == 404);
  }

  SUBCASE("events: long poll returns when an event arrives") {
    Reply first = daemon.Call(verb::get, "/v1/events?after_seq=0&max=1000");
    REQUIRE(first.status == 200);
    const std::string seq_key = "\"seq\":\"";
    const size_t last = first.body.rfind(seq_key);
    REQUIRE(last != std::string::npos);
    const std::string after = first.body.substr(
        last + seq_key.size(), first.body.find('"', last + seq_key.size()) - last - seq_key.size());
    std::thread submitter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      daemon.Call(verb::post, "/v1/jobs", JobSpec("default"));
    });
    const auto start = std::chrono::steady_clock::now();
    Reply polled = daemon.Call(verb::get, "/v1/events?after_seq=" + after + "&wait_ms=10000");
    const auto waited = std::chrono::steady_clock::now() - start;
    submitter.join();
    CHECK(polled.status == 200);
    CHECK(polled.body.find("JOB_STATE_CHANGED") != std::string::npos);
    CHECK(waited < std::chrono::seconds(5));
    Reply empty = daemon.Call(verb::get, "/v1/events?after_seq=1000000&wait_ms=50");
    CHECK(empty.body == R"({"nextAfterSeq":"1000000"})");
  }

  SUBCASE("bad requests get a 4xx naming the problem") {
    Reply malformed = daemon.Call(verb::post, "/v1/jobs", R"({"queue": "default",)");
    CHECK(malformed.status == 400);
    CHECK(malformed.body.find("\"code\":\"INVALID_ARGUMENT\"") != std::string::npos);
    CHECK(malformed.body.find("malformed JSON") != std::string::npos);
    Reply unknown = daemon.Call(verb::post, "/v1/jobs", R"({"queue":"default","gpus":1})");
    CHECK(unknown.status == 400);
    CHECK(unknown.body.find("gpus") != std::string::npos);
    // The field at fault as data beside the message, for a form to mark.
    Reply bad_tasks = daemon.Call(
        verb::post, "/v1/jobs",
        R"({"queue":"default","tasks":100001,"task":{"cpuMilli":1000,"memoryMib":1024}})");
    CHECK(bad_tasks.status == 400);
    CHECK_MESSAGE(bad_tasks.body.find(R"("message":"tasks: must be between 0 and 100000)") !=
                      std::string::npos,
                  bad_tasks.body);
    CHECK_MESSAGE(bad_tasks.body.find(R"(,"field":"tasks"})") != std::string::npos, bad_tasks.body);
    // A bad placement term names its field.
    Reply bad_operator =
        daemon.Call(verb::post, "/v1/jobs",
                    R"({"queue":"default","task":{"cpuMilli":1000,"memoryMib":1024},)"
                    R"("nodeRequirements":[{"key":"tier","operator":"IN","values":["1"]},)"
                    R"({"key":"tier","operator":"OPERATOR_UNSPECIFIED"}]})");
    CHECK(bad_operator.status == 400);
    CHECK_MESSAGE(
        bad_operator.body.find(R"("field":"node_requirements[1].operator")") != std::string::npos,
        bad_operator.body);
    Reply bad_max = daemon.Call(verb::get, "/v1/events?max=5000");
    CHECK(bad_max.status == 400);
    CHECK_MESSAGE(bad_max.body.find(R"("field":"max")") != std::string::npos, bad_max.body);
    // An error about no one field has none.
    Reply missing = daemon.Call(verb::get, "/v1/jobs/987654");
    CHECK(missing.status == 404);
    CHECK(missing.body.find("\"field\"") == std::string::npos);
    CHECK(daemon.Call(verb::post, "/v1/jobs", JobSpec("no-such-queue")).status == 404);
    CHECK(daemon.Call(verb::get, "/v1/nope").status == 404);
    CHECK(daemon.Call(verb::delete_, "/v1/jobs").status == 405);
    Reply oversized = daemon.Call(verb::post, "/v1/jobs", std::string(8192, ' '));
    CHECK(oversized.status == 413);
    // Nothing of the above created a job.
    CHECK(daemon.Call(verb::get, "/v1/jobs").body == "{}");
  }

  SUBCASE("authentication and tenant isolation") {
    CHECK(daemon.Call(verb::get, "/v1/jobs", "", nullptr).status == 401);
    CHECK(daemon.Call(verb::get, "/v1/jobs", "", "wrong-token").status == 401);
    REQUIRE(daemon.Call(verb::post, "/v1/queues", R"({"name":"team-a"})").status == 200);
    REQUIRE(daemon.Call(verb::post, "/v1/queues", R"({"name":"team-b"})").status == 200);
    Reply a = daemon.Call(verb::post, "/v1/jobs", JobSpec("team-a"), kTenantA);
    REQUIRE(a.status == 200);
    Reply b = daemon.Call(verb::post, "/v1/jobs", JobSpec("team-b"), kTenantB);
    REQUIRE(b.status == 200);
    const std::string a_id = JobId(a.body), b_id = JobId(b.body);

    CHECK(daemon.Call(verb::post, "/v1/jobs", JobSpec("team-b"), kTenantA).status == 403);
    CHECK(daemon.Call(verb::get, "/v1/jobs/" + b_id, "", kTenantA).status == 404);
    CHECK(daemon.Call(verb::post, "/v1/jobs/" + b_id + ":cancel", "", kTenantA).status == 404);
    CHECK(daemon.Call(verb::get, "/v1/jobs/" + a_id, "", kTenantA).status == 200);
    Reply listed = daemon.Call(verb::get, "/v1/jobs", "", kTenantA);
    CHECK(listed.status == 200);
    CHECK(listed.body.find("\"id\":\"" + a_id + "\"") != std::string::npos);
    CHECK(listed.body.find("team-b") == std::string::npos);
    CHECK(daemon.Call(verb::get, "/v1/jobs?queue=team-b", "", kTenantA).status == 403);
    CHECK(daemon.Call(verb::get, "/v1/events?after_seq=0&max=1000", "", kTenantA)
              .body.find("team-b") == std::string::npos);
    CHECK(daemon.Call(verb::post, "/v1/queues", R"({"name":"team-a/x"})", kTenantA).status == 403);
    CHECK(daemon.Call(verb::post, "/v1/nodes/sim-a100-0:cordon", "", kTenantA).status == 403);
    CHECK(daemon.Call(verb::post, "/v1/jobs/" + b_id + ":cancel", "", kTenantB).status == 200);

    // B's cancel is the newest event. A window holding only it is empty for A, yet A's cursor
    // moves past it, so A does not ask for the same events again.
    Reply all = daemon.Call(verb::get, "/v1/events?after_seq=0&max=1000");
    const std::string seq_key = "\"seq\":\"";
    const size_t last_seq = all.body.rfind(seq_key) + seq_key.size();
    const uint64_t newest =
        std::stoull(all.body.substr(last_seq, all.body.find('"', last_seq) - last_seq));
    Reply window = daemon.Call(
        verb::get, "/v1/events?max=1&after_seq=" + std::to_string(newest - 1), "", kTenantA);
    CHECK(window.status == 200);
    CHECK(window.body == "{\"nextAfterSeq\":\"" + std::to_string(newest) + "\"}");
  }

  SUBCASE("SIGTERM exits 0 and a restarted daemon still has the acknowledged jobs") {
    Reply submitted = daemon.Call(verb::post, "/v1/jobs", JobSpec("default"));
    REQUIRE(submitted.status == 200);
    const std::string id = JobId(submitted.body);
    CHECK(daemon.Stop(SIGTERM) == 0);
    daemon.Start();
    Reply got = daemon.Call(verb::get, "/v1/jobs/" + id);
    CHECK(got.status == 200);
    CHECK(daemon.Stop(SIGINT) == 0);
  }
}

TEST_CASE("tesserad shows a failed backend in /readyz, /v1/backends, nodes, metrics and tessctl") {
  const ScratchDir dir("backends");
  const std::string plugin =
      std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_test_backend.so";
  // Two test backends: "steady" runs jobs; "flaky" fails every launch.
  Daemon daemon(dir.path(),
                "backends:\n"
                "  - {name: steady, plugin: " +
                    plugin +
                    ", config: \"prefix=steady\"}\n"
                    "  - {name: flaky, plugin: " +
                    plugin +
                    ", config: \"prefix=flaky\\nlaunch_error=1\", max_restarts_per_minute: 0}\n");
  daemon.Start();
  using http::verb;
  CHECK(daemon.Call(verb::get, "/readyz", "", nullptr).status == 200);
  Reply listed = daemon.Call(verb::get, "/v1/backends", "", kTenantA);
  CHECK(listed.status == 200);
  CHECK(listed.body.find("\"name\":\"flaky\"") != std::string::npos);

  // Two whole-node jobs: one lands on each backend's node, and flaky fails its launch.
  const std::string eight = R"({"queue":"default","task":{"cpuMilli":1000,"memoryMib":1024,)"
                            R"("gpuCount":8},"simulation":{"durationMs":600000}})";
  REQUIRE(daemon.Call(verb::post, "/v1/jobs", eight).status == 200);
  REQUIRE(daemon.Call(verb::post, "/v1/jobs", eight).status == 200);
  Reply ready = daemon.Call(verb::get, "/readyz", "", nullptr);
  for (int i = 0; i < 200 && ready.status == 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ready = daemon.Call(verb::get, "/readyz", "", nullptr);
  }
  CHECK(ready.status == 503);
  CHECK(ready.body.find("backend 'flaky' is unhealthy") != std::string::npos);
  CHECK(ready.body.find("launch_error: set") != std::string::npos);

  listed = daemon.Call(verb::get, "/v1/backends", "", kTenantA);
  CHECK(listed.body.find("\"unhealthyReason\"") != std::string::npos);
  // The failed operation names a job: an admin sees it, a tenant only the counts.
  CHECK(listed.body.find("\"lastOperationFailure\"") == std::string::npos);
  CHECK(listed.body.find("\"operations\"") != std::string::npos);
  CHECK(daemon.Call(verb::get, "/v1/backends", "", kAdmin).body.find("\"lastOperationFailure\"") !=
        std::string::npos);
  Reply nodes = daemon.Call(verb::get, "/v1/nodes", "", kAdmin);
  CHECK(nodes.body.find("\"backend\":\"flaky\"") != std::string::npos);
  CHECK(nodes.body.find("\"unavailable\":\"backend 'flaky' is unhealthy") != std::string::npos);
  Reply metrics = daemon.Call(verb::get, "/metrics");
  CHECK(metrics.body.find("tessera_backend_healthy{backend=\"flaky\"} 0") != std::string::npos);
  CHECK(metrics.body.find("tessera_backend_healthy{backend=\"steady\"} 1") != std::string::npos);
  // The launches asked of each backend, as operations: steady's succeeded, flaky's failed.
  CHECK(metrics.body.find("tessera_backend_operations_total{backend=\"steady\",kind=\"launch\","
                          "result=\"succeeded\"} 1") != std::string::npos);
  CHECK(metrics.body.find("tessera_backend_operations_total{backend=\"flaky\",kind=\"launch\","
                          "result=\"succeeded\"} 0") != std::string::npos);
  CHECK(metrics.body.find("tessera_backend_operations_in_flight{backend=\"steady\",kind=\"launch\"}"
                          " 0") != std::string::npos);

  const RunResult table = Tessctl({"--server", daemon.url(), "--token", kAdmin, "backends"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("Unhealthy") != std::string::npos);
  CHECK(table.out.find("flaky: ") != std::string::npos);
  CHECK(table.out.find("flaky: last failed operation: launch ") != std::string::npos);
  CHECK(table.out.find("launch_error: set") != std::string::npos);
  const RunResult node_table = Tessctl({"--server", daemon.url(), "--token", kAdmin, "nodes"});
  CHECK(node_table.out.find("Unavailable") != std::string::npos);
}

TEST_CASE("tesserad: elastic size rules in JSON, and idle GPUs the sim backend reports") {
  const ScratchDir dir("idle-gpus");
  const std::string sim = std::string(TESSERA_PLUGIN_DIR) + "/libtessera_plugin_sim.so";
  // One node of 4 GPUs whose utilisation the sim backend reports; team-a watches for GPUs idle
  // for a second and lets no job exempt itself.
  Daemon daemon(dir.path(),
                "backends:\n"
                "  - name: sim\n"
                "    plugin: " +
                    sim +
                    "\n"
                    "    poll_interval_ms: 50\n"
                    "    config: '{\"groups\":[{\"namePrefix\":\"gpu\",\"count\":1,"
                    "\"cpuMilli\":64000,\"memoryMib\":262144,\"gpus\":4,\"gpuModel\":"
                    "\"A100-80GB\",\"gpuMemoryMib\":81920}],\"reportTelemetry\":true}'\n"
                    "queues:\n"
                    "  - {name: team-a, idle_gpus: {below_pct: 10, idle_for_s: 1}}\n"
                    "  - {name: team-a/train}\n");
  daemon.Start();
  using http::verb;

  // Elastic sizes through the JSON mapping: a rule that allows no count is refused, naming it.
  const std::string none = R"({"queue":"team-a/train","task":{"cpuMilli":1000,"memoryMib":1024,)"
                           R"("gpuCount":1},"elastic":{"minTasks":5,"maxTasks":7,)"
                           R"("sizes":{"powersOfTwo":true}}})";
  Reply refused = daemon.Call(verb::post, "/v1/jobs", none, kTenantA);
  CHECK(refused.status == 400);
  CHECK(refused.body.find("elastic.sizes.powers_of_two") != std::string::npos);

  const std::string task = R"("task":{"cpuMilli":1000,"memoryMib":1024,"gpuCount":2})";
  // A tenant may not exempt its job where the queue does not allow it.
  Reply exempt =
      daemon.Call(verb::post, "/v1/jobs",
                  R"({"queue":"team-a/train",)" + task + R"(,"idleGpuExempt":true})", kTenantA);
  CHECK(exempt.status == 403);
  CHECK(exempt.body.find("idle_gpu_exempt") != std::string::npos);

  Reply idle = daemon.Call(
      verb::post, "/v1/jobs",
      R"({"queue":"team-a/train",)" + task + R"(,"simulation":{"gpuUtilizationPct":3}})", kTenantA);
  REQUIRE(idle.status == 200);
  Reply busy =
      daemon.Call(verb::post, "/v1/jobs", R"({"queue":"team-a/train",)" + task + "}", kTenantA);
  REQUIRE(busy.status == 200);
  const std::string idle_id = JobId(idle.body);
  const std::string busy_id = JobId(busy.body);
  const auto flagged = [&](const std::string& id) {
    const Reply events = daemon.Call(verb::get, "/v1/events?max=1000");
    for (size_t at = events.body.find("\"JOB_GPU_IDLE\""); at != std::string::npos;
         at = events.body.find("\"JOB_GPU_IDLE\"", at + 1)) {
      const size_t end = events.body.find('}', at);
      if (events.body.substr(at, end - at).find("\"jobId\":\"" + id + "\"") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  for (int i = 0; i < 200 && !flagged(idle_id); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(flagged(idle_id));
  CHECK_FALSE(flagged(busy_id));
  const Reply got = daemon.Call(verb::get, "/v1/jobs/" + idle_id, "", kTenantA);
  CHECK(got.body.find("GPUs idle: 2 GPU(s) below 10% utilisation") != std::string::npos);
  const Reply metrics = daemon.Call(verb::get, "/metrics");
  CHECK(metrics.body.find("tessera_idle_gpu_jobs 1") != std::string::npos);
  CHECK(metrics.body.find("tessera_idle_gpu_flags_total 1") != std::string::npos);
}

}  // namespace
