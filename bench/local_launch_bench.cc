// local-launch: the local backend's launch path (plugins/local) under a storm of short tasks.
// J jobs, each running `true`, go through the scheduler to one node of the local backend with
// S slots (cpu_milli = S x 1000, each job asking for 1000), so at most S run at once and each
// ending one makes room for the next, the way a queue of short jobs runs on one machine:
//
//   launches_per_s   J / the time from the first submit until every job has finished
//
// The backend's state directory is --state-dir, and it is kept from run to run (and from one
// invocation to the next): --repeat runs back to back on the same directory show whether the
// rate holds as the files of earlier runs pile up on that filesystem (state_fs names it). The
// scheduler's own store goes to --store-dir (default /dev/shm, not durable), so that the disk
// under test carries only the backend's files. --plugin names another build of the backend (a
// path to its .so), so two builds can be compared on the same directory; --task-logs is given to
// the backend only when set, so a build from before that key still loads.
//
// The backend's poll_interval_ms (--poll-ms, default 1) bounds how soon an exit is seen: with S
// slots the rate cannot pass S per poll interval.
#include <stdlib.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bench_util.h"
#include "benchmarks.h"
#include "tessera/job.h"
#include "tessera/plugin_host.h"
#include "tessera/scheduler.h"

namespace tessera::bench {
namespace {

// Submits kept in flight while the jobs go in.
constexpr int kSubmitWindow = 256;

std::string FilesystemOf(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "unknown";
  switch (static_cast<uint32_t>(fs.f_type)) {
    case 0xEF53:
      return "ext2/3/4";
    case 0x01021994:
      return "tmpfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x794C7630:
      return "overlayfs";
    default:
      return "f_type 0x" + [&] {
        char hex[16];
        std::snprintf(hex, sizeof(hex), "%lx", static_cast<unsigned long>(fs.f_type));
        return std::string(hex);
      }();
  }
}

int64_t FilesUnder(const std::string& dir) {
  int64_t files = 0;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (error) break;
    files += it->is_regular_file(error) ? 1 : 0;
  }
  return files;
}

// One run: a scheduler on the store in `store_dir` (kept across runs, so job ids, and with them
// per-task log names, go on growing as they would), J jobs, and the time until all finished.
StatusOr<Json> RunOnce(const LocalLaunchFlags& flags, const std::string& store_dir, int run) {
  Options options;
  options.log.level = LogLevel::kWarning;  // stderr is for the benchmark's progress.
  options.store.path = store_dir + "/state.db";
  options.store.durable = false;
  options.plugin_dirs = {BuildPluginsDir()};
  PluginOptions plugin;
  plugin.plugin = flags.plugin;
  plugin.config = "node_name = bench-node\nstate_dir = " + flags.state_dir +
                  "\ncpu_milli = " + std::to_string(flags.slots * 1000) +
                  "\nmemory_mib = " + std::to_string(flags.slots * 1024) +
                  "\npoll_interval_ms = " + std::to_string(flags.poll_ms) +
                  // No GPU probe: the node is CPU-only whatever the machine has.
                  "\ncuda_runtime_library = /nonexistent/libcudart.so\n";
  if (!flags.task_logs.empty()) plugin.config += "task_logs = " + flags.task_logs + "\n";
  options.executor_plugin = plugin;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Open(options));

  const v1::JobSpec spec =
      JobSpecBuilder("default").CpuMilli(1000).MemoryMib(16).Command({"true"}).Build();
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  int64_t refused = 0;
  std::string first_error;
  Stopwatch wall;
  for (int i = 0; i < flags.jobs; ++i) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < kSubmitWindow; });
      ++in_flight;
    }
    scheduler->SubmitAsync(spec, {}, [&](StatusOr<v1::Job> job) {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      if (!job.ok() && refused++ == 0) first_error = job.status().ToString();
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return in_flight == 0; });
  }
  if (refused > 0) return InternalError("a submit failed: " + first_error);
  // Every job ends SUCCEEDED or FAILED; a missing one is waited for up to a generous deadline.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (scheduler->GetStats().finished_jobs() < flags.jobs) {
    if (std::chrono::steady_clock::now() > give_up) {
      return InternalError("jobs still unfinished after 300 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const double wall_s = wall.Seconds();

  int64_t failed = 0;
  v1::ListJobsRequest list;
  list.add_states(v1::FAILED);
  list.set_page_size(1000);
  do {
    TESSERA_ASSIGN_OR_RETURN(v1::ListJobsResponse page, scheduler->ListJobs(list));
    failed += page.jobs_size();
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
  scheduler.reset();

  const double rate = flags.jobs / wall_s;
  Progress("local-launch run " + std::to_string(run) + ": " + std::to_string(flags.jobs) +
           " jobs in " + std::to_string(wall_s) + " s, " + std::to_string(rate) + " launches/s");
  return Json{
      {"benchmark", "local-launch"},
      {"plugin", flags.plugin},
      {"state_dir", flags.state_dir},
      {"state_fs", FilesystemOf(flags.state_dir)},
      {"task_logs", flags.task_logs.empty() ? "(default)" : flags.task_logs},
      {"jobs", flags.jobs},
      {"slots", flags.slots},
      {"poll_ms", flags.poll_ms},
      {"launches_per_s", rate},
      {"wall_s", wall_s},
      {"failed", failed},
      {"state_files", FilesUnder(flags.state_dir)},  // after the run: what is left behind.
  };
}

}  // namespace

int RunLocalLaunch(const LocalLaunchFlags& flags) {
  std::error_code error;
  std::filesystem::create_directories(flags.state_dir, error);
  if (error) {
    std::cerr << "local-launch: --state-dir " << flags.state_dir << ": " << error.message() << '\n';
    return 1;
  }
  std::string store_dir = flags.store_dir + "/tessera-bench-local-XXXXXX";
  if (::mkdtemp(store_dir.data()) == nullptr) {
    std::cerr << "local-launch: --store-dir: cannot create a directory in " << flags.store_dir
              << '\n';
    return 1;
  }
  struct RemoveAfter {
    std::string path;
    ~RemoveAfter() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } remove_store{store_dir};
  std::vector<Json> runs;
  for (int run = 1; run <= flags.common.repeat; ++run) {
    StatusOr<Json> result = RunOnce(flags, store_dir, run);
    if (!result.ok()) {
      std::cerr << "local-launch: " << result.status() << '\n';
      return 1;
    }
    runs.push_back(*result);
  }
  const Json summary = Summarize(runs, "launches_per_s");
  EmitJsonLine(summary);
  PrintTable(summary, {"state_fs", "task_logs", "jobs", "slots", "launches_per_s", "wall_s",
                       "failed", "state_files"});
  return summary.value("failed", 0) > 0 ? 1 : 0;
}

}  // namespace tessera::bench
