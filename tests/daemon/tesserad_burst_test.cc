// Cloud burst from tesserad's configuration, through the real binaries: the sim plugin as the
// private pool (one 1-GPU node) and as a capacity provider (an on-demand group), an `elastic:`
// section with times in seconds, and a queue with a burst budget. A job that does not fit gets
// a burst node; tessctl and /metrics show the spend; the idle node is given back.
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "daemon/daemon_harness.h"

namespace {

using namespace tesserad_test;
using http::verb;

std::string WriteConfig(const ScratchDir& dir) {
  const std::string path = dir.File("tesserad.yaml");
  std::ofstream(path)
      << "store:\n  path: " << dir.File("var/tessera.db") << "\n"
      << "server:\n  listen: 127.0.0.1:0\n"
      << "plugin_dirs: [" << TESSERA_PLUGIN_DIR << "]\n"
      << "engine: {max_reservations: 0}\n"
      << "backends:\n"
      << "  - name: cloud\n"
      << "    plugin: sim\n"
      << "    config: '{\"groups\": [{\"namePrefix\": \"private\", \"count\": 1, "
         "\"cpuMilli\": 8000, \"memoryMib\": 16384, \"gpus\": 1, \"gpuModel\": \"L40S\", "
         "\"gpuMemoryMib\": 46068}], \"capacity\": [{\"nodes\": {\"namePrefix\": \"ondemand\", "
         "\"count\": 2, \"cpuMilli\": 8000, \"memoryMib\": 16384, \"gpus\": 1, \"gpuModel\": "
         "\"L40S\", \"gpuMemoryMib\": 46068}, \"pricePerHour\": 36, \"provisionDelayMs\": 200}]}'\n"
      << "elastic: {scale_out_after_s: 1, scale_in_after_s: 2, metering_interval_s: 1}\n"
      << "queues:\n  - {name: team, burst_budget: {per_day: 1000}}\n";
  return path;
}

// Polls `done` every 100 ms for up to `seconds`; true once it holds.
bool Within(int seconds, const std::function<bool()>& done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

// The value of the sample `series` (name and labels, as written) on /metrics; -1 if absent.
double Sample(const DaemonProcess& daemon, const std::string& series) {
  const std::string metrics = Call(daemon.port(), verb::get, "/metrics").body;
  const size_t at = metrics.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(metrics.c_str() + at + series.size() + 2, nullptr);
}

}  // namespace

TEST_CASE(
    "tesserad bursts per its elastic section: a node joins, spend shows, the node goes back") {
  ScratchDir dir("burst");
  DaemonProcess daemon(WriteConfig(dir));
  const std::string job_file = dir.File("job.yaml");
  std::ofstream(job_file) << "queue: team\n"
                          << "task: {cpu_milli: 1000, memory_mib: 1024, gpu_count: 1}\n"
                          << "simulation: {duration_ms: 4000}\n";
  const auto nodes = [&] { return Tessctl({"--server", daemon.url(), "nodes"}).out; };
  REQUIRE(nodes().find("private-0") != std::string::npos);
  CHECK(nodes().find("ondemand") == std::string::npos);

  // Two 1-GPU jobs, one private GPU: the second waits 1 s, then gets a burst node.
  for (int i = 0; i < 2; ++i) {
    const RunResult submitted = Tessctl({"--server", daemon.url(), "submit", "-f", job_file});
    REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  }
  CHECK(Within(10, [&] { return nodes().find("ondemand-0") != std::string::npos; }));
  CHECK(Within(5, [&] {
    return Call(daemon.port(), verb::get, "/v1/jobs?state=RUNNING").body.find("ondemand-0") !=
           std::string::npos;
  }));

  // 36 an hour is 0.01 a second, charged every second to the queue whose task runs there.
  const std::string day = "tessera_queue_burst_spend{queue=\"team\",period=\"day\"}";
  CHECK(Within(5, [&] { return Sample(daemon, day) > 0; }));
  CHECK(Sample(daemon, "tessera_queue_burst_rate_per_hour{queue=\"team\"}") > 0);
  CHECK(Sample(daemon, "tessera_queue_burst_out_of_budget{queue=\"team\"}") == 0);
  const RunResult queues = Tessctl({"--server", daemon.url(), "queues"});
  INFO(queues.out);
  CHECK(queues.out.find("BURST THIS HOUR") != std::string::npos);
  CHECK(queues.out.find("1000.00/d") != std::string::npos);

  // The jobs end after 4 s; the burst node, idle for 2 s, is given back. What was spent stays.
  CHECK(Within(20, [&] { return nodes().find("ondemand") == std::string::npos; }));
  CHECK(Sample(daemon, "tessera_queue_burst_spend{queue=\"team\",period=\"month\"}") > 0);
  CHECK(Sample(daemon, "tessera_queue_burst_rate_per_hour{queue=\"team\"}") == 0);
}
