// The plugin conformance kit: runs a built plugin through the rules of the ABI (abi.h) and
// reports one result per check. The tessera-plugin-conformance tool is a thin front end; a
// plugin's own test suite may call RunConformance directly.
//
// Each check runs in a child process of its own (fork, then FakeHost::Open), so a plugin that
// crashes, aborts or hangs fails that check and the kit carries on. A call that does not return
// within the deadline fails its check as the scheduler would abandon it; the call_latency check
// reports the slowest call of each kind over all checks. After each check the child's process
// group is killed, so tasks a plugin leaks in that group do not outlive the check.
//
// Checks build on each other: launch_is_idempotent needs a launch that works, and so on. A check
// whose prerequisite failed (or was itself not run) is not run, and reports so, naming the
// failed check, so that one root cause is one failure. A failure names the call, the tessera.v1
// message and the field that was wrong, and the status by name.
//
// Thread safety: RunConformance forks. Call it from a process that has no other threads
// running (the tool does), or the children may inherit locks held by those threads.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/plugin/abi.h"
#include "tessera/plugin/abi_calls.h"
#include "tessera/plugin/conformance_abi_1_1_checks.h"
#include "tessera/plugin/conformance_checks.h"
#include "tessera/plugin/conformance_context.h"
#include "tessera/plugin/fake_host.h"
#include "tessera/plugin/plugin.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::plugin {
namespace conformance_detail {

// In order; a check comes after those it needs.
inline std::vector<Check> Checks() {
  return {
      {"handshake", &CheckHandshake, {}},
      {"undeclared_kinds_null", &CheckUndeclaredKindsNull, {"handshake"}},
      {"init", &CheckInit, {"handshake"}},
      {"init_rejects_garbage_config", &CheckInitRejectsGarbageConfig, {"handshake"}},
      {"shutdown_after_init", &CheckShutdownAfterInit, {"init"}},
      {"reinit_after_shutdown", &CheckReinitAfterShutdown, {"init"}},
      {"inventory", &CheckInventory, {"init"}},
      {"launch_then_reconcile", &CheckLaunchThenReconcile, {"inventory"}},
      {"launch_is_idempotent", &CheckLaunchIsIdempotent, {"launch_then_reconcile"}},
      {"stop_reports_exit", &CheckStopReportsExit, {"launch_then_reconcile"}},
      {"reconcile_forgets_exited", &CheckReconcileForgetsExited, {"stop_reports_exit"}},
      {"stop_unknown_task", &CheckStopUnknownTask, {"init"}},
      {"malformed_launch", &CheckMalformedLaunch, {"init"}},
      {"malformed_stop", &CheckMalformedStop, {"init"}},
      {"malformed_other_requests", &CheckMalformedOtherRequests, {"init"}},
      {"concurrent_poll_and_telemetry",
       &CheckConcurrentPollAndTelemetry,
       {"launch_then_reconcile"}},
      // ABI 1.1 (conformance_abi_1_1_checks.h).
      {"start_after_init", &CheckStartAfterInit, {"init"}},
      {"launch_with_abi_1_1_fields", &CheckLaunchWithAbi11Fields, {"launch_then_reconcile"}},
      {"partition_layout_result", &CheckPartitionLayoutResult, {"init"}},
      {"node_groups", &CheckNodeGroups, {"init"}},
      {"provision_ends_with_event", &CheckProvisionEndsWithEvent, {"node_groups"}},
  };
}

// The child's side: runs one check and writes its report to `fd`, one line per record:
//   B <id> <call>          a call started
//   E <id> <call> <us>     it returned after <us> microseconds
//   R <PASS|FAIL|SKIP> <detail>
//   END
inline void WriteLine(int fd, const std::string& line) {
  std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Makes the FakeHost a check drives: FakeHost::Open of a path, or FakeHost::Linked.
using OpenPlugin = std::function<PluginStatus(std::unique_ptr<FakeHost>*)>;

inline void RunChild(const Check& check, const OpenPlugin& open, const std::string& config,
                     const ConformanceOptions& options, uint64_t job_base, int fd) {
  std::string verdict;
  {
    Context context{config, options, nullptr, job_base};
    PluginStatus opened = open(&context.host);
    if (!opened.ok()) {
      verdict = "FAIL " + opened.message;
    } else {
      context.host->SetCallObserver(
          [fd](std::string_view call, uint64_t id, bool done, int64_t us) {
            WriteLine(fd, std::string(done ? "E " : "B ") + std::to_string(id) + " " +
                              std::string(call) + (done ? " " + std::to_string(us) : ""));
          });
      try {
        verdict = "PASS " + check.body(context);
      } catch (const Failure& failure) {
        verdict = "FAIL " + failure.why;
      } catch (const Skip& skip) {
        verdict = "SKIP " + skip.why;
      } catch (const std::exception& e) {
        verdict = std::string("FAIL exception in the kit: ") + e.what();
      }
      context.host->Shutdown();
    }
  }  // Unloads the library: a crash there fails the check too.
  WriteLine(fd, "R " + OneLine(verdict));
  WriteLine(fd, "END");
}

// The parent's side of one check: what came back.
struct ChildReport {
  CheckResult result;
  std::map<std::string, FakeHost::CallStats> stats;
};

inline std::string SignalName(int signal) {
  const char* name = strsignal(signal);
  return std::to_string(signal) + (name ? std::string(" (") + name + ")" : "");
}

inline ChildReport RunInChild(const Check& check, const OpenPlugin& open, const std::string& config,
                              const ConformanceOptions& options, uint64_t job_base) {
  ChildReport report;
  report.result.name = check.name;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    report.result.detail = std::string("pipe: ") + std::strerror(errno);
    return report;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    report.result.detail = std::string("fork: ") + std::strerror(errno);
    return report;
  }
  if (pid == 0) {
    setpgid(0, 0);
    close(fds[0]);
    RunChild(check, open, config, options, job_base, fds[1]);
    _exit(0);
  }
  setpgid(pid, pid);
  close(fds[1]);

  const auto started = SteadyClock::now();
  std::map<uint64_t, std::pair<std::string, SteadyClock::time_point>> in_flight;
  std::string buffer;
  std::string verdict;
  std::string killed_for;
  bool ended = false;
  bool eof = false;
  while (!ended && !eof) {
    const auto now = SteadyClock::now();
    for (const auto& [id, call] : in_flight) {
      if (now - call.second >= options.deadline) {
        killed_for = call.first + " did not return within the " +
                     std::to_string(options.deadline.count()) + " ms deadline";
        FakeHost::CallStats& stats = report.stats[call.first];
        ++stats.count;
        stats.max_us = std::max<int64_t>(
            stats.max_us,
            std::chrono::duration_cast<std::chrono::microseconds>(now - call.second).count());
        break;
      }
    }
    if (killed_for.empty() && now - started >= options.check_timeout) {
      killed_for =
          "the check took longer than " + std::to_string(options.check_timeout.count()) + " ms";
    }
    if (!killed_for.empty()) break;
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, 50);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
      break;
    }
    buffer.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer.find('\n')) != std::string::npos) {
      const std::string line = buffer.substr(0, newline);
      buffer.erase(0, newline + 1);
      std::istringstream in(line);
      std::string tag;
      in >> tag;
      if (tag == "B" || tag == "E") {
        uint64_t id = 0;
        std::string call;
        in >> id >> call;
        if (tag == "B") {
          in_flight[id] = {call, SteadyClock::now()};
        } else {
          int64_t us = 0;
          in >> us;
          in_flight.erase(id);
          FakeHost::CallStats& stats = report.stats[call];
          ++stats.count;
          stats.total_us += us;
          stats.max_us = std::max(stats.max_us, us);
        }
      } else if (tag == "R") {
        verdict = line.size() > 2 ? line.substr(2) : "";
      } else if (tag == "END") {
        ended = true;
      }
    }
  }
  close(fds[0]);
  if (!killed_for.empty()) kill(-pid, SIGKILL);
  // Wait for the child without reaping it, so its process group cannot be reused yet; kill
  // whatever the plugin left running in that group; then reap.
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }

  if (!killed_for.empty()) {
    report.result.detail = killed_for + " (killed)";
  } else if (WIFSIGNALED(wstatus)) {
    report.result.detail = "the plugin crashed: signal " + SignalName(WTERMSIG(wstatus));
    if (!in_flight.empty()) report.result.detail += " during " + in_flight.begin()->second.first;
  } else if (!ended || verdict.size() < 4) {
    report.result.detail = "the check ended without a result (exit status " +
                           std::to_string(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1) + ")";
  } else {
    const std::string outcome = verdict.substr(0, 4);
    report.result.detail = verdict.size() > 5 ? verdict.substr(5) : "";
    report.result.passed = outcome == "PASS" || outcome == "SKIP";
    report.result.skipped = outcome == "SKIP";
  }
  return report;
}

