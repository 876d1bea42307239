// tesserad's alerts (examples/daemon/alerts.h) against a real in-process scheduler: thresholds
// from the configuration, one log line when an alert starts and one when it resolves.
#include "alerts.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tessera/clock.h"
#include "tessera/daemon_config.h"
#include "tessera/scheduler.h"

namespace tesserad {
namespace {

namespace v1 = tessera::v1;

// A daemon configuration completed with its defaults, on one simulated node of 2 GPUs with
// 81,920 MiB each.
v1::DaemonConfig Config() {
  v1::DaemonConfig config;
  v1::SimulatedNodeGroup* group = config.mutable_simulated_cluster()->add_groups();
  group->set_name_prefix("node");
  group->set_count(1);
  group->set_cpu_milli(64000);
  group->set_memory_mib(262144);
  group->set_gpus(2);
  group->set_gpu_model("A100-80GB");
  group->set_gpu_memory_mib(81920);
  tessera::ApplyDaemonConfigDefaults(&config);
  return config;
}

struct Fixture {
  explicit Fixture(v1::DaemonConfig daemon_config) : config(std::move(daemon_config)) {
    auto options = tessera::ToOptions(config);
    REQUIRE_MESSAGE(options.ok(), options.status().ToString());
    options->store.path = "";  // a temporary store.
    options->clock = std::make_shared<tessera::ManualClock>();
    auto opened = tessera::Scheduler::Open(*options);
    REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
    scheduler = std::move(*opened);
    monitor = std::make_unique<AlertMonitor>(
        *scheduler, config.alerts(), [this](const std::string& line) { log.push_back(line); });
  }

  void Report(int gpu, double temperature_c, int64_t memory_used_mib = 0) {
    v1::GpuTelemetry reading;
    reading.set_node("node-0");
    reading.set_gpu(gpu);
    reading.set_temperature_c(temperature_c);
    reading.set_memory_used_mib(memory_used_mib);
    REQUIRE(scheduler->ReportTelemetry(reading).ok());
    scheduler->WaitIdle();
  }

  v1::DaemonConfig config;
  std::unique_ptr<tessera::Scheduler> scheduler;
  std::vector<std::string> log;
  std::unique_ptr<AlertMonitor> monitor;
};

TEST_CASE("alerts: a hot GPU fires once, stays quiet while hot, and resolves once") {
  Fixture f(Config());
  f.monitor->CheckNow();
  CHECK(f.log.empty());
  f.Report(1, 91);
  f.monitor->CheckNow();
  f.monitor->CheckNow();
  REQUIRE(f.log.size() == 1);
  CHECK(f.log[0] == "alert gpu_hot firing: node-0/gpu1: 91 C >= 87 C");
  REQUIRE(f.monitor->Firing().size() == 1);
  CHECK(f.monitor->Firing()[0].subject == "node-0/gpu1");
  f.Report(1, 60);
  f.monitor->CheckNow();
  REQUIRE(f.log.size() == 2);
  CHECK(f.log[1] == "alert gpu_hot resolved: node-0/gpu1");
  CHECK(f.monitor->Firing().empty());
}

TEST_CASE("alerts: thresholds come from the configuration") {
  v1::DaemonConfig config = Config();
  config.mutable_alerts()->set_gpu_temperature_c(70);
  config.mutable_alerts()->set_gpu_memory_used_pct(50);
  config.mutable_alerts()->set_queue_pending_jobs(2);
  Fixture f(config);
  f.Report(0, 75, 81920 * 6 / 10);
  // The first job takes both GPUs; the three after it wait.
  for (int i = 0; i < 4; ++i) {
    v1::JobSpec spec;
    spec.set_queue("default");
    spec.mutable_task()->set_cpu_milli(1000);
    spec.mutable_task()->set_memory_mib(1024);
    spec.mutable_task()->set_gpu_count(2);
    REQUIRE(f.scheduler->Submit(spec).ok());
  }
  f.scheduler->WaitIdle();
  f.monitor->CheckNow();
  std::string joined;
  for (const std::string& line : f.log) joined += line + "\n";
  INFO(joined);
  CHECK(f.log == std::vector<std::string>{
                     "alert gpu_hot firing: node-0/gpu0: 75 C >= 70 C",
                     "alert gpu_memory_full firing: node-0/gpu0: 60.0% > 50.0% of memory",
                     "alert queue_backlog firing: default: 3 pending > 2",
                 });
  const auto thresholds = f.monitor->Thresholds();
  CHECK(thresholds.size() == 3);
  CHECK(thresholds[0] == std::pair<std::string, double>("gpu_hot", 70));
  CHECK(thresholds[2] == std::pair<std::string, double>("queue_backlog", 2));
}

TEST_CASE("alerts: a fatal GPU error always alerts") {
  Fixture f(Config());
  v1::GpuTelemetry reading;
  reading.set_node("node-0");
  reading.set_gpu(0);
  reading.add_xid_errors(79);
  REQUIRE(f.scheduler->ReportTelemetry(reading).ok());
  f.scheduler->WaitIdle();
  f.monitor->CheckNow();
  REQUIRE(f.log.size() == 1);
  CHECK(f.log[0].rfind("alert gpu_failed firing: node-0/gpu0: ", 0) == 0);
}

TEST_CASE("alerts: latency alerts look only at the samples since the previous check") {
  v1::AlertsConfig config;
  config.set_decision_latency_p99_us(1000);
  config.set_gpu_temperature_c(87);
  config.set_gpu_memory_used_pct(95);
  AlertEvaluator evaluator(config);
  auto summary = [](int64_t fast, int64_t slow) {
    // `fast` samples under 10 us, `slow` ones between 2.5 and 5 ms.
    v1::LatencySummary s;
    s.set_count(fast + slow);
    for (double le : {10.0, 1000.0, 2500.0, 5000.0}) {
      v1::LatencyBucket* b = s.add_buckets();
      b->set_le_us(le);
      b->set_count(le < 5000 ? fast : fast + slow);
    }
    return s;
  };
  v1::SchedulerStats stats;
  *stats.mutable_decision_latency() = summary(1000, 100);
  auto alerts = evaluator.Evaluate(stats, {}, {});
  REQUIRE(alerts.size() == 1);
  CHECK(alerts[0].name == "decision_latency");
  CHECK(alerts[0].detail == "p99 5000 us > 1000 us");
  // Since then only fast decisions: the slow ones of the past no longer count.
  *stats.mutable_decision_latency() = summary(3000, 100);
  CHECK(evaluator.Evaluate(stats, {}, {}).empty());
}

TEST_CASE("alerts: an unhealthy backend fires backend_unhealthy with its reason") {
  AlertEvaluator evaluator(v1::AlertsConfig{});
  v1::Backend down;
  down.set_name("here");
  down.set_healthy(false);
  down.set_unhealthy_reason("on_launch failed: UNAVAILABLE");
  v1::Backend up;
  up.set_name("cluster");
  up.set_healthy(true);
  auto alerts = evaluator.Evaluate(v1::SchedulerStats{}, {}, {}, {up, down});
  REQUIRE(alerts.size() == 1);
  CHECK(alerts[0].name == "backend_unhealthy");
  CHECK(alerts[0].subject == "here");
  CHECK(alerts[0].detail == "on_launch failed: UNAVAILABLE");
  CHECK(evaluator.Evaluate(v1::SchedulerStats{}, {}, {}, {up}).empty());
}

}  // namespace
}  // namespace tesserad
