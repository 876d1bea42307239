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
#include "tessera/plugin/fake_host.h"
#include "tessera/plugin/plugin.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::plugin {

struct ConformanceOptions {
  // The node to launch test tasks on; empty = the first node of the inventory.
  std::string executor_node;
  // The longest one call may take; the scheduler's default. A call still running at the
  // deadline fails its check, and the child is killed.
  std::chrono::milliseconds deadline{5000};
  // How long (wall time) to wait for a task's exit event after a stop.
  std::chrono::milliseconds event_timeout{10000};
  // The longest one whole check may take.
  std::chrono::milliseconds check_timeout{60000};
  // Launch/stop pairs made while other threads poll events and telemetry: at least this many,
  // and more for up to 200 ms (at most 25 times as many).
  int concurrency_rounds = 20;
  // LaunchTask.command of the test tasks: it must run until stopped (a minute is plenty) on the
  // backend's nodes. A backend that runs commands in a container image, say, needs one the image
  // has. Backends that ignore commands (the sim) ignore it.
  std::vector<std::string> task_command = {"sleep", "300"};
};

struct CheckResult {
  std::string name;
  bool passed = false;
  // Not run: it does not apply to this plugin (passed is true, blocked_by empty), or a check it
  // needs failed (passed is false, blocked_by names the check that failed).
  bool skipped = false;
  std::string detail;
  std::string blocked_by;
};

// Whether `result` is a failure of its own: failed, and not merely blocked by another failure.
inline bool FailedItself(const CheckResult& result) {
  return !result.passed && result.blocked_by.empty();
}

namespace conformance_detail {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// A check failed: thrown inside a child, never across the ABI or out of RunConformance.
struct Failure {
  std::string why;
};
struct Skip {
  std::string why;
};

inline void Expect(bool condition, const std::string& why) {
  if (!condition) throw Failure{why};
}
// `what` names the call and its request, e.g. "on_stop(StopTask for TaskRef{...})".
inline void ExpectOk(const PluginStatus& status, const std::string& what) {
  if (!status.ok()) {
    throw Failure{what + " returned " + StatusName(status.code) +
                  (status.message.empty() ? "" : ": " + status.message)};
  }
}
inline void ExpectCode(const PluginStatus& status, tessera_status code, const std::string& what) {
  if (status.code != code) {
    throw Failure{what + ": expected " + StatusName(code) + ", got " + StatusName(status.code) +
                  (status.message.empty() ? "" : ": " + status.message)};
  }
}

// The length of the valid UTF-8 sequence at text[i], or 0.
inline size_t Utf8Length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = lead < 0x80                    ? 1
                  : lead >= 0xc2 && lead <= 0xdf ? 2
                  : lead >= 0xe0 && lead <= 0xef ? 3
                  : lead >= 0xf0 && lead <= 0xf4 ? 4
                                                 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  return length;
}

// One printable line: control bytes and invalid UTF-8 (a plugin may echo garbage back) are
// escaped as \xNN.
inline std::string OneLine(const std::string& text) {
  std::string line;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t length = Utf8Length(text, i);
    if (c == '\n' || c == '\r' || c == '\t') {
      line += ' ';
    } else if (length == 0 || c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      line += escaped;
    } else {
      line.append(text, i, length);
      i += length;
      continue;
    }
    ++i;
  }
  return line;
}

// What a check's body gets.
struct Context {
  std::string path;
  std::string config;
  ConformanceOptions options;
  std::unique_ptr<FakeHost> host;
  uint64_t job_base = 0;  // job numbers for test tasks, distinct per check and per run.

  void Init() { ExpectOk(host->Init(config), "on_init with the given config"); }
  void RequireExecutor() {
    if (!host->Declares(TESSERA_PLUGIN_KIND_EXECUTOR)) throw Skip{"not an executor"};
  }

