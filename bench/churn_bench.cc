// churn: steady state on a nearly full cluster, in real time. N nodes x 8 GPUs (the model mix of
// `decide`); C client threads submit jobs with SubmitAsync as Poisson processes of R/C jobs/s in
// total R; each job runs (in the simulated executor, on the real clock) for an exponentially
// distributed time whose mean keeps the expected allocated GPU share at --utilization:
//
//   mean duration = utilization x GPUs / (R x mean GPUs per job)      (Little's law)
//
// so jobs finish as fast as they arrive and the cluster stays nearly full but rarely out of
// room. Before measuring, the cluster is filled at once to that level (exponential durations are
// memoryless, so a fresh fill has the steady state's remaining-runtime distribution), and
// arrivals run for --warmup seconds. Then for --seconds seconds the benchmark measures:
//
//   sustained_decisions_per_s  decisions counted by GetStats during the window / its length
//   placements_per_s           jobs placed during the window / its length
//   added_delay_p50/p99_ms     see below
//
// Added delay: for each job submitted during the window, the time from its acknowledgement
// (the SubmitAsync callback: the job is committed and already handed to the engine) to the
// RUNNING event of its first attempt, as WatchEvents reports it (event time_us is the
// scheduler's clock, the system clock here, when the transition happened). That covers what the
// scheduler adds before work can start: waiting on the decision strand, the decision itself,
// the durable commit of the admission (a placement is launched only once it is durable), the
// launch, and the executor's start report (immediate in the simulated executor). It excludes
// the submit's own commit (that is `submit`'s latency, reported here as submit_ack_*), the
// commit of the RUNNING transition (the task runs already), and anything a real executor adds
// (image pull, process start). Only jobs that could start at once count: free GPU capacity
// existed when they were submitted (see Eligible). Delay to the ADMITTED event (the decision
// alone, before its commit) is reported as decision_delay_*.
//
// Engine-side latency: GetStats keeps decision latency since Open, so only the mean over the
// window can be derived (busy time / decisions); the p99 reported is since Open and includes
// the fill.
//
// With --vs-decide, each run follows three `decide` runs on the same cluster and store settings
// in this process, and reports decide_ratio (the median decide rate over this run's sustained
// rate): the target "within 2x of decide" compares the two at the same time on the same machine.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench_util.h"
#include "benchmarks.h"
#include "mixed_gpu_cluster.h"
#include "tessera/scheduler.h"