inline CheckResult LatencyResult(const std::map<std::string, FakeHost::CallStats>& stats,
                                 milliseconds deadline) {
  CheckResult result{"call_latency", true, false, "", ""};
  std::string slow;
  std::string all;
  char text[64];
  for (const auto& [call, s] : stats) {
    std::snprintf(text, sizeof(text), "%s %.1f ms", call.c_str(), s.max_us / 1000.0);
    all += (all.empty() ? "" : ", ") + std::string(text);
    if (s.max_us > std::chrono::duration_cast<std::chrono::microseconds>(deadline).count()) {
      slow += (slow.empty() ? "" : ", ") + std::string(text);
    }
  }
  result.passed = slow.empty();
  result.detail = (slow.empty() ? "slowest of each call: " + all
                                : "over the " + std::to_string(deadline.count()) +
                                      " ms deadline: " + slow + "; slowest of each call: " + all);
  return result;
}

// Every check, each with a FakeHost from `open`, in order; RunConformance below.
inline std::vector<CheckResult> RunAll(const OpenPlugin& open, const std::string& config,
                                       const ConformanceOptions& options) {
  std::vector<CheckResult> results;
  std::map<std::string, FakeHost::CallStats> stats;
  const uint64_t run_base =
      (static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) %
       1'000'000'000ULL) *
      1000ULL;
  uint64_t job = run_base;
  // For each check that did not pass: the check whose failure is the cause (itself, or the
  // failed check that blocked it).
  std::map<std::string, std::string> failed_because;
  for (const Check& check : Checks()) {
    std::string blocked_by;
    std::string detail;
    for (const std::string need : check.needs) {
      if (auto it = failed_because.find(need); it != failed_because.end()) {
        blocked_by = it->second;
        detail = "not run: it needs " + need +
                 (need == blocked_by ? ", which failed"
                                     : ", which was not run because " + blocked_by + " failed");
        break;
      }
    }
    if (!blocked_by.empty()) {
      failed_because[check.name] = blocked_by;
      results.push_back({check.name, false, true, detail, blocked_by});
      continue;
    }
    ChildReport report = RunInChild(check, open, config, options, ++job);
    if (!report.result.passed) failed_because[check.name] = check.name;
    results.push_back(std::move(report.result));
    for (const auto& [call, s] : report.stats) {
      FakeHost::CallStats& total = stats[call];
      total.count += s.count;
      total.total_us += s.total_us;
      total.max_us = std::max(total.max_us, s.max_us);
    }
  }
  results.push_back(LatencyResult(stats, options.deadline));
  return results;
}

}  // namespace conformance_detail