  v1::TaskRef Ref(int task) const {
    v1::TaskRef ref;
    ref.set_job(job_base);
    ref.set_attempt(1);
    ref.set_task(task);
    return ref;
  }
  static std::string Describe(const v1::TaskRef& ref) {
    return "TaskRef{job " + std::to_string(ref.job()) + ", attempt " +
           std::to_string(ref.attempt()) + ", task " + std::to_string(ref.task()) + "}";
  }
  static std::string LaunchOf(const v1::TaskRef& ref, const std::string& node) {
    return "on_launch(LaunchTask for " + Describe(ref) + " on node '" + node + "')";
  }
  static std::string StopOf(const v1::TaskRef& ref) {
    return "on_stop(StopTask for " + Describe(ref) + ")";
  }

  // The node to launch on: --executor-node, or the inventory's first.
  std::string Node() {
    if (!options.executor_node.empty()) return options.executor_node;
    v1::Inventory inventory;
    ExpectOk(host->Inventory(&inventory), "on_inventory");
    Expect(inventory.nodes_size() > 0,
           "Inventory.nodes from on_inventory is empty: no node to launch a test task on");
    return inventory.nodes(0).name();
  }

  // A small CPU-only task that runs until stopped.
  v1::LaunchTask Task(const v1::TaskRef& ref, const std::string& node) const {
    v1::LaunchTask launch;
    *launch.mutable_ref() = ref;
    launch.set_node(node);
    launch.set_cpu_milli(100);
    launch.set_memory_mib(64);
    for (const std::string& arg : options.task_command) launch.add_command(arg);
    (*launch.mutable_env())["TESSERA_CONFORMANCE"] = "1";
    launch.set_job_name("tessera-conformance");
    launch.mutable_simulation()->set_duration_ms(0);  // until cancelled.
    return launch;
  }
  v1::StopTask Stop(const v1::TaskRef& ref) const {
    v1::StopTask stop;
    *stop.mutable_ref() = ref;
    stop.set_grace_ms(1000);
    return stop;
  }

  int CountLive(const v1::TaskRef& ref) {
    v1::LiveTasks live;
    ExpectOk(host->Reconcile(&live), "on_reconcile");
    int count = 0;
    for (const v1::TaskRef& t : live.tasks()) count += FakeHost::SameTask(t, ref) ? 1 : 0;
    return count;
  }

  // Polls, moves the virtual clock (to the plugin's next event, or one second on), and waits,
  // until an event of `kind` for `ref` arrives or event_timeout of wall time passes.
  bool AwaitEvent(v1::BackendEvent::Kind kind, const v1::TaskRef& ref) {
    const auto give_up = SteadyClock::now() + options.event_timeout;
    while (true) {
      v1::BackendEvents polled;
      ExpectOk(host->PollEvents(&polled), "on_poll_events");
      if (host->WaitForEvent(kind, ref, milliseconds(0))) return true;
      if (SteadyClock::now() >= give_up) return false;
      if (polled.next_event_us() > host->NowUs()) {
        host->SetNowUs(polled.next_event_us());
      } else {
        host->AdvanceUs(1'000'000);
      }
      if (host->WaitForEvent(kind, ref, milliseconds(50))) return true;
    }
  }
};

// A check: throws Failure or Skip, or returns the detail of a pass. It runs only when every
// check in `needs` passed or did not apply.
struct Check {
  const char* name;
  std::string (*body)(Context&);
  std::vector<const char*> needs;
};

inline std::string KindsText(uint32_t kinds) {
  std::string text;
  auto add = [&](uint32_t bit, const char* name) {
    if (kinds & bit) text += (text.empty() ? "" : "+") + std::string(name);
  };
  add(TESSERA_PLUGIN_KIND_EXECUTOR, "executor");
  add(TESSERA_PLUGIN_KIND_PARTITIONER, "partitioner");
  add(TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER, "capacity_provider");
  return text.empty() ? "none" : text;
}

