#include "scenario/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "tessera/clock.h"
#include "tessera/scheduler.h"

namespace tessera::scenario {
namespace {

// A store directory of its own, removed at the end.
class StoreDir {
 public:
  StoreDir() {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("tessera-scenario-" + std::to_string(random()) + std::to_string(random()));
    std::filesystem::create_directories(path_);
  }
  ~StoreDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

int64_t WallUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Wakeups checked between two steps (and while settling); past it the runner moves on, as a
// scheduler that keeps waking up without doing anything is not what these invariants judge.
constexpr int kMaxWakeupsPerStep = 500;

class Play {
 public:
  Play(const Scenario& scenario, const RunOptions& run)
      : scenario_(scenario), checker_(scenario, run.skipped_invariants), trace_(run.trace) {
    options_.store.path = dir_.File("tessera.db");
    options_.store.durable = false;
    options_.default_queue = "";
    options_.simulated_cluster = scenario.cluster;
    options_.preemption.min_runtime = std::chrono::seconds(scenario.min_runtime_s);
    options_.preemption.cooldown = std::chrono::seconds(scenario.cooldown_s);
    if (run.clocking == Clocking::kVirtual) {
      clock_ = std::make_shared<ManualClock>();
      options_.clock = clock_;
    }
  }

  RunResult Run() {
    if (!Open()) return result_;
    for (const v1::QueueSpec& q : scenario_.queues) {
      if (Status st = scheduler_->CreateQueue(q); !st.ok()) {
        Fail("scenario_setup", "CreateQueue " + q.name() + ": " + st.ToString());
        return result_;
      }
    }
    start_us_ = Now();
    for (size_t i = 0; i < scenario_.steps.size(); ++i) {
      step_ = static_cast<int>(i);
      const Step& step = scenario_.steps[i];
      if (!AdvanceTo(start_us_ + step.at_ms * 1000)) return result_;
      if (!Apply(step) || !Check()) return result_;
    }
    step_ = static_cast<int>(scenario_.steps.size());
    if (!Settle()) return result_;
    return result_;
  }

 private:
  int64_t Now() const { return clock_ ? clock_->NowUs() : WallUs(); }

  bool Open() {
    auto opened = Scheduler::Open(options_);
    if (!opened.ok()) {
      Fail("scheduler_opens", opened.status().ToString());
      return false;
    }
    scheduler_ = std::move(*opened);
    return true;
  }

  bool Fail(const std::string& invariant, const std::string& detail) {
    return Fail(Violation{invariant, detail});
  }
  bool Fail(Violation v) {
    result_.ok = false;
    result_.violation = std::move(v);
    result_.step = step_;
    result_.at_ms = (Now() - start_us_) / 1000;
    return false;
  }

  bool Check() {
    scheduler_->WaitIdle();
    ++result_.checks;
    Snapshot snapshot;
    if (auto v = checker_.Read(*scheduler_, snapshot)) return Fail(*v);
    if (trace_) Trace(snapshot);
    if (auto v = checker_.CheckStep(snapshot, Now())) return Fail(*v);
    return true;
  }

  void Trace(const Snapshot& snapshot) const {
    for (const v1::Event& e : snapshot.new_events) {
      std::cout << "t=" << (e.time_us() - start_us_) / 1000 << " ms (" << e.time_us() << ") #"
                << e.seq() << " " << v1::EventKind_Name(e.kind()) << " job " << e.job_id() << " "
                << v1::JobState_Name(e.from_state()) << " -> " << v1::JobState_Name(e.to_state())
                << " " << e.node() << ": " << e.reason() << "\n";
    }
  }