// Runs every check against the plugin at `plugin_path`, passing `config` to on_init, and returns
// one result per check, in order, the last being call_latency (the slowest call of each kind
// against options.deadline). A check whose prerequisite failed is not run: its result has
// skipped set, passed false and blocked_by naming the failed check (FailedItself tells the two
// kinds of failure apart). Never throws for a plugin's misbehaviour; that is a failed check.
inline std::vector<CheckResult> RunConformance(const std::string& plugin_path,
                                               const std::string& config,
                                               const ConformanceOptions& options = {}) {
  return conformance_detail::RunAll(
      [&](std::unique_ptr<FakeHost>* out) { return FakeHost::Open(plugin_path, out); }, config,
      options);
}

// The same for a linked plugin (linked.h), made and called as the scheduler does. Each
// check's child process calls plugin->make afresh, so what the plugin changes in this process's
// memory (not in files or processes) does not carry from one check to the next.
inline std::vector<CheckResult> RunConformance(std::shared_ptr<const LinkedPlugin> plugin,
                                               const std::string& config,
                                               const ConformanceOptions& options = {}) {
  return conformance_detail::RunAll(
      [&](std::unique_ptr<FakeHost>* out) { return FakeHost::Linked(plugin, out); }, config,
      options);
}

}  // namespace tessera::plugin
