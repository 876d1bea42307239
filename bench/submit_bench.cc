// submit: acknowledged submissions per second through the public API. C client threads each
// submit their share of J one-GPU jobs to the "default" queue of a scheduler whose store lives
// in a fresh directory on disk; a submit counts once Submit returns (window 1) or its
// SubmitAsync callback runs (window W > 1), which is when the job is committed, and fsync'ed
// when --durable is true. writes_per_commit shows how well group commit batches concurrent
// submits into one fsync.
//
// --http measures the same through the real daemon instead (submit_http_bench.cc).
#include <condition_variable>
#include <iostream>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "benchmarks.h"
#include "tessera/job.h"
#include "tessera/scheduler.h"

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

v1::JobSpec SmallJob(int client, int64_t index) {
  return JobSpecBuilder("default")
      .Name("c" + std::to_string(client) + "-" + std::to_string(index))
      .Gpus(1)
      .CpuMilli(1000)
      .MemoryMib(1024)
      .Build();
}

// What one client thread saw.
struct ClientResult {
  std::vector<double> latencies_ms;  // acknowledged submits only.
  int64_t failed = 0;
  std::string first_error;
};

void RunSyncClient(Scheduler& scheduler, int client, int64_t jobs, ClientResult* out) {
  out->latencies_ms.reserve(jobs);
  for (int64_t i = 0; i < jobs; ++i) {
    const v1::JobSpec spec = SmallJob(client, i);
    const Clock::time_point start = Clock::now();
    StatusOr<v1::Job> job = scheduler.Submit(spec);
    const double ms = MillisSince(start);
    if (job.ok()) {
      out->latencies_ms.push_back(ms);
    } else if (out->failed++ == 0) {
      out->first_error = job.status().ToString();
    }
  }
}

// Keeps up to `window` SubmitAsync calls in flight; callbacks run on the store's writer thread.
void RunAsyncClient(Scheduler& scheduler, int client, int64_t jobs, int window, ClientResult* out) {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  out->latencies_ms.reserve(jobs);
  for (int64_t i = 0; i < jobs; ++i) {
    const v1::JobSpec spec = SmallJob(client, i);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < window; });
      ++in_flight;
    }
    const Clock::time_point start = Clock::now();
    scheduler.SubmitAsync(spec, {}, [&, start](StatusOr<v1::Job> job) {
      const double ms = MillisSince(start);
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      if (job.ok()) {
        out->latencies_ms.push_back(ms);
      } else if (out->failed++ == 0) {
        out->first_error = job.status().ToString();
      }
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
}

StatusOr<Json> RunOnce(const SubmitFlags& flags, int run) {
  ScratchDir dir("tessera-bench-submit");
  Options options;
  options.log.level = LogLevel::kWarning;  // stderr is for the benchmark's progress.
  options.store.path = dir.path() + "/state.db";
  options.store.durable = flags.durable;
  options.engine.start_paused = flags.decisions == "off";
  // Only used with --decisions on: room for a few thousand one-GPU jobs to be placed.
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* group = cluster.add_groups();
  group->set_name_prefix("node");
  group->set_count(100);
  group->set_cpu_milli(128000);
  group->set_memory_mib(1024 * 1024);
  group->set_gpus(8);
  group->set_gpu_model("A100-80GB");
  group->set_gpu_memory_mib(81920);
  options.simulated_cluster = cluster;

  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Open(options));
  const v1::SchedulerStats before = scheduler->GetStats();

  Progress("submit run " + std::to_string(run) + ": " + std::to_string(flags.jobs) + " jobs, " +
           std::to_string(flags.clients) + " clients, window " + std::to_string(flags.window) +
           (flags.durable ? ", durable" : ", not durable"));
  std::vector<ClientResult> results(flags.clients);
  std::vector<std::thread> threads;
  // Every client starts at once, so the wall time measures them running together.
  std::latch ready(flags.clients + 1);
  for (int c = 0; c < flags.clients; ++c) {
    const int64_t share = flags.jobs / flags.clients + (c < flags.jobs % flags.clients ? 1 : 0);
    threads.emplace_back([&, c, share] {
      ready.arrive_and_wait();
      if (flags.window == 1) {
        RunSyncClient(*scheduler, c, share, &results[c]);
      } else {
        RunAsyncClient(*scheduler, c, share, flags.window, &results[c]);
      }
    });
  }
  ready.arrive_and_wait();
  Stopwatch wall;
  for (std::thread& t : threads) t.join();
  const double wall_s = wall.Seconds();
  const v1::SchedulerStats after = scheduler->GetStats();
  scheduler.reset();

  std::vector<double> latencies;
  int64_t failed = 0;
  for (const ClientResult& r : results) {
    latencies.insert(latencies.end(), r.latencies_ms.begin(), r.latencies_ms.end());
    if (r.failed > 0 && failed == 0) std::cerr << "submit: first error: " << r.first_error << '\n';
    failed += r.failed;
  }
  const int64_t acknowledged = static_cast<int64_t>(latencies.size());
  const int64_t commits = after.commits() - before.commits();
  const int64_t writes = after.committed_writes() - before.committed_writes();
  return Json{
      {"benchmark", "submit"},
      {"jobs", flags.jobs},
      {"clients", flags.clients},
      {"window", flags.window},
      {"durable", flags.durable},
      {"decisions", flags.decisions},
      {"seed", flags.common.seed},
      {"jobs_per_s", static_cast<double>(acknowledged) / wall_s},
      {"acknowledged", acknowledged},
      {"failed", failed},
      {"wall_s", wall_s},
      {"p50_ms", Percentile(latencies, 0.50)},
      {"p99_ms", Percentile(latencies, 0.99)},
      {"max_ms", Percentile(latencies, 1.0)},
      // With --decisions on, the engine's placement writes share these commits too.
      {"commits", commits},
      {"committed_writes", writes},
      {"writes_per_commit", commits > 0 ? static_cast<double>(writes) / commits : 0.0},
      {"commit_p50_us", after.commit_latency().p50_us()},
      {"commit_p99_us", after.commit_latency().p99_us()},
  };
}

}  // namespace

int RunSubmit(const SubmitFlags& flags) {
  if (flags.http || flags.tessctl) return RunSubmitHttp(flags);
  std::vector<Json> runs;
  for (int run = 1; run <= flags.common.repeat; ++run) {
    StatusOr<Json> result = RunOnce(flags, run);
    if (!result.ok()) {
      std::cerr << "submit: " << result.status() << '\n';
      return 1;
    }
    runs.push_back(*result);
  }
  const Json summary = Summarize(runs, "jobs_per_s");
  EmitJsonLine(summary);
  PrintTable(summary, {"jobs", "clients", "window", "durable", "jobs_per_s", "p50_ms", "p99_ms",
                       "commits", "committed_writes", "writes_per_commit"});
  return summary.value("failed", 0) > 0 ? 1 : 0;
}

}  // namespace tessera::bench
