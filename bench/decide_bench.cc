// decide: how fast the engine places a backlog. A synthetic cluster of N nodes x 8 GPUs (mixed
// models and NVLink layouts, racks), Q leaf queues in an org/team/user hierarchy with weights,
// and J pending jobs of a realistic mix are loaded with decisions paused; then decisions are
// resumed and timed until the scheduler is idle again. Jobs run until cancelled, so the cluster
// fills and the remaining jobs end in "blocked on capacity" decisions, which count too.
//
// Memory per node and per pending job is the RSS growth while loading each, an upper bound
// (allocator slack and SQLite's page cache are included).
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "benchmarks.h"
#include "decision_log.h"
#include "mixed_gpu_cluster.h"
#include "tessera/scheduler.h"

namespace tessera::bench {
namespace {

constexpr int kGpusPerNode = kMixedClusterGpusPerNode;

std::string StrategyName(PlacementOptions::Strategy s) {
  switch (s) {
    case PlacementOptions::Strategy::kBinpack:
      return "binpack";
    case PlacementOptions::Strategy::kSpread:
      return "spread";
    case PlacementOptions::Strategy::kBestFit:
      return "bestfit";
    case PlacementOptions::Strategy::kFgd:
      return "fgd";
    case PlacementOptions::Strategy::kFragmentationAware:
      return "fragmentation-aware";
  }
  return "unknown";
}

int RandomInt(std::mt19937_64& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

struct QueueLayout {
  std::vector<v1::QueueSpec> specs;  // parents before children, as CreateQueue needs.
  std::vector<std::string> leaves;
};

// About cbrt(Q) orgs and Q^(2/3) teams, so each level fans out by roughly the same factor.
QueueLayout MakeQueues(int leaves, std::mt19937_64& rng) {
  const int orgs = std::max(1, static_cast<int>(std::ceil(std::cbrt(leaves))));
  const int teams = std::clamp(static_cast<int>(std::ceil(std::pow(leaves, 2.0 / 3.0))), orgs,
                               std::max(orgs, leaves));
  QueueLayout layout;
  std::vector<std::string> org_names;
  std::vector<std::string> team_names;
  for (int o = 0; o < orgs; ++o) {
    org_names.push_back("org" + std::to_string(o));
    v1::QueueSpec& spec = layout.specs.emplace_back();
    spec.set_name(org_names.back());
    spec.set_weight(RandomInt(rng, 1, 4));
  }
  for (int t = 0; t < teams; ++t) {
    team_names.push_back(org_names[t % orgs] + "/team" + std::to_string(t));
    v1::QueueSpec& spec = layout.specs.emplace_back();
    spec.set_name(team_names.back());
    spec.set_weight(RandomInt(rng, 1, 4));
  }
  for (int u = 0; u < leaves; ++u) {
    layout.leaves.push_back(team_names[u % teams] + "/user" + std::to_string(u));
    v1::QueueSpec& spec = layout.specs.emplace_back();
    spec.set_name(layout.leaves.back());
    spec.set_weight(RandomInt(rng, 1, 3));
  }
  return layout;
}

// One job of the benchmark mix; the comments give each kind's share.
v1::JobSpec MakeJob(std::mt19937_64& rng, const std::vector<std::string>& leaves, int64_t index) {
  v1::JobSpec spec;
  spec.set_name("job-" + std::to_string(index));
  spec.set_queue(leaves[RandomInt(rng, 0, static_cast<int>(leaves.size()) - 1)]);
  v1::TaskResources* task = spec.mutable_task();
  task->set_cpu_milli(1000 * RandomInt(rng, 4, 16));
  task->set_memory_mib(1024 * RandomInt(rng, 16, 64));
  const int kind = RandomInt(rng, 0, 99);
  if (kind < 45) {  // 45%: one whole GPU.
    task->set_gpu_count(1);
  } else if (kind < 60) {  // 15%: 2 or 4 whole GPUs, half of them wanting one NVLink domain.
    task->set_gpu_count(RandomInt(rng, 0, 1) == 0 ? 2 : 4);
    spec.mutable_topology()->set_task_gpus_same_nvlink(RandomInt(rng, 0, 1) == 0);
  } else if (kind < 80) {  // 20%: a quarter or half of one GPU.
    task->set_gpu_count(1);
    task->set_gpu_milli(RandomInt(rng, 0, 1) == 0 ? 250 : 500);
  } else if (kind < 85) {  // 5%: CPU only.
  } else if (kind < 95) {  // 10%: gang of 2-4 tasks with 2 GPUs each.
    spec.set_tasks(RandomInt(rng, 2, 4));
    task->set_gpu_count(2);
  } else {  // 5%: multi-node gang, 2-4 tasks of a whole 8-GPU node each.
    spec.set_tasks(RandomInt(rng, 2, 4));
    task->set_gpu_count(8);
  }
  const int priority = RandomInt(rng, 0, 9);
  if (priority == 0) spec.set_priority_class("high");
  if (priority == 1) spec.set_priority_class("low");
  spec.mutable_simulation()->set_duration_ms(0);  // runs until cancelled: the cluster fills.
  return spec;
}

// Submits every job with up to `window` SubmitAsync calls in flight; returns failures.
int64_t SubmitAll(Scheduler& scheduler, int jobs, int window, std::mt19937_64& rng,
                  const std::vector<std::string>& leaves) {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  int64_t failed = 0;
  std::string first_error;
  const int progress_every = std::max(10000, jobs / 10);
  for (int i = 0; i < jobs; ++i) {
    v1::JobSpec spec = MakeJob(rng, leaves, i);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < window; });
      ++in_flight;
    }
    scheduler.SubmitAsync(spec, {}, [&](StatusOr<v1::Job> result) {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      if (!result.ok()) {
        if (failed++ == 0) first_error = result.status().ToString();
      }
      cv.notify_all();
    });
    if ((i + 1) % progress_every == 0) Progress("decide: submitted " + std::to_string(i + 1));
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
  if (failed > 0) {
    std::cerr << "decide: " << failed << " submits failed; first: " << first_error << '\n';
  }
  return failed;
}

}  // namespace

