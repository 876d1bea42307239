// The conformance kit's checks of ABI 1.0's rules (abi.h): the handshake, init and shutdown, the
// executor's launch, stop and reconcile, malformed requests, and the calls that may overlap.
// Each body passes when its name says (docs/plugins.md has the table), or throws Failure with
// the reason, or Skip when it does not apply. conformance.h lists them in order.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tessera/plugin/conformance_context.h"

namespace tessera::plugin::conformance_detail {

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

}  // namespace tessera::plugin::conformance_detail