  // Moves time to `target_us`, stopping and checking at each moment the scheduler has work.
  bool AdvanceTo(int64_t target_us) {
    if (!clock_) {
      while (WallUs() < target_us) {
        std::this_thread::sleep_for(
            std::chrono::microseconds(std::min<int64_t>(target_us - WallUs(), 200'000)));
        if (!Check()) return false;
      }
      return true;
    }
    for (int i = 0; i < kMaxWakeupsPerStep; ++i) {
      scheduler_->WaitIdle();
      const std::optional<TimestampUs> wakeup = scheduler_->NextWakeupUs();
      if (!wakeup || *wakeup > target_us) break;
      clock_->AdvanceToUs(std::max(*wakeup, clock_->NowUs() + 1));
      if (!Check()) return false;
    }
    if (clock_->NowUs() < target_us) clock_->AdvanceToUs(target_us);
    scheduler_->WaitIdle();
    return true;
  }

  bool Apply(const Step& step) {
    switch (step.kind) {
      case StepKind::kSubmit: {
        auto job = scheduler_->Submit(step.job);
        if (job.ok()) {
          checker_.Acknowledged(job->id());
          ids_[step.job.name()] = job->id();
          ++result_.submitted;
        } else {
          ++result_.rejected;
          rejections_ << step.job.name() << ": " << job.status().ToString() << "\n";
        }
        return true;
      }
      case StepKind::kCancel: {
        auto it = ids_.find(step.target);
        if (it == ids_.end()) return true;  // its submit was shrunk away or refused.
        auto cancelled = scheduler_->Cancel(it->second);
        if (!cancelled.ok() && cancelled.status().code() == StatusCode::kNotFound) {
          return Fail("acknowledged_jobs_exist_once", "Cancel of acknowledged job " +
                                                          std::to_string(it->second) + ": " +
                                                          cancelled.status().ToString());
        }
        return true;
      }
      case StepKind::kFailGpu: {
        v1::GpuTelemetry reading;
        reading.set_node(step.node);
        reading.set_gpu(step.gpu);
        reading.add_xid_errors(79);
        // A GPU the node does not have is refused; that is not what the scenario tests.
        (void)scheduler_->ReportTelemetry(reading);
        return true;
      }
      case StepKind::kRecover:
        (void)scheduler_->CordonNode(step.node, false);
        return true;
      case StepKind::kDrain:
        (void)scheduler_->DrainNode(step.node);
        return true;
      case StepKind::kRestart:
        scheduler_->WaitIdle();
        scheduler_.reset();
        checker_.Restarted();
        return Open();
    }
    return true;
  }

  // No more arrivals: every node comes back, and the cluster runs until nothing is left to do
  // (or two hours of virtual time, thirty seconds of real time, pass).
  bool Settle() {
    for (const v1::SimulatedNodeGroup& g : scenario_.cluster.groups()) {
      for (int n = 0; n < g.count(); ++n) {
        (void)scheduler_->CordonNode(g.name_prefix() + "-" + std::to_string(n), false);
      }
    }
    if (!Check()) return false;
    const int64_t deadline =
        Now() + (clock_ ? int64_t{2} * 3600 * 1'000'000 : int64_t{30} * 1'000'000);
    for (int i = 0; i < kMaxWakeupsPerStep && Now() < deadline && !AllEnded(); ++i) {
      if (clock_) {
        scheduler_->WaitIdle();
        const std::optional<TimestampUs> wakeup = scheduler_->NextWakeupUs();
        if (!wakeup) break;
        clock_->AdvanceToUs(std::max(*wakeup, clock_->NowUs() + 1));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!Check()) return false;
    }
    scheduler_->WaitIdle();
    Snapshot snapshot;
    if (auto v = checker_.Read(*scheduler_, snapshot)) return Fail(*v);
    if (auto v = checker_.CheckStep(snapshot, Now())) return Fail(*v);
    if (auto v = checker_.CheckFinished(snapshot)) return Fail(*v);
    return true;
  }

  bool AllEnded() {
    v1::ListJobsRequest request;
    for (v1::JobState s :
         {v1::PENDING, v1::ADMITTED, v1::STARTING, v1::RUNNING, v1::PREEMPTING, v1::LOST}) {
      request.add_states(s);
    }
    request.set_page_size(1000);
    auto page = scheduler_->ListJobs(request);
    if (!page.ok()) return false;
    for (const v1::Job& j : page->jobs()) {
      if (!(j.status().state() == v1::PENDING && j.status().infeasible())) return false;
    }
    return true;
  }

  const Scenario& scenario_;
  StoreDir dir_;
  Options options_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Scheduler> scheduler_;
  Checker checker_;
  const bool trace_;
  std::map<std::string, uint64_t> ids_;
  std::ostringstream rejections_;
  RunResult result_;
  int step_ = -1;
  int64_t start_us_ = 0;
};

// The result as lines, for the pipe from a child process.
std::string Encode(const RunResult& r) {
  std::ostringstream out;
  out << r.ok << "\n"
      << r.step << "\n"
      << r.at_ms << "\n"
      << r.submitted << "\n"
      << r.rejected << "\n"
      << r.checks << "\n"
      << r.violation.invariant << "\n"
      << r.violation.detail;
  return out.str();
}

RunResult Decode(const std::string& text) {
  RunResult r;
  std::istringstream in(text);
  in >> r.ok >> r.step >> r.at_ms >> r.submitted >> r.rejected >> r.checks;
  in.ignore();
  std::getline(in, r.violation.invariant);
  std::getline(in, r.violation.detail, '\0');
  return r;
}

std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.size() > bytes) text = text.substr(text.size() - bytes);
  return text;
}

}  // namespace

std::string RunResult::Describe() const {
  if (ok) return "ok";
  std::ostringstream out;
  out << violation.invariant << " after step " << step << " (t=" << at_ms
      << " ms): " << violation.detail;
  return out.str();
}

RunResult RunScenario(const Scenario& scenario, const RunOptions& options) {
  return Play(scenario, options).Run();
}

RunResult RunIsolated(const Scenario& scenario, const RunOptions& options) {
  const std::chrono::seconds timeout = options.timeout;
  int fds[2];
  if (pipe(fds) != 0) return RunScenario(scenario, options);
  const std::string log = std::filesystem::temp_directory_path() /
                          ("tessera-scenario-" + std::to_string(getpid()) + ".log");
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err >= 0) {
      dup2(err, STDERR_FILENO);
      dup2(err, STDOUT_FILENO);
    }
    const std::string encoded = Encode(RunScenario(scenario, options));
    ssize_t written = write(fds[1], encoded.data(), encoded.size());
    (void)written;
    _exit(0);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::string text;
  int status = 0;
  bool exited = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  while (true) {
    ssize_t n;
    while ((n = read(fds[0], buffer, sizeof buffer)) > 0) text.append(buffer, n);
    if (exited) break;
    if (waitpid(child, &status, WNOHANG) == child) {
      exited = true;
      continue;  // read what is left
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      close(fds[0]);
      RunResult r;
      r.ok = false;
      r.violation = {"no_hang", "the scenario did not end within " +
                                    std::to_string(timeout.count()) + " s; log tail:\n" +
                                    Tail(log, 1500)};
      std::filesystem::remove(log);
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  close(fds[0]);
  RunResult r;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !text.empty()) {
    r = Decode(text);
  } else {
    r.ok = false;
    r.violation = {
        "no_check_fires",
        (WIFSIGNALED(status) ? "the scheduler died of signal " + std::to_string(WTERMSIG(status))
                             : "the scheduler exited with " + std::to_string(WEXITSTATUS(status))) +
            "; log tail:\n" + Tail(log, 1500)};
  }
  std::filesystem::remove(log);
  return r;
}

}  // namespace tessera::scenario
