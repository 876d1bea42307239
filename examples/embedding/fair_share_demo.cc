// Embedding Tessera in ten lines, shown live: two teams share a small simulated GPU cluster.
//
// team-a arrives first and takes every GPU; team-b arrives a few seconds later. Nobody is
// preempted, but as team-a's jobs finish, weighted DRF hands the freed GPUs to the team with
// the smaller dominant share, and the two shares converge. The table refreshes twice a second.
//
//   tessera-fair-share-demo [--store PATH] [--quick]
//
// --quick runs the same story four times faster (for tests). The exit code is 0 when the
// shares converged to within 10% of each other, 1 when they did not, 2 on an error.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "tessera/job.h"
#include "tessera/scheduler.h"

namespace {

struct Settings {
  std::string store = "var/fair-share-demo.db";
  double speed = 1.0;  // 4.0 with --quick.
};

int Fail(const std::string& what, const tessera::Status& status) {
  std::cerr << "fair-share-demo: " << what << ": " << status << "\n";
  return 2;
}

std::string Bar(double share, int width) {
  const int filled = static_cast<int>(share * width + 0.5);
  std::string bar;
  for (int i = 0; i < width; ++i) bar += i < filled ? "#" : ".";
  return bar;
}

// Submits `count` one-GPU jobs of random length (2..5 s, scaled) to `queue`.
tessera::Status SubmitBurst(tessera::Scheduler& scheduler, const std::string& queue, int count,
                            double speed, std::mt19937& rng) {
  std::uniform_int_distribution<int> ms(2000, 5000);
  for (int i = 0; i < count; ++i) {
    const tessera::v1::JobSpec spec =
        tessera::JobSpecBuilder(queue)
            .Name(queue + "-job-" + std::to_string(i))
            .Gpus(1)
            .CpuMilli(4000)
            .MemoryMib(16384)
            .SimulatedDurationMs(static_cast<int64_t>(ms(rng) / speed))
            .Build();
    auto job = scheduler.Submit(spec);
    if (!job.ok()) return job.status();
  }
  return tessera::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      settings.speed = 4.0;
    } else if (std::strcmp(argv[i], "--store") == 0 && i + 1 < argc) {
      settings.store = argv[++i];
    } else {
      std::cerr << "usage: tessera-fair-share-demo [--store PATH] [--quick]\n";
      return 2;
    }
  }
  // A fresh store each run, so the story starts from an empty cluster.
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(settings.store + suffix, ignored);
  }
  if (auto dir = std::filesystem::path(settings.store).parent_path(); !dir.empty()) {
    std::filesystem::create_directories(dir, ignored);
  }

  // --- The embedding: open, create queues, submit. -----------------------------------------
  tessera::Options options;
  options.store.path = settings.store;  // the built-in simulated cluster: 24 GPUs.
  auto opened = tessera::Scheduler::Open(options);
  if (!opened.ok()) return Fail("opening the scheduler", opened.status());
  tessera::Scheduler& scheduler = **opened;
  for (const char* team : {"team-a", "team-b"}) {
    tessera::v1::QueueSpec queue;
    queue.set_name(team);
    queue.set_weight(1);
    if (auto status = scheduler.CreateQueue(queue); !status.ok()) {
      return Fail("creating queue", status);
    }
  }
  std::mt19937 rng(7);
  if (auto s = SubmitBurst(scheduler, "team-a", 200, settings.speed, rng); !s.ok()) {
    return Fail("submitting", s);
  }
  // ------------------------------------------------------------------------------------------

  const bool tty = isatty(STDOUT_FILENO);
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() *
           settings.speed;
  };
  bool team_b_arrived = false;
  double share_a = 0, share_b = 0, converged_at = -1;
  const double kDuration = 24.0;  // story seconds.
  while (elapsed() < kDuration) {
    if (!team_b_arrived && elapsed() >= 4.0) {
      if (auto s = SubmitBurst(scheduler, "team-b", 200, settings.speed, rng); !s.ok()) {
        return Fail("submitting", s);
      }
      team_b_arrived = true;
    }
    auto a = scheduler.GetQueue("team-a");
    auto b = scheduler.GetQueue("team-b");
    if (!a.ok() || !b.ok()) return Fail("reading queues", a.ok() ? b.status() : a.status());
    share_a = a->status().dominant_share();
    share_b = b->status().dominant_share();
    if (team_b_arrived && converged_at < 0 && share_b > 0 &&
        std::abs(share_a - share_b) <= 0.1 * std::max(share_a, share_b)) {
      converged_at = elapsed();
    }
    const tessera::v1::SchedulerStats stats = scheduler.GetStats();
    if (tty) std::cout << "\033[H\033[2J";
    std::printf("Tessera fair-share demo  t=%5.1fs  (24 simulated GPUs, weighted DRF)\n",
                elapsed());
    std::printf("  %-7s %7s %7s %5s  %-6s %s\n", "queue", "running", "pending", "GPUs", "share",
                "");
    for (const auto* q : {&*a, &*b}) {
      std::printf("  %-7s %7lld %7lld %5lld  %5.2f  %s\n", q->spec().name().c_str(),
                  static_cast<long long>(q->status().running_jobs()),
                  static_cast<long long>(q->status().pending_jobs()),
                  static_cast<long long>(q->status().allocated().gpu_milli() / 1000),
                  q->status().dominant_share(), Bar(q->status().dominant_share(), 30).c_str());
    }
    std::printf("  decisions %lld, p99 decision %.1f us, commits %lld%s\n",
                static_cast<long long>(stats.decisions()), stats.decision_latency().p99_us(),
                static_cast<long long>(stats.commits()),
                team_b_arrived ? "" : "   (team-b arrives at t=4s)");
    if (!tty) std::printf("\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(500 / settings.speed)));
  }
  if (converged_at < 0) {
    std::printf("Shares did not converge: team-a %.2f, team-b %.2f\n", share_a, share_b);
    return 1;
  }
  std::printf("Shares converged at t=%.1fs: team-a %.2f, team-b %.2f. State is in %s.\n",
              converged_at, share_a, share_b, settings.store.c_str());
  return 0;
}
