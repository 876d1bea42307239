// tesserad between tenants that do not trust each other, through its real binary: priority
// classes a token was not granted, submit rate and spec sizes, idempotency keys, job ids of
// other tenants, and /metrics. Also the redaction of other jobs' ids (tenant_view.h) in process.
#include <chrono>
#include <string>
#include <thread>

#include "daemon/daemon_harness.h"
#include "tenant_view.h"

namespace {

using namespace tesserad_test;
using http::verb;

constexpr const char* kAdmin = "admin-secret";
constexpr const char* kTenantA = "team-a-secret";
constexpr const char* kTenantB = "team-b-secret";
constexpr const char* kTenantHigh = "team-h-secret";

// A daemon with an admin, tenants team-a and team-b on the default classes, team-h granted
// "high", queues team-a, team-b and team-h, and `extra` YAML.
struct TenantDaemon {
  explicit TenantDaemon(const ScratchDir& dir, const std::string& extra = "")
      : process(WriteConfig(dir, extra)) {
    for (const char* queue : {"team-a", "team-b", "team-h"}) {
      REQUIRE(Call(verb::post, "/v1/queues", std::string(R"({"name":")") + queue + "\"}", kAdmin)
                  .status == 200);
    }
  }

  static std::string WriteConfig(const ScratchDir& dir, const std::string& extra) {
    const std::string path = dir.File("tesserad.yaml");
    std::ofstream(path) << "store:\n  path: " << dir.File("tessera.db") << "\n"
                        << "server:\n  listen: 127.0.0.1:0\n"
                        << "auth:\n  tokens:\n"
                        << "    - {name: admin, admin: true, sha256: " << Sha256(kAdmin) << "}\n"
                        << "    - {name: a, queue_prefix: team-a, sha256: " << Sha256(kTenantA)
                        << "}\n"
                        << "    - {name: b, queue_prefix: team-b, sha256: " << Sha256(kTenantB)
                        << "}\n"
                        << "    - {name: h, queue_prefix: team-h, priority_classes: [high], "
                        << "sha256: " << Sha256(kTenantHigh) << "}\n"
                        << extra;
    return path;
  }

  Reply Call(verb method, const std::string& target, const std::string& body, const char* token,
             const std::map<std::string, std::string>& headers = {}) {
    return tesserad_test::Call(process.port(), method, target, body, token, headers);
  }

  DaemonProcess process;
};

std::string Spec(const std::string& queue, const std::string& extra = "", int gpus = 1) {
  return R"({"queue":")" + queue + R"(","task":{"cpuMilli":1000,"memoryMib":1024,"gpuCount":)" +
         std::to_string(gpus) + R"(},"simulation":{"durationMs":600000})" + extra + "}";
}

// `body` with every occurrence of `id` replaced by "ID".
std::string WithoutId(std::string body, const std::string& id) {
  for (size_t at; (at = body.find(id)) != std::string::npos;) body.replace(at, id.size(), "ID");
  return body;
}

TEST_CASE("tesserad: a tenant may use only the priority classes its token was granted") {
  ScratchDir dir("grants");
  TenantDaemon daemon(dir);
  const Reply high =
      daemon.Call(verb::post, "/v1/jobs", Spec("team-a", R"(,"priorityClass":"high")"), kTenantA);
  CHECK(high.status == 403);
  CHECK(high.body ==
        R"x({"code":"PERMISSION_DENIED","message":"priority_class: 'high' is not granted to the )x"
        R"x(token (granted: low, normal)"})x");
  // The default class and those below it are granted by default; an empty class is the default.
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a", R"(,"priorityClass":"low")"), kTenantA)
            .status == 200);
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a"), kTenantA).status == 200);
  // A token granted "high" may use it, and only it.
  CHECK(
      daemon.Call(verb::post, "/v1/jobs", Spec("team-h", R"(,"priorityClass":"high")"), kTenantHigh)
          .status == 200);
  const Reply normal = daemon.Call(verb::post, "/v1/jobs", Spec("team-h"), kTenantHigh);
  CHECK(normal.status == 403);
  CHECK(normal.body.find("priority_class: 'normal' is not granted") != std::string::npos);
  // An admin may use every class.
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a", R"(,"priorityClass":"high")"), kAdmin)
            .status == 200);
}