StatusOr<Json> RunDecideOnce(const DecideFlags& flags, int run) {
  std::mt19937_64 rng(flags.common.seed);
  Options options;
  options.log.level = LogLevel::kWarning;  // stderr is for the benchmark's progress.
  // By default in memory: this measures decisions, not fsync.
  std::optional<ScratchDir> dir;
  if (flags.store != "memory") {
    dir.emplace("tessera-bench-decide");
    options.store.path = dir->path() + "/state.db";
    options.store.durable = flags.store == "durable";
  }
  options.engine.start_paused = true;
  options.default_queue.clear();  // only the benchmark's hierarchy.
  // A decision log needs the placements to repeat exactly: in virtual time a pass runs to its
  // end instead of yielding after each slice of real time.
  const bool log_decisions = !flags.decision_log.empty();
  if (log_decisions) options.clock = std::make_shared<ManualClock>();
  options.simulated_cluster = MixedGpuCluster(flags.nodes);
  if (flags.strategy == "binpack")
    options.placement.strategy = PlacementOptions::Strategy::kBinpack;
  if (flags.strategy == "fragmentation-aware") {
    options.placement.strategy = PlacementOptions::Strategy::kFragmentationAware;
  }
  if (flags.candidates >= 0) options.placement.max_candidates = flags.candidates;

  const int64_t rss_before_open = TrimmedRssBytes();
  Stopwatch open_timer;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Open(options));
  const double open_s = open_timer.Seconds();
  const int64_t rss_after_open = TrimmedRssBytes();

  const QueueLayout queues = MakeQueues(flags.queues, rng);
  for (const v1::QueueSpec& spec : queues.specs) {
    TESSERA_RETURN_IF_ERROR(scheduler->CreateQueue(spec));
  }
  const int64_t rss_after_queues = TrimmedRssBytes();

  Progress("decide run " + std::to_string(run) + ": submitting " + std::to_string(flags.jobs) +
           " jobs to " + std::to_string(flags.queues) + " leaf queues");
  Stopwatch submit_timer;
  const int64_t failed = SubmitAll(*scheduler, flags.jobs, flags.submit_window, rng, queues.leaves);
  scheduler->WaitIdle();
  const double submit_s = submit_timer.Seconds();
  const int64_t rss_after_submit = TrimmedRssBytes();
  if (failed > 0) return InternalError("decide: " + std::to_string(failed) + " submits failed");

  const v1::SchedulerStats before = scheduler->GetStats();
  Progress("decide run " + std::to_string(run) + ": " + std::to_string(before.pending_jobs()) +
           " pending; deciding");
  Stopwatch decide_timer;
  scheduler->ResumeDecisions();
  scheduler->WaitIdle();
  const double wall_s = decide_timer.Seconds();
  const v1::SchedulerStats after = scheduler->GetStats();
  if (log_decisions) {
    const std::string path = DecisionLogPath(flags.decision_log, run, flags.common.repeat);
    std::ofstream file(path, std::ios::trunc);
    replay::DecisionLog log(file, options.clock->NowUs());
    TESSERA_RETURN_IF_ERROR(log.Update(*scheduler));
    file.close();
    if (!file) return InternalError("decide: could not write the decision log " + path);
    Progress("decide run " + std::to_string(run) + ": " + std::to_string(log.lines()) +
             " placements written to " + path);
  }

  const int64_t decisions = after.decisions() - before.decisions();
  const int64_t placements = after.placements() - before.placements();
  // Time the decision thread spent inside decisions, without the launches, executor reports and
  // store writes that follow them.
  const double engine_busy_s =
      (after.decision_latency().total_us() - before.decision_latency().total_us()) / 1e6;
  Json result = {
      {"benchmark", "decide"},
      {"nodes", flags.nodes},
      {"gpus", static_cast<int64_t>(flags.nodes) * kGpusPerNode},
      {"jobs", flags.jobs},
      {"queues", flags.queues},
      {"queues_total", static_cast<int64_t>(queues.specs.size())},
      {"strategy", StrategyName(options.placement.strategy)},
      {"store", flags.store},
      {"max_candidates", options.placement.max_candidates},
      {"seed", flags.common.seed},
      // End to end: from ResumeDecisions until every placement is durable and its tasks run.
      {"decisions_per_s", static_cast<double>(decisions) / wall_s},
      // The decision engine alone: decisions per second of decision time.
      {"engine_decisions_per_s",
       engine_busy_s > 0 ? static_cast<double>(decisions) / engine_busy_s : 0.0},
      {"placements_per_s", static_cast<double>(placements) / wall_s},
      {"decisions", decisions},
      {"placements", placements},
      {"wall_s", wall_s},
      // Engine-measured time of one decision (queue pick, quota, placement search); the store
      // write that follows a placement is asynchronous and not part of it.
      {"p50_us", after.decision_latency().p50_us()},
      {"p99_us", after.decision_latency().p99_us()},
      {"max_us", after.decision_latency().max_us()},
      // Since Open, so the submit phase's commits are included.
      {"commit_p50_us", after.commit_latency().p50_us()},
      {"commit_p99_us", after.commit_latency().p99_us()},
      {"decide_commits", after.commits() - before.commits()},
      {"decide_committed_writes", after.committed_writes() - before.committed_writes()},
      {"running_jobs", after.running_jobs()},
      {"pending_jobs", after.pending_jobs()},
      {"bytes_per_node",
       static_cast<double>(rss_after_open - rss_before_open) / static_cast<double>(flags.nodes)},
      {"bytes_per_job",
       static_cast<double>(rss_after_submit - rss_after_queues) / static_cast<double>(flags.jobs)},
      {"rss_before_open_mb", static_cast<double>(rss_before_open) / (1 << 20)},
      {"rss_after_open_mb", static_cast<double>(rss_after_open) / (1 << 20)},
      {"rss_after_submit_mb", static_cast<double>(rss_after_submit) / (1 << 20)},
      {"open_s", open_s},
      {"submit_s", submit_s},
      {"submit_jobs_per_s", flags.jobs / submit_s},
  };
  Progress("decide run " + std::to_string(run) + ": " + std::to_string(decisions) + " decisions, " +
           std::to_string(placements) + " placements in " + std::to_string(wall_s) + " s; closing");
  scheduler.reset();
  return result;
}

int RunDecide(const DecideFlags& flags) {
  std::vector<Json> runs;
  for (int run = 1; run <= flags.common.repeat; ++run) {
    StatusOr<Json> result = RunDecideOnce(flags, run);
    if (!result.ok()) {
      std::cerr << "decide: " << result.status() << '\n';
      return 1;
    }
    runs.push_back(*result);
  }
  const Json summary = Summarize(runs, "decisions_per_s");
  EmitJsonLine(summary);
  PrintTable(summary, {"nodes", "jobs", "queues", "decisions_per_s", "engine_decisions_per_s",
                       "decisions", "placements", "wall_s", "p50_us", "p99_us", "commit_p99_us",
                       "bytes_per_job", "bytes_per_node"});
  return 0;
}

}  // namespace tessera::bench
