// recover: what reopening a big store costs. The parent writes a store of F succeeded and L
// pending jobs straight through the internal store API (a million public submits would take
// far longer and measure something else), then, for each repeat, copies it and has a fresh child
// process (this program's hidden `recover-measure` subcommand) open the copy with
// Scheduler::Open and wait for the first placement. Running the measurement in its own process
// keeps the generator's memory out of peak_rss_mb; copying per repeat matters because opening
// changes the store (placements are written back).
//
// The copy has just been written, so the open runs against a warm page cache: this measures
// the scheduler's own work (reading rows, parsing, indexing), not the disk.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "benchmarks.h"
#include "store/store.h"
#include "store/write_transaction.h"
#include "tessera/scheduler.h"

namespace tessera::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int64_t kJobsPerWrite = 10000;
constexpr int64_t kProgressEvery = 100000;

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A job as Submit would have stored it: one task with one GPU, 1 CPU, 1 GiB.
v1::Job SmallJob(int64_t index, int64_t submit_time_us) {
  v1::Job job;
  v1::JobSpec* spec = job.mutable_spec();
  spec->set_name("job-" + std::to_string(index));
  spec->set_queue("default");
  spec->mutable_task()->set_gpu_count(1);
  spec->mutable_task()->set_cpu_milli(1000);
  spec->mutable_task()->set_memory_mib(1024);
  v1::JobStatus* status = job.mutable_status();
  status->set_submit_time_us(submit_time_us);
  status->set_attempt(1);
  status->set_priority(100);  // the default class, "normal".
  status->set_preemptible(true);
  return job;
}

// Finished jobs carry what a real run leaves behind: times and the placement they ran on.
void MarkSucceeded(v1::Job& job, int64_t index) {
  v1::JobStatus* status = job.mutable_status();
  status->set_state(v1::SUCCEEDED);
  status->set_start_time_us(status->submit_time_us() + 1000);
  status->set_end_time_us(status->submit_time_us() + 60'000'000);
  status->set_reason("exited 0");
  v1::TaskPlacement* placement = status->add_placements();
  placement->set_index(0);
  placement->set_node("node-" + std::to_string(index % 100));
  placement->add_gpus(static_cast<int32_t>(index % 8));
  placement->set_gpu_milli(1000);
  placement->set_gpu_memory_mib(81920);
  placement->set_started(true);
  placement->set_exited(true);
}

struct GeneratedStore {
  uint64_t last_event_seq = 0;
  double generate_s = 0;
};

// Writes `finished` succeeded jobs, then `live` pending ones (the newest, as in a real store),
// each with the event of its last transition.
StatusOr<GeneratedStore> GenerateStore(const std::string& path, int64_t live, int64_t finished) {
  Stopwatch timer;
  StoreOptions options;
  options.path = path;
  options.durable = false;  // a crash here only costs a rerun.
  options.max_batch = 1024;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::Store::Open(options));

  const int64_t start_us = NowUs();
  TESSERA_RETURN_IF_ERROR(store->WriteAndWait([start_us](store::WriteTransaction& t) -> Status {
    v1::QueueSpec spec;
    spec.set_name("default");
    spec.set_weight(1);
    TESSERA_RETURN_IF_ERROR(t.PutQueue(spec));
    v1::Event event;
    event.set_time_us(start_us);
    event.set_kind(v1::QUEUE_CREATED);
    event.set_queue("default");
    return t.AppendEvent(event).status();
  }));

  const int64_t total = live + finished;
  // Spread submit times over the past, one job per millisecond, oldest first.
  const int64_t first_submit_us = start_us - total * 1000;
  for (int64_t begin = 0; begin < total; begin += kJobsPerWrite) {
    const int64_t end = std::min(total, begin + kJobsPerWrite);
    TESSERA_RETURN_IF_ERROR(store->WriteAndWait([=](store::WriteTransaction& t) -> Status {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t submit_us = first_submit_us + i * 1000;
        v1::Job job = SmallJob(i, submit_us);
        v1::Event event;
        event.set_kind(v1::JOB_STATE_CHANGED);
        event.set_queue("default");
        event.set_attempt(1);
        if (i < finished) {
          MarkSucceeded(job, i);
          event.set_from_state(v1::RUNNING);
          event.set_to_state(v1::SUCCEEDED);
          event.set_time_us(job.status().end_time_us());
          event.set_reason("exited 0");
        } else {
          job.mutable_status()->set_state(v1::PENDING);
          event.set_to_state(v1::PENDING);
          event.set_time_us(submit_us);
          event.set_reason("submitted");
        }
        TESSERA_ASSIGN_OR_RETURN(uint64_t id, t.InsertJob(job, job.status().priority(), submit_us));
        event.set_job_id(id);
        TESSERA_RETURN_IF_ERROR(t.AppendEvent(event).status());
      }
      return Status::Ok();
    }));
    if (end / kProgressEvery != begin / kProgressEvery || end == total) {
      Progress("recover: generated " + std::to_string(end) + " / " + std::to_string(total) +
               " jobs");
    }
  }
  GeneratedStore generated;
  generated.last_event_seq = store->LastEventSeq();
  store.reset();  // checkpoints the WAL into the main file.
  generated.generate_s = timer.Seconds();
  return generated;
}

void CopyStore(const std::string& from, const std::string& to) {
  for (const char* suffix : {"-wal", "-shm", ".lock"}) std::filesystem::remove(to + suffix);
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  if (std::filesystem::exists(from + "-wal")) {
    std::filesystem::copy_file(from + "-wal", to + "-wal",
                               std::filesystem::copy_options::overwrite_existing);
  }
}