TEST_CASE("tesserad: submits over a token's rate are answered 429; other tokens are not held") {
  ScratchDir dir("rate");
  TenantDaemon daemon(dir, "limits: {submits_per_second: 0.1, submit_burst: 2}\n");
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a"), kTenantA).status == 200);
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a"), kTenantA).status == 200);
  const Reply third = daemon.Call(verb::post, "/v1/jobs", Spec("team-a"), kTenantA);
  CHECK(third.status == 429);
  CHECK(third.body ==
        R"({"code":"RESOURCE_EXHAUSTED","message":"submit rate: the token may submit 0.1 jobs )"
        R"(per second (limits.submits_per_second); retry later"})");
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-b"), kTenantB).status == 200);
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a"), kAdmin).status == 200);
}

TEST_CASE("tesserad: a submit over a queue's pending jobs limit is refused with 429") {
  ScratchDir dir("pending-limit");
  TenantDaemon daemon(dir, "limits: {max_pending_jobs_per_queue: 2}\n");
  // 32 GPUs never fit a node of the simulated cluster: every job waits.
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a", "", 32), kTenantA).status == 200);
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a", "", 32), kTenantA).status == 200);
  const Reply third = daemon.Call(verb::post, "/v1/jobs", Spec("team-a", "", 32), kTenantA);
  CHECK(third.status == 429);
  CHECK(third.body ==
        R"({"code":"RESOURCE_EXHAUSTED","message":"queue 'team-a' holds 2 pending jobs, its )"
        R"(limit (max_pending_jobs); retry when some have started"})");
  // Per queue: another tenant's queue has room, and a queue's own max_pending_jobs wins.
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-b", "", 32), kTenantB).status == 200);
  CHECK(
      daemon.Call(verb::put, "/v1/queues/team-b", R"({"name":"team-b","maxPendingJobs":1})", kAdmin)
          .status == 200);
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-b", "", 32), kTenantB).status == 429);
}

TEST_CASE("tesserad: a tenant's parent queue bounds its pending jobs in all its leaves (429)") {
  ScratchDir dir("tenant-pending-limit");
  TenantDaemon daemon(dir, "");
  for (const char* leaf : {"team-a/x", "team-a/y"}) {
    const std::string body = std::string(R"({"name":")") + leaf + "\"}";
    REQUIRE(daemon.Call(verb::post, "/v1/queues", body, kAdmin).status == 200);
  }
  REQUIRE(
      daemon.Call(verb::put, "/v1/queues/team-a", R"({"name":"team-a","maxPendingJobs":1})", kAdmin)
          .status == 200);
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-a/x", "", 32), kTenantA).status == 200);
  const Reply other_leaf = daemon.Call(verb::post, "/v1/jobs", Spec("team-a/y", "", 32), kTenantA);
  CHECK(other_leaf.status == 429);
  CHECK(other_leaf.body ==
        R"({"code":"RESOURCE_EXHAUSTED","message":"queue 'team-a' holds 1 pending jobs in its )"
        R"(subtree, its limit (max_pending_jobs); retry when some have started"})");
  CHECK(daemon.Call(verb::post, "/v1/jobs", Spec("team-b", "", 32), kTenantB).status == 200);
}

TEST_CASE("tesserad: a spec over the configured sizes is refused with 400 naming the limit") {
  ScratchDir dir("sizes");
  TenantDaemon daemon(dir, "limits: {max_command_bytes: 100, max_env_bytes: 100}\n");
  const std::string arg(200, 'x');
  const Reply command = daemon.Call(verb::post, "/v1/jobs",
                                    Spec("team-a", R"(,"command":[")" + arg + "\"]"), kTenantA);
  CHECK(command.status == 400);
  CHECK(command.body.find("command: at most 100 bytes, got 201 (limits.max_command_bytes)") !=
        std::string::npos);
  const Reply env = daemon.Call(verb::post, "/v1/jobs",
                                Spec("team-a", R"(,"env":{"K":")" + arg + "\"}"), kTenantA);
  CHECK(env.status == 400);
  CHECK(env.body.find("env: at most 100 bytes, got 203 (limits.max_env_bytes)") !=
        std::string::npos);
  CHECK(daemon.Call(verb::get, "/v1/jobs", "", kAdmin).body == "{}");
}