// Every function of each kind, and whether a plugin of that kind must provide it.
struct KindFunction {
  uint32_t kind;
  const char* name;
  bool required;
  bool (*present)(const tessera_plugin_descriptor&);
};
inline const std::vector<KindFunction>& KindFunctions() {
  using D = tessera_plugin_descriptor;
  static const std::vector<KindFunction> functions = {
  // One per call of abi_calls.h.
#define TESSERA_CONFORMANCE_KIND_FUNCTION(name, Method, opcode, kind, need, ...) \
  {TESSERA_PLUGIN_KIND_##kind, "on_" #name, TESSERA_PLUGIN_CALL_##need != 0,     \
   [](const D& d) { return d.tessera_plugin_on_##name != nullptr; }},
      TESSERA_PLUGIN_CALLS(TESSERA_CONFORMANCE_KIND_FUNCTION, TESSERA_CONFORMANCE_KIND_FUNCTION,
                           TESSERA_CONFORMANCE_KIND_FUNCTION)
#undef TESSERA_CONFORMANCE_KIND_FUNCTION
  };
  return functions;
}

// Bytes no config format accepts: a protobuf tag of field 0, a NUL, invalid UTF-8, unbalanced
// brackets.
inline std::string GarbageConfig() {
  return std::string("\x00\xff\xfe\x07{[\"tessera-conformance: not a config:\n\t- ]]", 43);
}
// A length-delimited field 1 whose length runs past the end: no protobuf message parses it.
inline std::string MalformedRequest() { return std::string("\x0a\x7f\x01\x02", 4); }

// The checks. Each passes when its name says (docs/plugins.md has the table), throws Failure
// with the reason, or Skip when it does not apply.

inline std::string CheckHandshake(Context& c) {
  const tessera_plugin_descriptor& d = c.host->descriptor();
  const uint32_t known = TESSERA_PLUGIN_KIND_EXECUTOR | TESSERA_PLUGIN_KIND_PARTITIONER |
                         TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER;
  Expect(d.kinds != 0, "tessera_plugin_descriptor.kinds is 0: the plugin declares no kind");
  Expect((d.kinds & ~known) == 0 || d.abi_minor > TESSERA_PLUGIN_ABI_MINOR,
         "tessera_plugin_descriptor.kinds has unknown bits " + std::to_string(d.kinds & ~known) +
             " at ABI minor " + std::to_string(d.abi_minor));
  for (const KindFunction& f : KindFunctions()) {
    Expect(!(d.kinds & f.kind) || !f.required || f.present(d),
           "tessera_plugin_descriptor.tessera_plugin_" + std::string(f.name) +
               " is NULL but the plugin declares " + KindsText(f.kind));
  }
  return c.host->name() + " " + c.host->version() + ", ABI " + std::to_string(d.abi_major) + "." +
         std::to_string(d.abi_minor) + ", struct_size " + std::to_string(d.struct_size) + ", " +
         KindsText(d.kinds);
}

inline std::string CheckUndeclaredKindsNull(Context& c) {
  const tessera_plugin_descriptor& d = c.host->descriptor();
  int checked = 0;
  for (const KindFunction& f : KindFunctions()) {
    if (d.kinds & f.kind) continue;
    ++checked;
    Expect(!f.present(d), "tessera_plugin_descriptor.tessera_plugin_" + std::string(f.name) +
                              " is set but the plugin does not declare " + KindsText(f.kind));
  }
  return std::to_string(checked) + " functions of undeclared kinds are NULL";
}

inline std::string CheckInit(Context& c) {
  c.Init();
  return std::string("init with the given config succeeds");
}

inline std::string CheckInitRejectsGarbageConfig(Context& c) {
  PluginStatus status = c.host->Init(GarbageConfig());
  ExpectCode(status, TESSERA_INVALID_ARGUMENT, "on_init with config bytes no format accepts");
  Expect(!status.message.empty(),
         "on_init with garbage config returned INVALID_ARGUMENT but wrote no message to its "
         "error sink");
  return "INVALID_ARGUMENT: " + status.message;
}

inline std::string CheckShutdownAfterInit(Context& c) {
  c.Init();
  c.host->Shutdown();
  std::this_thread::sleep_for(milliseconds(200));
  const std::vector<std::string> late = c.host->violations();
  Expect(late.empty(), late.empty() ? "" : late.front());
  return std::string("no callback after on_shutdown returned");
}

inline std::string CheckReinitAfterShutdown(Context& c) {
  c.Init();
  c.host->Shutdown();
  ExpectOk(c.host->Init(c.config), "a second on_init after on_shutdown");
  return std::string("a second instance starts after the first shut down");
}

inline std::string CheckInventory(Context& c) {
  c.RequireExecutor();
  c.Init();
  v1::Inventory inventory;
  ExpectOk(c.host->Inventory(&inventory), "on_inventory");
  std::map<std::string, int> names;
  int gpus = 0;
  for (int i = 0; i < inventory.nodes_size(); ++i) {
    const v1::NodeSpec& node = inventory.nodes(i);
    const std::string field = "Inventory.nodes[" + std::to_string(i) + "].name";
    Expect(!node.name().empty(), field + " is empty");
    const auto [first, added] = names.emplace(node.name(), i);
    Expect(added, field + " '" + node.name() + "' is also Inventory.nodes[" +
                      std::to_string(first->second) + "].name");
    gpus += node.gpus_size();
  }
  if (!c.options.executor_node.empty()) {
    std::string listed;
    for (const auto& [name, index] : names) listed += (listed.empty() ? "" : ", ") + name;
    Expect(names.count(c.options.executor_node) == 1,
           "--executor-node '" + c.options.executor_node +
               "' is not the name of any Inventory.nodes[] (" + listed + ")");
  }
  return std::to_string(inventory.nodes_size()) + " node(s), " + std::to_string(gpus) +
         " GPU(s), names unique";
}

inline std::string CheckLaunchThenReconcile(Context& c) {
  c.RequireExecutor();
  c.Init();
  const std::string node = c.Node();
  const v1::TaskRef ref = c.Ref(0);
  ExpectOk(c.host->Launch(c.Task(ref, node)), c.LaunchOf(ref, node));
  const int live = c.CountLive(ref);
  Expect(live == 1, "LiveTasks.tasks from on_reconcile lists " + c.Describe(ref) + " " +
                        std::to_string(live) + " times after on_launch accepted it; expected once");
  ExpectOk(c.host->Stop(c.Stop(ref)), c.StopOf(ref));
  return c.Describe(ref) + " launched on " + node + " and reconciled";
}

inline std::string CheckLaunchIsIdempotent(Context& c) {
  c.RequireExecutor();
  c.Init();
  const std::string node = c.Node();
  const v1::TaskRef ref = c.Ref(0);
  ExpectOk(c.host->Launch(c.Task(ref, node)), c.LaunchOf(ref, node));
  ExpectOk(c.host->Launch(c.Task(ref, node)), "a second " + c.LaunchOf(ref, node));
  const int live = c.CountLive(ref);
  Expect(live == 1, "LiveTasks.tasks from on_reconcile lists " + c.Describe(ref) + " " +
                        std::to_string(live) + " times after two launches of it; expected once");
  v1::BackendEvents polled;
  ExpectOk(c.host->PollEvents(&polled), "on_poll_events");
  int started = 0;
  for (const v1::BackendEvent& e : c.host->events()) {
    started += e.kind() == v1::BackendEvent::TASK_STARTED && FakeHost::SameTask(e.ref(), ref);
  }
  Expect(started <= 1, std::to_string(started) + " BackendEvents of kind TASK_STARTED for " +
                           c.Describe(ref) + " after two launches of it; expected at most one");
  ExpectOk(c.host->Stop(c.Stop(ref)), c.StopOf(ref));
  return std::string("a second launch of the same ref runs nothing twice");
}

inline std::string CheckStopReportsExit(Context& c) {
  c.RequireExecutor();
  c.Init();
  const std::string node = c.Node();
  const v1::TaskRef ref = c.Ref(0);
  ExpectOk(c.host->Launch(c.Task(ref, node)), c.LaunchOf(ref, node));
  ExpectOk(c.host->Stop(c.Stop(ref)), c.StopOf(ref));
  Expect(c.AwaitEvent(v1::BackendEvent::TASK_EXITED, ref),
         "no BackendEvent of kind TASK_EXITED for " + c.Describe(ref) +
             ", emitted or polled, within " + std::to_string(c.options.event_timeout.count()) +
             " ms after on_stop");
  return std::string("TASK_EXITED arrived after stop");
}

inline std::string CheckReconcileForgetsExited(Context& c) {
  c.RequireExecutor();
  c.Init();
  const std::string node = c.Node();
  const v1::TaskRef ref = c.Ref(0);
  ExpectOk(c.host->Launch(c.Task(ref, node)), c.LaunchOf(ref, node));
  ExpectOk(c.host->Stop(c.Stop(ref)), c.StopOf(ref));
  Expect(c.AwaitEvent(v1::BackendEvent::TASK_EXITED, ref),
         "no BackendEvent of kind TASK_EXITED for " + c.Describe(ref) + " after on_stop");
  Expect(c.CountLive(ref) == 0, "LiveTasks.tasks from on_reconcile still lists " + c.Describe(ref) +
                                    " after its TASK_EXITED");
  return std::string("an exited task is no longer reconciled");
}

inline std::string CheckStopUnknownTask(Context& c) {
  c.RequireExecutor();
  c.Init();
  const v1::TaskRef ref = c.Ref(7);
  ExpectOk(c.host->Stop(c.Stop(ref)), c.StopOf(ref) + ", a task never launched,");
  return std::string("stopping a task that is gone succeeds");
}

inline std::string CheckMalformedLaunch(Context& c) {
  c.RequireExecutor();
  c.Init();
  ExpectCode(c.host->SendRequestBytes(FakeHost::RequestCall::kLaunch, MalformedRequest()),
             TESSERA_INVALID_ARGUMENT, "on_launch with bytes that are not a LaunchTask");
  return std::string("INVALID_ARGUMENT");
}

inline std::string CheckMalformedStop(Context& c) {
  c.RequireExecutor();
  c.Init();
  ExpectCode(c.host->SendRequestBytes(FakeHost::RequestCall::kStop, MalformedRequest()),
             TESSERA_INVALID_ARGUMENT, "on_stop with bytes that are not a StopTask");
  return std::string("INVALID_ARGUMENT");
}

inline std::string CheckMalformedOtherRequests(Context& c) {
  const tessera_plugin_descriptor& d = c.host->descriptor();
  using Call = FakeHost::RequestCall;
  struct Request {
    Call call;
    bool present;
    const char* function;
    const char* message;
  };
  // Every call of abi_calls.h that reads a request, but launch and stop (checks of their own).
  std::vector<Request> calls;
#define TESSERA_CONFORMANCE_NO_REQUEST(...)
#define TESSERA_CONFORMANCE_REQUEST(name, Method, opcode, kind, need, Message, ...)       \
  if (Call::k##Method != Call::kLaunch && Call::k##Method != Call::kStop) {               \
    calls.push_back(                                                                      \
        {Call::k##Method, d.tessera_plugin_on_##name != nullptr, "on_" #name, #Message}); \
  }
  TESSERA_PLUGIN_CALLS(TESSERA_CONFORMANCE_NO_REQUEST, TESSERA_CONFORMANCE_REQUEST,
                       TESSERA_CONFORMANCE_REQUEST)
#undef TESSERA_CONFORMANCE_REQUEST
#undef TESSERA_CONFORMANCE_NO_REQUEST
  std::string tried;
  for (const Request& r : calls) {
    if (!r.present) continue;
    if (tried.empty()) c.Init();
    ExpectCode(c.host->SendRequestBytes(r.call, MalformedRequest()), TESSERA_INVALID_ARGUMENT,
               std::string(r.function) + " with bytes that are not a " + r.message);
    tried += (tried.empty() ? "" : ", ") + std::string(r.function);
  }
  if (tried.empty()) throw Skip{"no calls with a request but launch and stop"};
  return "INVALID_ARGUMENT from " + tried;
}

inline std::string CheckConcurrentPollAndTelemetry(Context& c) {
  c.RequireExecutor();
  c.Init();
  const std::string node = c.Node();
  const bool telemetry = c.host->descriptor().tessera_plugin_on_telemetry != nullptr;
  std::atomic<bool> done{false};
  std::atomic<int64_t> polls{0}, readings{0};
  std::mutex mu;
  std::string error;
  auto record = [&](const PluginStatus& status, const std::string& what) {
    if (status.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (error.empty()) {
      error = what + " returned " + StatusName(status.code) +
              (status.message.empty() ? "" : ": " + status.message) +
              " while other calls were running";
    }
  };
  std::thread poller([&] {
    while (!done.load()) {
      record(c.host->PollEvents(nullptr), "on_poll_events");
      ++polls;
    }
  });
  std::thread reader([&] {
    while (telemetry && !done.load()) {
      record(c.host->Telemetry(nullptr), "on_telemetry");
      ++readings;
    }
  });
  // Start once both threads are calling, and go on long enough for
  // their calls to overlap launches and stops many times.
  const auto begin = SteadyClock::now();
  while ((polls.load() == 0 || (telemetry && readings.load() == 0)) &&
         SteadyClock::now() - begin < milliseconds(1000)) {
    std::this_thread::yield();
  }
  const auto until = SteadyClock::now() + milliseconds(200);
  int rounds = 0;
  while (rounds < c.options.concurrency_rounds ||
         (SteadyClock::now() < until && rounds < 25 * c.options.concurrency_rounds)) {
    const v1::TaskRef ref = c.Ref(100 + rounds++);
    record(c.host->Launch(c.Task(ref, node)), c.LaunchOf(ref, node));
    record(c.host->Stop(c.Stop(ref)), c.StopOf(ref));
  }
  done.store(true);
  poller.join();
  reader.join();
  Expect(error.empty(), error);
  return std::to_string(rounds) + " launch/stop pairs overlapped by " +
         std::to_string(polls.load()) + " polls and " + std::to_string(readings.load()) +
         " telemetry calls";
}

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

inline void RunChild(const Check& check, const std::string& path, const std::string& config,
                     const ConformanceOptions& options, uint64_t job_base, int fd) {
  std::string verdict;
  {
    Context context{path, config, options, nullptr, job_base};
    PluginStatus opened = FakeHost::Open(path, &context.host);
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

inline ChildReport RunInChild(const Check& check, const std::string& path,
                              const std::string& config, const ConformanceOptions& options,
                              uint64_t job_base) {
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
    RunChild(check, path, config, options, job_base, fds[1]);
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

}  // namespace conformance_detail

// Runs every check against the plugin at `plugin_path`, passing `config` to on_init, and returns
// one result per check, in order, the last being call_latency (the slowest call of each kind
// against options.deadline). A check whose prerequisite failed is not run: its result has
// skipped set, passed false and blocked_by naming the failed check (FailedItself tells the two
// kinds of failure apart). Never throws for a plugin's misbehaviour; that is a failed check.
inline std::vector<CheckResult> RunConformance(const std::string& plugin_path,
                                               const std::string& config,
                                               const ConformanceOptions& options = {}) {
  namespace cd = conformance_detail;
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
  for (const cd::Check& check : cd::Checks()) {
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
    cd::ChildReport report = cd::RunInChild(check, plugin_path, config, options, ++job);
    if (!report.result.passed) failed_because[check.name] = check.name;
    results.push_back(std::move(report.result));
    for (const auto& [call, s] : report.stats) {
      FakeHost::CallStats& total = stats[call];
      total.count += s.count;
      total.total_us += s.total_us;
      total.max_us = std::max(total.max_us, s.max_us);
    }
  }
  results.push_back(cd::LatencyResult(stats, options.deadline));
  return results;
}

}  // namespace tessera::plugin
