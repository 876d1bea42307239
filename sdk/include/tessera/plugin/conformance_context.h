// The conformance kit's vocabulary: its options and results, and what a check's body gets (a
// Context with a FakeHost over the plugin, helpers that make test tasks and wait for events, and
// Expect, which fails the check with a message naming the call, message and field). The checks
// are in conformance_checks.h (ABI 1.0's rules) and conformance_abi_1_1_checks.h; the runner that
// forks a child per check is conformance.h, which is what a plugin's tests include.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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
  // A capacity provider's node group to provision one node from and give back (ABI 1.1); empty
  // (default): that check is skipped, since provisioning may cost money.
  std::string provision_node_group;
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

}  // namespace conformance_detail
}  // namespace tessera::plugin