TEST_CASE("tesserad: integer fields out of bounds are refused naming the bound") {
  ScratchDir dir("bounds");
  TenantDaemon daemon(dir);
  const Reply limit = daemon.Call(verb::post, "/v1/jobs",
                                  Spec("team-a", R"(,"timeLimitS":"9223372036854")"), kTenantA);
  CHECK(limit.status == 400);
  CHECK(limit.body.find("time_limit_s: must be between 0 and 31622400, got 9223372036854") !=
        std::string::npos);
  const Reply checkpoint = daemon.Call(verb::post, "/v1/jobs",
                                       R"({"queue":"team-a","task":{"cpuMilli":1,"memoryMib":1},)"
                                       R"("simulation":{"checkpointEveryMs":"-5"}})",
                                       kTenantA);
  CHECK(checkpoint.status == 400);
  CHECK(checkpoint.body.find("simulation.checkpoint_every_ms: must be between 0 and") !=
        std::string::npos);
}

TEST_CASE("tesserad: idempotency keys belong to the tenant that used them") {
  ScratchDir dir("idempotency");
  TenantDaemon daemon(dir);
  const std::map<std::string, std::string> key = {{"Idempotency-Key", "nightly-1"}};
  const Reply a = daemon.Call(verb::post, "/v1/jobs", Spec("team-a"), kTenantA, key);
  REQUIRE(a.status == 200);
  const Reply b = daemon.Call(verb::post, "/v1/jobs", Spec("team-b"), kTenantB, key);
  CHECK(b.status == 200);
  CHECK(JobId(b.body) != JobId(a.body));
  CHECK(b.body.find("\"idempotencyKey\":\"nightly-1\"") != std::string::npos);
  const Reply again = daemon.Call(verb::post, "/v1/jobs", Spec("team-a"), kTenantA, key);
  CHECK(again.status == 200);
  CHECK(JobId(again.body) == JobId(a.body));

  // Looked up by key, each tenant finds its own job; a key it never used finds none.
  const Reply found = daemon.Call(verb::get, "/v1/jobs?idempotency_key=nightly-1", "", kTenantA);
  CHECK(found.status == 200);
  CHECK_MESSAGE(JobId(found.body) == JobId(a.body), found.body);
  const Reply theirs = daemon.Call(verb::get, "/v1/jobs?idempotency_key=nightly-1", "", kTenantB);
  CHECK_MESSAGE(JobId(theirs.body) == JobId(b.body), theirs.body);
  const Reply none = daemon.Call(verb::get, "/v1/jobs?idempotency_key=nightly-2", "", kTenantA);
  CHECK(none.status == 200);
  CHECK(none.body == "{}");
  const Reply mixed =
      daemon.Call(verb::get, "/v1/jobs?idempotency_key=nightly-1&queue=team-a", "", kTenantA);
  CHECK(mixed.status == 400);
  CHECK(mixed.body.find(R"("field":"idempotency_key")") != std::string::npos);
}

TEST_CASE("tesserad: another tenant's job answers exactly as a job that does not exist") {
  ScratchDir dir("oracle");
  TenantDaemon daemon(dir);
  const Reply b = daemon.Call(verb::post, "/v1/jobs", Spec("team-b"), kTenantB);
  REQUIRE(b.status == 200);
  const std::string theirs = JobId(b.body);
  const std::string missing = "99999";
  for (const char* suffix : {"", ":cancel"}) {
    CAPTURE(suffix);
    const verb method = std::string(suffix).empty() ? verb::get : verb::post;
    const Reply foreign = daemon.Call(method, "/v1/jobs/" + theirs + suffix, "", kTenantA);
    const Reply absent = daemon.Call(method, "/v1/jobs/" + missing + suffix, "", kTenantA);
    CHECK(foreign.status == 404);
    CHECK(absent.status == 404);
    CHECK(WithoutId(foreign.body, theirs) == WithoutId(absent.body, missing));
  }
  CHECK(daemon.Call(verb::get, "/v1/jobs/" + theirs, "", kTenantB).status == 200);
}

