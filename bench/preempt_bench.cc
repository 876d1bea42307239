// preempt: how fast the scheduler decides a preemption, and how much work it costs. R running
// low-priority one-GPU jobs fill a cluster of R GPUs (they checkpoint every 0, 1, 5 or 15
// minutes); then high-priority one-GPU jobs arrive at A per second of virtual time for S
// seconds, and each one must preempt. Time runs on a ManualClock, so grace periods and
// checkpoints cost no wall time; the planning time per preemption is measured by the engine.
//
//   tessera-bench preempt --running 20000 --rate 50 --seconds 60
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>

#include "bench_util.h"
#include "benchmarks.h"
#include "decision_log.h"
#include "tessera/job.h"
#include "tessera/scheduler.h"

namespace tessera::bench {
namespace {

constexpr int kGpusPerNode = 8;
constexpr int64_t kSecondUs = 1'000'000;

StatusOr<Json> RunOnce(const PreemptFlags& flags, int run) {
  std::mt19937_64 rng(flags.common.seed + static_cast<uint64_t>(run));
  auto clock = std::make_shared<ManualClock>();
  Options options;
  options.log.level = LogLevel::kWarning;  // stderr is for the benchmark's progress.
  options.clock = clock;
  options.preemption.max_per_minute = 1 << 30;  // measure the planner, not the budget.
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* g = cluster.add_groups();
  g->set_name_prefix("gpu");
  g->set_count((flags.running + kGpusPerNode - 1) / kGpusPerNode);
  g->set_cpu_milli(128000);
  g->set_memory_mib(1 << 20);
  g->set_gpus(kGpusPerNode);
  g->set_gpu_model("A100-80GB");
  g->set_gpu_memory_mib(81920);
  options.simulated_cluster = cluster;
  auto opened = Scheduler::Open(options);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<Scheduler> scheduler = std::move(*opened);
  // Every placement, victims' replacements and requeued attempts included: the log is read
  // after each step, since GetJob shows only a job's latest attempt.
  std::ofstream log_file;
  std::optional<replay::DecisionLog> log;
  const std::string log_path = DecisionLogPath(flags.decision_log, run, flags.common.repeat);
  if (!flags.decision_log.empty()) {
    log_file.open(log_path, std::ios::trunc);
    log.emplace(log_file, clock->NowUs());
  }
  auto log_step = [&]() -> Status { return log ? log->Update(*scheduler) : Status::Ok(); };

  Progress("preempt run " + std::to_string(run) + ": starting " + std::to_string(flags.running) +
           " low-priority jobs");
  const int64_t checkpoint_ms[] = {0, 60'000, 300'000, 900'000};
  std::mutex mu;
  std::condition_variable cv;
  int outstanding = 0;
  int failed = 0;
  for (int i = 0; i < flags.running; ++i) {
    v1::JobSpec spec = JobSpecBuilder("default").Gpus(1).PriorityClass("low").Build();
    spec.set_checkpoint_grace_s(30);
    spec.mutable_simulation()->set_checkpoint_every_ms(checkpoint_ms[rng() % 4]);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return outstanding < 256; });
      ++outstanding;
    }
    scheduler->SubmitAsync(spec, {}, [&](StatusOr<v1::Job> job) {
      std::lock_guard<std::mutex> lock(mu);
      --outstanding;
      failed += job.ok() ? 0 : 1;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return outstanding == 0; });
  }
  if (failed > 0) return InternalError("preempt: " + std::to_string(failed) + " submits failed");
  scheduler->WaitIdle();
  TESSERA_RETURN_IF_ERROR(log_step());
  // An hour in: every job is past the minimum runtime, checkpoints are spread out.
  clock->AdvanceUs(3600 * kSecondUs + static_cast<int64_t>(rng() % (60 * kSecondUs)));
  scheduler->WaitIdle();
  const v1::SchedulerStats before = scheduler->GetStats();

  Progress("preempt run " + std::to_string(run) + ": high-priority arrivals");
  Stopwatch wall;
  const int arrivals = static_cast<int>(flags.rate * flags.seconds);
  const int64_t gap_us = static_cast<int64_t>(kSecondUs / flags.rate);
  const TimestampUs start = clock->NowUs();
  for (int i = 0; i < arrivals; ++i) {
    const TimestampUs at = start + i * gap_us;
    // Let grace periods that end before this arrival run out first.
    while (auto next = scheduler->NextWakeupUs()) {
      if (*next > at) break;
      clock->AdvanceToUs(*next);
      scheduler->WaitIdle();
      TESSERA_RETURN_IF_ERROR(log_step());
    }
    clock->AdvanceToUs(at);
    v1::JobSpec spec = JobSpecBuilder("default")
                           .Gpus(1)
                           .PriorityClass("high")
                           .SimulatedDurationMs(600'000)
                           .Build();
    auto job = scheduler->Submit(spec);
    if (!job.ok()) return job.status();
    scheduler->WaitIdle();
    TESSERA_RETURN_IF_ERROR(log_step());
  }
  const double wall_s = wall.Seconds();
  if (log) {
    log_file.close();
    if (!log_file) return InternalError("preempt: could not write the decision log " + log_path);
    Progress("preempt run " + std::to_string(run) + ": " + std::to_string(log->lines()) +
             " placements written to " + log_path);
  }
  const v1::SchedulerStats after = scheduler->GetStats();
  const int64_t preemptions = after.preemptions() - before.preemptions();
  const int64_t lost_s = after.lost_gpu_seconds() - before.lost_gpu_seconds();
  Json result = {
      {"benchmark", "preempt"},
      {"running", flags.running},
      {"rate", flags.rate},
      {"seconds", flags.seconds},
      {"seed", flags.common.seed},
      {"arrivals", arrivals},
      {"preemptions", preemptions},
      // Engine-measured planning time of one preemption decision (choosing the victims).
      {"ms_per_preemption_p50", after.preemption_latency().p50_us() / 1000.0},
      {"ms_per_preemption_p99", after.preemption_latency().p99_us() / 1000.0},
      {"ms_per_preemption_max", after.preemption_latency().max_us() / 1000.0},
      {"lost_gpu_s", lost_s},
      {"lost_gpu_s_per_preemption",
       preemptions > 0 ? static_cast<double>(lost_s) / static_cast<double>(preemptions) : 0.0},
      {"decision_p99_us", after.decision_latency().p99_us()},
      {"wall_s", wall_s},
  };
  scheduler.reset();
  return result;
}

}  // namespace

int RunPreempt(const PreemptFlags& flags) {
  std::vector<Json> runs;
  for (int run = 1; run <= flags.common.repeat; ++run) {
    StatusOr<Json> result = RunOnce(flags, run);
    if (!result.ok()) {
      std::cerr << "preempt: " << result.status() << '\n';
      return 1;
    }
    runs.push_back(*result);
  }
  const Json summary = Summarize(runs, "ms_per_preemption_p99");
  EmitJsonLine(summary);
  PrintTable(summary,
             {"running", "rate", "arrivals", "preemptions", "ms_per_preemption_p50",
              "ms_per_preemption_p99", "lost_gpu_s", "lost_gpu_s_per_preemption", "wall_s"});
  return 0;
}

}  // namespace tessera::bench