namespace tessera::bench {
namespace {

using SysClock = std::chrono::system_clock;
using SteadyClock = std::chrono::steady_clock;

constexpr int kGpusPerNode = kMixedClusterGpusPerNode;
// SubmitAsync calls one client keeps in flight at most, so a scheduler that falls behind
// shows as a missed arrival rate rather than unbounded memory.
constexpr int kMaxInFlightPerClient = 4096;
// How often the sampler reads free capacity and the backlog.
constexpr auto kSamplePeriod = std::chrono::milliseconds(5);
// A job counts as "could start at once" only if, at the last sample before its submit, the
// backlog held at most this many pending jobs. A few are always in flight (submitted, not yet
// decided); more than this means jobs are queueing for capacity.
constexpr int64_t kEligibleMaxPending = 32;

// The job mix: 70% one whole GPU, 15% a quarter or half of one, 15% two whole GPUs. CPU and
// memory stay well under a node's per-GPU share, so GPUs are what fills up.
constexpr double kMeanGpusPerJob = 0.70 * 1.0 + 0.15 * 0.375 + 0.15 * 2.0;

struct JobDraw {
  v1::JobSpec spec;
  int64_t gpu_milli = 0;
};

JobDraw MakeJob(std::mt19937_64& rng, const std::string& queue, double mean_duration_ms) {
  JobDraw draw;
  v1::JobSpec& spec = draw.spec;
  spec.set_queue(queue);
  v1::TaskResources* task = spec.mutable_task();
  task->set_cpu_milli(1000 * std::uniform_int_distribution<int>(2, 8)(rng));
  task->set_memory_mib(1024 * std::uniform_int_distribution<int>(16, 64)(rng));
  const int kind = std::uniform_int_distribution<int>(0, 99)(rng);
  if (kind < 70) {
    task->set_gpu_count(1);
    draw.gpu_milli = 1000;
  } else if (kind < 85) {
    task->set_gpu_count(1);
    task->set_gpu_milli(std::uniform_int_distribution<int>(0, 1)(rng) == 0 ? 250 : 500);
    draw.gpu_milli = task->gpu_milli();
  } else {
    task->set_gpu_count(2);
    draw.gpu_milli = 2000;
  }
  // At least 10 ms: 0 would mean "until cancelled".
  const double ms = std::exponential_distribution<double>(1.0 / mean_duration_ms)(rng);
  spec.mutable_simulation()->set_duration_ms(std::max<int64_t>(10, std::llround(ms)));
  return draw;
}

int64_t SysNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(SysClock::now().time_since_epoch())
      .count();
}

// Free GPU capacity and backlog, read every kSamplePeriod by a sampler thread and read by the
// clients at each submit.
struct Capacity {
  std::atomic<int64_t> free_gpu_milli{0};
  std::atomic<int64_t> pending{0};
  // Sums over the window, for the mean allocation.
  std::mutex mu;
  double allocated_sum = 0;
  int64_t samples = 0;
};

// One submit as a client saw it.
struct Submission {
  uint64_t id = 0;
  int64_t call_us = 0;  // SubmitAsync called (system clock).
  int64_t ack_us = 0;   // its callback ran.
  bool in_window = false;
  bool eligible = false;
};

struct ClientLog {
  std::mutex mu;
  std::vector<Submission> submissions;
  int64_t failed = 0;
  std::string first_error;
};

// A job could start at once when, at the last sample, capacity beyond what it asks stayed free
// (a margin of 1% of the cluster covers sampling lag and fragmentation) and no backlog was
// queueing for capacity.
bool Eligible(const Capacity& capacity, int64_t job_gpu_milli, int64_t margin_gpu_milli) {
  return capacity.free_gpu_milli.load() - job_gpu_milli >= margin_gpu_milli &&
         capacity.pending.load() <= kEligibleMaxPending;
}

void RunClient(Scheduler& scheduler, int client, const ChurnFlags& flags, uint64_t seed,
               double mean_duration_ms, SteadyClock::time_point start,
               SteadyClock::time_point window_start, SteadyClock::time_point stop,
               const Capacity& capacity, int64_t margin_gpu_milli, ClientLog* log) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap_s(flags.rate / flags.clients);
  const std::string queue = "tenant-" + std::to_string(client);
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  SteadyClock::time_point next = start;
  while (true) {
    next += std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::duration<double>(gap_s(rng)));
    if (next >= stop) break;
    std::this_thread::sleep_until(next);
    JobDraw draw = MakeJob(rng, queue, mean_duration_ms);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < kMaxInFlightPerClient; });
      ++in_flight;
    }
    Submission s;
    s.in_window = next >= window_start;
    s.eligible = Eligible(capacity, draw.gpu_milli, margin_gpu_milli);
    s.call_us = SysNowUs();
    scheduler.SubmitAsync(draw.spec, {}, [&, s](StatusOr<v1::Job> job) mutable {
      s.ack_us = SysNowUs();
      {
        std::lock_guard<std::mutex> lock(log->mu);
        if (job.ok()) {
          s.id = job->id();
          log->submissions.push_back(s);
        } else if (log->failed++ == 0) {
          log->first_error = job.status().ToString();
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
}

// First ADMITTED and RUNNING event time of every job, from WatchEvents.
struct EventTimes {
  std::mutex mu;
  std::unordered_map<uint64_t, int64_t> admitted_us;
  std::unordered_map<uint64_t, int64_t> running_us;
  std::string error;
};

void WatchJobEvents(Scheduler& scheduler, uint64_t after_seq, const std::atomic<bool>& stop,
                    EventTimes* times) {
  while (!stop.load()) {
    StatusOr<std::vector<v1::Event>> events =
        scheduler.WatchEvents(after_seq, 10000, std::chrono::milliseconds(50));
    if (!events.ok()) {
      std::lock_guard<std::mutex> lock(times->mu);
      times->error = events.status().ToString();
      return;
    }
    std::lock_guard<std::mutex> lock(times->mu);
    for (const v1::Event& e : *events) {
      after_seq = e.seq();
      if (e.kind() != v1::JOB_STATE_CHANGED) continue;
      if (e.to_state() == v1::ADMITTED) times->admitted_us.emplace(e.job_id(), e.time_us());
      if (e.to_state() == v1::RUNNING) times->running_us.emplace(e.job_id(), e.time_us());
    }
  }
}

void SampleCapacity(Scheduler& scheduler, int64_t capacity_gpu_milli, const std::atomic<bool>& stop,
                    const std::atomic<bool>& in_window, Capacity* capacity) {
  while (!stop.load()) {
    StatusOr<std::vector<v1::Queue>> queues = scheduler.ListQueues();
    const v1::SchedulerStats stats = scheduler.GetStats();
    if (queues.ok()) {
      int64_t allocated = 0;
      for (const v1::Queue& q : *queues) allocated += q.status().allocated().gpu_milli();
      capacity->free_gpu_milli.store(capacity_gpu_milli - allocated);
      if (in_window.load()) {
        std::lock_guard<std::mutex> lock(capacity->mu);
        capacity->allocated_sum += static_cast<double>(allocated) / capacity_gpu_milli;
        ++capacity->samples;
      }
    }
    capacity->pending.store(stats.pending_jobs());
    std::this_thread::sleep_for(kSamplePeriod);
  }
}

// Fills the cluster to the target allocation at once; returns the jobs submitted.
StatusOr<int64_t> Fill(Scheduler& scheduler, const ChurnFlags& flags, int64_t capacity_gpu_milli,
                       double mean_duration_ms, std::mt19937_64& rng) {
  const int64_t jobs = std::llround(flags.utilization * static_cast<double>(capacity_gpu_milli) /
                                    1000.0 / kMeanGpusPerJob);
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  int64_t failed = 0;
  std::string first_error;
  for (int64_t i = 0; i < jobs; ++i) {
    JobDraw draw = MakeJob(rng, "tenant-" + std::to_string(i % flags.clients), mean_duration_ms);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < 512; });
      ++in_flight;
    }
    scheduler.SubmitAsync(draw.spec, {}, [&](StatusOr<v1::Job> job) {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      if (!job.ok() && failed++ == 0) first_error = job.status().ToString();
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
  if (failed > 0)
    return InternalError("fill: " + std::to_string(failed) + " failed: " + first_error);
  return jobs;
}

// Waits until no job is pending, or until the backlog stops shrinking (what is left then waits
// for capacity, which arrivals will not change); at most `limit`.
void WaitForBacklog(Scheduler& scheduler, std::chrono::seconds limit) {
  const SteadyClock::time_point deadline = SteadyClock::now() + limit;
  int64_t last = -1;
  int unchanged = 0;
  while (SteadyClock::now() < deadline) {
    const int64_t pending = scheduler.GetStats().pending_jobs();
    if (pending == 0) return;
    unchanged = pending == last ? unchanged + 1 : 0;
    if (unchanged >= 10) return;
    last = pending;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

double ToMs(int64_t us) { return static_cast<double>(us) / 1e3; }

// CPU time of the scheduler's two busy threads and of the whole process (clients, watcher and
// sampler included): on a small machine they compete for the same cores, so throughput alone
// does not tell which one limits it.
struct ThreadCpu {
  double decide_s = 0;
  double store_s = 0;
  double process_s = 0;
};

ThreadCpu ReadThreadCpu() {
  ThreadCpu cpu;
  cpu.decide_s = ThreadCpuSeconds("tessera-decide");
  cpu.store_s = ThreadCpuSeconds("tessera-store");
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  cpu.process_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  return cpu;
}

StatusOr<Json> RunOnce(const ChurnFlags& flags, int run) {
  const uint64_t seed = flags.common.seed * 1000003 + static_cast<uint64_t>(run);
  std::mt19937_64 rng(seed);
  const int64_t gpus = static_cast<int64_t>(flags.nodes) * kGpusPerNode;
  const int64_t capacity_gpu_milli = gpus * 1000;
  const double mean_duration_ms =
      1000.0 * flags.utilization * static_cast<double>(gpus) / (flags.rate * kMeanGpusPerJob);

  ScratchDir dir("tessera-bench-churn");
  Options options;
  options.log.level = LogLevel::kWarning;  // stderr is for the benchmark's progress.
  options.store.path = dir.path() + "/state.db";
  options.store.durable = flags.durable;
  options.default_queue.clear();
  options.simulated_cluster = MixedGpuCluster(flags.nodes);
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Open(options));
  for (int c = 0; c < flags.clients; ++c) {
    v1::QueueSpec spec;
    spec.set_name("tenant-" + std::to_string(c));
    spec.set_weight(1);
    TESSERA_RETURN_IF_ERROR(scheduler->CreateQueue(spec));
  }

  Progress("churn run " + std::to_string(run) + ": filling " + std::to_string(gpus) + " GPUs to " +
           std::to_string(flags.utilization) + " (mean job " +
           std::to_string(mean_duration_ms / 1000) + " s)");
  Stopwatch fill_timer;
  TESSERA_ASSIGN_OR_RETURN(int64_t fill_jobs,
                           Fill(*scheduler, flags, capacity_gpu_milli, mean_duration_ms, rng));
  WaitForBacklog(*scheduler, std::chrono::seconds(60));
  const double fill_s = fill_timer.Seconds();

  Capacity capacity;
  EventTimes times;
  std::atomic<bool> stop_watch{false};
  std::atomic<bool> in_window{false};
  const uint64_t after_seq = scheduler->GetStats().last_event_seq();
  std::thread watcher([&] { WatchJobEvents(*scheduler, after_seq, stop_watch, &times); });
  std::thread sampler(
      [&] { SampleCapacity(*scheduler, capacity_gpu_milli, stop_watch, in_window, &capacity); });
  std::this_thread::sleep_for(4 * kSamplePeriod);  // a first sample before the first submit.

  const auto warmup = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(flags.warmup));
  const auto window = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(flags.seconds));
  const SteadyClock::time_point start = SteadyClock::now();
  const SteadyClock::time_point window_start = start + warmup;
  const SteadyClock::time_point stop = window_start + window;
  const int64_t margin_gpu_milli = capacity_gpu_milli / 100;
  Progress("churn run " + std::to_string(run) + ": " + std::to_string(fill_jobs) +
           " jobs filled in " + std::to_string(fill_s) + " s; " + std::to_string(flags.rate) +
           " jobs/s from " + std::to_string(flags.clients) + " clients, warm-up " +
           std::to_string(flags.warmup) + " s, window " + std::to_string(flags.seconds) + " s");
  std::vector<std::unique_ptr<ClientLog>> logs;
  std::vector<std::thread> clients;
  for (int c = 0; c < flags.clients; ++c) {
    logs.push_back(std::make_unique<ClientLog>());
    clients.emplace_back([&, c] {
      RunClient(*scheduler, c, flags, seed * 31 + static_cast<uint64_t>(c), mean_duration_ms, start,
                window_start, stop, capacity, margin_gpu_milli, logs[c].get());
    });
  }

  std::this_thread::sleep_until(window_start);
  const ThreadCpu cpu_before = ReadThreadCpu();
  const v1::SchedulerStats before = scheduler->GetStats();
  const SteadyClock::time_point measured_from = SteadyClock::now();
  in_window.store(true);
  std::this_thread::sleep_until(stop);
  const v1::SchedulerStats after = scheduler->GetStats();
  const double window_s = std::chrono::duration<double>(SteadyClock::now() - measured_from).count();
  const ThreadCpu cpu_after = ReadThreadCpu();
  in_window.store(false);
  for (std::thread& t : clients) t.join();
  const double submit_tail_s = std::chrono::duration<double>(SteadyClock::now() - stop).count();

  // Let the last window jobs start (or find they cannot), then stop watching.
  std::vector<Submission> window_jobs;
  int64_t failed = 0;
  std::string first_error;
  for (const auto& log : logs) {
    std::lock_guard<std::mutex> lock(log->mu);
    for (const Submission& s : log->submissions) {
      if (s.in_window) window_jobs.push_back(s);
    }
    if (log->failed > 0 && failed == 0) first_error = log->first_error;
    failed += log->failed;
  }
  const SteadyClock::time_point settle_deadline = SteadyClock::now() + std::chrono::seconds(5);
  while (SteadyClock::now() < settle_deadline) {
    size_t started = 0;
    {
      std::lock_guard<std::mutex> lock(times.mu);
      for (const Submission& s : window_jobs) started += times.running_us.count(s.id);
    }
    if (started == window_jobs.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop_watch.store(true);
  watcher.join();
  sampler.join();
  const v1::SchedulerStats end_stats = scheduler->GetStats();
  scheduler.reset();
  if (!times.error.empty()) return InternalError("WatchEvents: " + times.error);
  if (failed > 0)
    std::cerr << "churn: " << failed << " submits failed; first: " << first_error << '\n';

  std::vector<double> added_ms, added_all_ms, decision_ms, ack_ms;
  int64_t eligible = 0;
  int64_t not_started = 0;
  for (const Submission& s : window_jobs) {
    ack_ms.push_back(ToMs(s.ack_us - s.call_us));
    auto running = times.running_us.find(s.id);
    if (running == times.running_us.end()) {
      ++not_started;
      continue;
    }
    const double delay = ToMs(running->second - s.ack_us);
    added_all_ms.push_back(delay);
    if (!s.eligible) continue;
    ++eligible;
    added_ms.push_back(delay);
    auto admitted = times.admitted_us.find(s.id);
    if (admitted != times.admitted_us.end())
      decision_ms.push_back(ToMs(admitted->second - s.ack_us));
  }

  const int64_t decisions = after.decisions() - before.decisions();
  const int64_t placements = after.placements() - before.placements();
  const double busy_us = after.decision_latency().total_us() - before.decision_latency().total_us();
  const int64_t commits = after.commits() - before.commits();
  const int64_t writes = after.committed_writes() - before.committed_writes();
  const double allocated_mean =
      capacity.samples > 0 ? capacity.allocated_sum / static_cast<double>(capacity.samples) : 0.0;
  Json result = {
      {"benchmark", "churn"},
      {"nodes", flags.nodes},
      {"gpus", gpus},
      {"rate", flags.rate},
      {"seconds", flags.seconds},
      {"clients", flags.clients},
      {"utilization", flags.utilization},
      {"warmup_s", flags.warmup},
      {"durable", flags.durable},
      {"seed", flags.common.seed},
      {"mean_job_s", mean_duration_ms / 1000},
      {"fill_jobs", fill_jobs},
      {"fill_s", fill_s},
      {"window_s", window_s},
      {"sustained_decisions_per_s", static_cast<double>(decisions) / window_s},
      {"placements_per_s", static_cast<double>(placements) / window_s},
      {"finished_per_s",
       static_cast<double>(after.finished_jobs() - before.finished_jobs()) / window_s},
      {"submitted_per_s", static_cast<double>(window_jobs.size()) / window_s},
      {"decisions", decisions},
      {"placements", placements},
      {"window_jobs", static_cast<int64_t>(window_jobs.size())},
      {"eligible_jobs", eligible},
      {"not_started", not_started},
      {"submit_failures", failed},
      {"added_delay_p50_ms", Percentile(added_ms, 0.50)},
      {"added_delay_p99_ms", Percentile(added_ms, 0.99)},
      {"added_delay_max_ms", Percentile(added_ms, 1.0)},
      {"decision_delay_p50_ms", Percentile(decision_ms, 0.50)},
      {"decision_delay_p99_ms", Percentile(decision_ms, 0.99)},
      // Every window job that started, eligible or not.
      {"all_delay_p50_ms", Percentile(added_all_ms, 0.50)},
      {"all_delay_p99_ms", Percentile(added_all_ms, 0.99)},
      {"submit_ack_p50_ms", Percentile(ack_ms, 0.50)},
      {"submit_ack_p99_ms", Percentile(ack_ms, 0.99)},
      // Decision time per decision in the window (engine busy time / decisions); exact.
      {"engine_decision_mean_us_window", decisions > 0 ? busy_us / decisions : 0.0},
      // Share of the window the decision thread spent inside decisions.
      {"engine_busy_pct", 100.0 * busy_us / (window_s * 1e6)},
      // Cumulative since Open (the fill included): GetStats keeps no per-window quantiles.
      {"engine_decision_p99_us_since_open", after.decision_latency().p99_us()},
      {"commit_p99_us_since_open", after.commit_latency().p99_us()},
      {"writes_per_commit", commits > 0 ? static_cast<double>(writes) / commits : 0.0},
      // Store writes (a submit, or a bundle of the engine's transitions) and commits per second.
      {"writes_per_s", static_cast<double>(writes) / window_s},
      {"commits_per_s", static_cast<double>(commits) / window_s},
      // CPU use in the window, in % of one core, and per decision: what each thread costs.
      {"decide_thread_cpu_pct", 100.0 * (cpu_after.decide_s - cpu_before.decide_s) / window_s},
      {"store_thread_cpu_pct", 100.0 * (cpu_after.store_s - cpu_before.store_s) / window_s},
      {"process_cpu_pct", 100.0 * (cpu_after.process_s - cpu_before.process_s) / window_s},
      {"decide_thread_us_per_decision",
       decisions > 0 ? 1e6 * (cpu_after.decide_s - cpu_before.decide_s) / decisions : 0.0},
      {"store_thread_us_per_decision",
       decisions > 0 ? 1e6 * (cpu_after.store_s - cpu_before.store_s) / decisions : 0.0},
      {"process_us_per_decision",
       decisions > 0 ? 1e6 * (cpu_after.process_s - cpu_before.process_s) / decisions : 0.0},
      {"gpu_allocated_pct", 100.0 * allocated_mean},
      {"pending_at_end", after.pending_jobs()},
      {"submit_tail_s", submit_tail_s},
      {"bugs", end_stats.bugs()},
  };
  Progress("churn run " + std::to_string(run) + ": " + std::to_string(decisions) +
           " decisions in " + std::to_string(window_s) + " s, added delay p99 " +
           std::to_string(Percentile(added_ms, 0.99)) + " ms over " + std::to_string(eligible) +
           " eligible jobs");
  return result;
}

constexpr int kDecideRunsPerPair = 3;

// The decide run paired with a churn run: the same cluster and store settings, 10 pending jobs
// per node in 100 queues (decide's standard sizes: 5,000 nodes, 50,000 jobs).
DecideFlags PairedDecide(const ChurnFlags& flags) {
  DecideFlags decide;
  decide.common.seed = flags.common.seed;
  decide.nodes = flags.nodes;
  decide.jobs = 10 * flags.nodes;
  decide.queues = 100;
  decide.store = flags.durable ? "durable" : "file";
  return decide;
}

}  // namespace

int RunChurn(const ChurnFlags& flags) {
  std::vector<Json> runs;
  for (int run = 1; run <= flags.common.repeat; ++run) {
    std::optional<double> decide_rate;
    if (flags.vs_decide) {
      // decide's window is short (at 5,000 nodes about 14,000 placements in a quarter of a
      // second), so one pause of the machine moves it by a fifth: the median of three.
      std::vector<double> rates;
      for (int i = 0; i < kDecideRunsPerPair; ++i) {
        StatusOr<Json> decide = RunDecideOnce(PairedDecide(flags), run);
        if (!decide.ok()) {
          std::cerr << "churn: the paired decide run: " << decide.status() << '\n';
          return 1;
        }
        rates.push_back(decide->at("decisions_per_s").get<double>());
      }
      decide_rate = Median(rates);
    }
    StatusOr<Json> result = RunOnce(flags, run);
    if (!result.ok()) {
      std::cerr << "churn: " << result.status() << '\n';
      return 1;
    }
    if (decide_rate) {
      const double churn_rate = result->at("sustained_decisions_per_s").get<double>();
      (*result)["decide_decisions_per_s"] = *decide_rate;
      (*result)["decide_ratio"] = churn_rate > 0 ? *decide_rate / churn_rate : 0.0;
      Progress("churn run " + std::to_string(run) + ": decide " + std::to_string(*decide_rate) +
               "/s, churn " + std::to_string(churn_rate) + "/s, ratio " +
               std::to_string(result->at("decide_ratio").get<double>()));
    }
    runs.push_back(*result);
  }
  Json summary = Summarize(runs, "sustained_decisions_per_s");
  Json delay_runs = Json::array();
  for (const Json& run : runs) delay_runs.push_back(run.at("added_delay_p99_ms"));
  summary["added_delay_p99_ms_runs"] = delay_runs;
  if (flags.vs_decide) {
    // The median of the per-run ratios (Summarize's decide_ratio), and each pair.
    Json decide_runs = Json::array();
    Json ratio_runs = Json::array();
    for (const Json& run : runs) {
      decide_runs.push_back(run.at("decide_decisions_per_s"));
      ratio_runs.push_back(run.at("decide_ratio"));
    }
    summary["decide_decisions_per_s_runs"] = decide_runs;
    summary["decide_ratio_runs"] = ratio_runs;
  }
  EmitJsonLine(summary);
  PrintTable(summary, {"nodes",
                       "rate",
                       "seconds",
                       "sustained_decisions_per_s",
                       "placements_per_s",
                       "submitted_per_s",
                       "gpu_allocated_pct",
                       "eligible_jobs",
                       "window_jobs",
                       "added_delay_p50_ms",
                       "added_delay_p99_ms",
                       "decision_delay_p99_ms",
                       "all_delay_p99_ms",
                       "submit_ack_p99_ms",
                       "engine_decision_mean_us_window",
                       "engine_busy_pct",
                       "decide_thread_cpu_pct",
                       "store_thread_cpu_pct",
                       "process_cpu_pct",
                       "decide_thread_us_per_decision",
                       "store_thread_us_per_decision",
                       "pending_at_end",
                       "decide_decisions_per_s",
                       "decide_ratio"});
  return summary.value("submit_failures", 0) > 0 ? 1 : 0;
}

}  // namespace tessera::bench