TEST_CASE("tesserad: /metrics shows a tenant only its own queues") {
  ScratchDir dir("metrics");
  TenantDaemon daemon(dir);
  const Reply tenant = daemon.Call(verb::get, "/metrics", "", kTenantA);
  REQUIRE(tenant.status == 200);
  CHECK(tenant.body.find("tessera_queue_pending_jobs{queue=\"team-a\"}") != std::string::npos);
  CHECK(tenant.body.find("tessera_queue_burst_spend{queue=\"team-a\",period=\"month\"} 0") !=
        std::string::npos);
  CHECK(tenant.body.find("tessera_queue_burst_out_of_budget{queue=\"team-a\"} 0") !=
        std::string::npos);
  // No series of another queue, burst spend included.
  CHECK(tenant.body.find("queue=\"team-b\"") == std::string::npos);
  CHECK(tenant.body.find("queue=\"default\"") == std::string::npos);
  const Reply admin = daemon.Call(verb::get, "/metrics", "", kAdmin);
  CHECK(admin.body.find("tessera_queue_pending_jobs{queue=\"team-b\"}") != std::string::npos);
  CHECK(admin.body.find("tessera_queue_burst_rate_per_hour{queue=\"team-b\"} 0") !=
        std::string::npos);
}

TEST_CASE("tesserad: a tenant preempted for another tenant's job is not told that job's id") {
  ScratchDir dir("preempted");
  TenantDaemon daemon(dir, "preemption: {min_runtime_s: 0, cooldown_s: 0}\n");
  // B fills the 24 GPUs of the default cluster with low-priority work; H's high job then
  // preempts some of it.
  for (int i = 0; i < 6; ++i) {
    REQUIRE(
        daemon
            .Call(verb::post, "/v1/jobs", Spec("team-b", R"(,"priorityClass":"low")", 4), kTenantB)
            .status == 200);
  }
  int running = 0;
  for (int i = 0; i < 100 && running < 6; ++i) {
    const std::string listed = daemon.Call(verb::get, "/v1/jobs?state=RUNNING", "", kAdmin).body;
    running = 0;
    for (size_t at = 0; (at = listed.find("\"id\":", at)) != std::string::npos; ++at) ++running;
    if (running < 6) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(running == 6);
  const Reply high = daemon.Call(verb::post, "/v1/jobs",
                                 Spec("team-h", R"(,"priorityClass":"high")", 4), kTenantHigh);
  REQUIRE(high.status == 200);
  const std::string high_id = JobId(high.body);
  std::string admin_events, tenant_events;
  for (int i = 0; i < 100; ++i) {
    admin_events = daemon.Call(verb::get, "/v1/events?after_seq=0&max=1000", "", kAdmin).body;
    if (admin_events.find("make room for job " + high_id) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(admin_events.find("make room for job " + high_id) != std::string::npos);
  tenant_events = daemon.Call(verb::get, "/v1/events?after_seq=0&max=1000", "", kTenantB).body;
  CHECK(tenant_events.find("preempted to make room for another job") != std::string::npos);
  CHECK(tenant_events.find("job " + high_id) == std::string::npos);
}

// The number of `"id":` in a list of jobs or events (one per item).
int CountIds(const std::string& body) {
  int count = 0;
  for (size_t at = 0; (at = body.find("\"id\":", at)) != std::string::npos; ++at) ++count;
  return count;
}

TEST_CASE("tesserad: POST /v1/jobs:dryRun answers as the library, with the submit's checks") {
  ScratchDir dir("dry-run");
  TenantDaemon daemon(dir, "preemption: {min_runtime_s: 0, cooldown_s: 0}\n");
  // B fills the 24 GPUs of the default cluster with low-priority work.
  for (int i = 0; i < 6; ++i) {
    REQUIRE(
        daemon
            .Call(verb::post, "/v1/jobs", Spec("team-b", R"(,"priorityClass":"low")", 4), kTenantB)
            .status == 200);
  }
  int running = 0;
  for (int i = 0; i < 100 && running < 6; ++i) {
    running = CountIds(daemon.Call(verb::get, "/v1/jobs?state=RUNNING", "", kAdmin).body);
    if (running < 6) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(running == 6);
  const std::string jobs_before = daemon.Call(verb::get, "/v1/jobs", "", kAdmin).body;
  const std::string events_before =
      daemon.Call(verb::get, "/v1/events?after_seq=0&max=1000", "", kAdmin).body;

  const std::string high = Spec("team-h", R"(,"priorityClass":"high")", 4);
  // H would preempt B's work; B's jobs are not named to H, its own reason is.
  const Reply tenant = daemon.Call(verb::post, "/v1/jobs:dryRun", high, kTenantHigh);
  REQUIRE(tenant.status == 200);
  CHECK(tenant.body.find(R"("verdict":"PREEMPTS")") != std::string::npos);
  CHECK(tenant.body.find(
            R"json("reason":"preempted to make room for this job (higher priority)")json") !=
        std::string::npos);
  CHECK(tenant.body.find("jobId") == std::string::npos);
  CHECK(tenant.body.find("team-b") == std::string::npos);
  // An admin sees whose.
  const Reply admin = daemon.Call(verb::post, "/v1/jobs:dryRun", high, kAdmin);
  REQUIRE(admin.status == 200);
  CHECK(admin.body.find(R"("queue":"team-b")") != std::string::npos);
  CHECK(admin.body.find("jobId") != std::string::npos);
  // B's own low job would wait for capacity.
  const Reply waits = daemon.Call(verb::post, "/v1/jobs:dryRun",
                                  Spec("team-b", R"(,"priorityClass":"low")"), kTenantB);
  REQUIRE(waits.status == 200);
  CHECK(waits.body.find(R"("verdict":"WAITS")") != std::string::npos);

  // The submit's refusals, byte for byte.
  const std::vector<std::pair<std::string, const char*>> refused = {
      {Spec("team-b"), kTenantA},                                // another tenant's queue: 403
      {Spec("team-a", R"(,"priorityClass":"high")"), kTenantA},  // class not granted: 403
      {Spec("nope"), kAdmin},                                    // unknown queue: 404
      {Spec("team-a", R"(,"tasks":-1)"), kTenantA},              // bad field: 400
      {"{not json", kTenantA},                                   // malformed: 400
  };
  for (const auto& [body, token] : refused) {
    const Reply dry = daemon.Call(verb::post, "/v1/jobs:dryRun", body, token);
    const Reply submit = daemon.Call(verb::post, "/v1/jobs", body, token);
    INFO(body);
    CHECK(dry.status >= 400);
    CHECK(dry.status == submit.status);
    CHECK(dry.body == submit.body);
  }
  CHECK(daemon.Call(verb::get, "/v1/jobs:dryRun", "", kAdmin).status == 405);

  // Nothing was stored: the same jobs and events, and the next submit gets the next id.
  CHECK(daemon.Call(verb::get, "/v1/jobs", "", kAdmin).body == jobs_before);
  CHECK(daemon.Call(verb::get, "/v1/events?after_seq=0&max=1000", "", kAdmin).body ==
        events_before);
  const Reply next = daemon.Call(verb::post, "/v1/jobs", Spec("team-a", "", 32), kTenantA);
  REQUIRE(next.status == 200);
  CHECK(JobId(next.body) == "7");
}

TEST_CASE("WithoutOtherJobIds keeps the job's own id and hides every other") {
  using tesserad::WithoutOtherJobIds;
  CHECK(WithoutOtherJobIds("preempted to make room for job 12 (higher priority)", 7) ==
        "preempted to make room for another job (higher priority)");
  CHECK(WithoutOtherJobIds("job 7 waits for job 12 and job 123", 7) ==
        "job 7 waits for another job and another job");
  CHECK(WithoutOtherJobIds("job 70 is not job 7", 7) == "another job is not job 7");
  CHECK(WithoutOtherJobIds("no job here; job x", 7) == "no job here; job x");
  CHECK(WithoutOtherJobIds("", 7).empty());
}

}  // namespace