// Runs `tessera-bench recover-measure` on `store` and returns the JSON line it prints.
StatusOr<Json> MeasureInChild(const std::string& store, const RecoverFlags& flags,
                              uint64_t after_seq) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return InternalError("pipe failed");
  const std::vector<std::string> args = {
      "tessera-bench", "recover-measure",           "--store",     store,
      "--nodes",       std::to_string(flags.nodes), "--after-seq", std::to_string(after_seq)};
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) return InternalError("fork failed");
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy.
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string output;
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) output.append(buffer, n);
  close(pipe_fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return InternalError("recover-measure child failed (status " + std::to_string(wstatus) + ")");
  }
  const size_t start = output.rfind('{');
  if (start == std::string::npos) return InternalError("recover-measure printed no result");
  try {
    return Json::parse(output.substr(start));
  } catch (const std::exception& e) {
    return InternalError(std::string("recover-measure printed bad JSON: ") + e.what());
  }
}

}  // namespace

int RunRecover(const RecoverFlags& flags) {
  ScratchDir dir("tessera-bench-recover");
  const std::string generated_path = dir.path() + "/generated.db";
  Progress("recover: generating " + std::to_string(flags.finished) + " finished and " +
           std::to_string(flags.live) + " live jobs in " + generated_path);
  StatusOr<GeneratedStore> generated = GenerateStore(generated_path, flags.live, flags.finished);
  if (!generated.ok()) {
    std::cerr << "recover: generating the store: " << generated.status() << '\n';
    return 1;
  }
  const int64_t store_bytes = FileBytes(generated_path) + FileBytes(generated_path + "-wal");

  std::vector<Json> runs;
  const std::string run_path = dir.path() + "/run.db";
  for (int run = 1; run <= flags.common.repeat; ++run) {
    CopyStore(generated_path, run_path);
    Progress("recover run " + std::to_string(run) + ": opening a copy in a child process");
    StatusOr<Json> measured = MeasureInChild(run_path, flags, generated->last_event_seq);
    if (!measured.ok()) {
      std::cerr << "recover: " << measured.status() << '\n';
      return 1;
    }
    Json result = {
        {"benchmark", "recover"},
        {"live", flags.live},
        {"finished", flags.finished},
        {"nodes", flags.nodes},
        {"seed", flags.common.seed},
        {"store_mb", static_cast<double>(store_bytes) / (1 << 20)},
        {"generate_s", generated->generate_s},
    };
    result.update(*measured);
    runs.push_back(std::move(result));
  }
  const Json summary = Summarize(runs, "open_to_first_decision_ms");
  EmitJsonLine(summary);
  PrintTable(summary, {"live", "finished", "store_mb", "open_ms", "open_to_first_decision_ms",
                       "open_to_first_admitted_ms", "peak_rss_mb", "loaded_live_jobs"});
  return 0;
}

int RunRecoverMeasure(const RecoverMeasureFlags& flags) {
  const SteadyClock::time_point start = SteadyClock::now();
  auto ms_since_start = [&start] {
    return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
  };
  Options options;
  options.log.level = LogLevel::kWarning;  // stderr is for the benchmark's progress.
  options.store.path = flags.store;
  options.store.durable = true;
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* group = cluster.add_groups();
  group->set_name_prefix("node");
  group->set_count(flags.nodes);
  group->set_cpu_milli(128000);
  group->set_memory_mib(1024 * 1024);
  group->set_gpus(8);
  group->set_gpu_model("A100-80GB");
  group->set_gpu_memory_mib(81920);
  options.simulated_cluster = cluster;

  StatusOr<std::unique_ptr<Scheduler>> scheduler = Scheduler::Open(options);
  const double open_ms = ms_since_start();
  if (!scheduler.ok()) {
    std::cerr << "recover-measure: " << scheduler.status() << '\n';
    return 1;
  }

  // The first committed ADMITTED event: the first decision that became durable. Watched on its
  // own thread because WatchEvents blocks on commits while the main thread polls the engine.
  std::atomic<double> first_admitted_ms{-1};
  std::atomic<bool> stop_watching{false};
  std::thread watcher([&] {
    uint64_t after = flags.after_seq;
    while (!stop_watching) {
      StatusOr<std::vector<v1::Event>> events =
          (*scheduler)->WatchEvents(after, 1000, std::chrono::milliseconds(100));
      if (!events.ok()) return;
      for (const v1::Event& e : *events) {
        after = e.seq();
        if (e.kind() == v1::JOB_STATE_CHANGED && e.to_state() == v1::ADMITTED) {
          first_admitted_ms = ms_since_start();
          return;
        }
      }
    }
  });

  // The first decision that placed a job. GetStats runs on the decision strand, so a reading
  // may wait for the decision pass in progress (at most EngineOptions::decision_slice).
  double first_decision_ms = -1;
  v1::SchedulerStats stats;
  while (ms_since_start() < 120'000) {
    stats = (*scheduler)->GetStats();
    if (stats.placements() > 0) {
      first_decision_ms = ms_since_start();
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  while (first_admitted_ms < 0 && ms_since_start() < 120'000) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  stop_watching = true;
  watcher.join();
  const double peak_rss_mb = PeakRssMib();

  Stopwatch close_timer;
  scheduler->reset();
  const double close_ms = close_timer.Millis();
  if (first_decision_ms < 0) {
    std::cerr << "recover-measure: no placement within 120 s\n";
    return 1;
  }
  EmitJsonLine({
      {"open_ms", open_ms},
      {"open_to_first_decision_ms", first_decision_ms},
      {"open_to_first_admitted_ms", first_admitted_ms.load()},
      {"peak_rss_mb", peak_rss_mb},
      {"loaded_live_jobs", stats.pending_jobs() + stats.running_jobs()},
      {"close_ms", close_ms},
  });
  return 0;
}

}  // namespace tessera::bench
