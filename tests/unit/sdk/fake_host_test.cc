// The plugin SDK's C++ layer (plugin.h) driven through FakeHost (fake_host.h): the handshake,
// status and exception mapping, malformed bytes both ways, calls a plugin does not support, and
// what the host records (logs, events, clock, ABI violations, call latency). The test plugins are
// defined here; TESSERA_PLUGIN defines the one entry symbol of a binary, so each test plugin's
// descriptor comes from detail::Describe<T> instead.
#include "tessera/plugin/fake_host.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tessera/plugin/plugin.h"

namespace tessera::plugin {
namespace {

using std::chrono::milliseconds;

v1::TaskRef Ref(uint64_t job, int task = 0) {
  v1::TaskRef ref;
  ref.set_job(job);
  ref.set_attempt(1);
  ref.set_task(task);
  return ref;
}

// A small executor: config "nodes=N" (default 1); tasks run until stopped; job 666 throws.
class EchoExecutor : public Plugin {
 public:
  explicit EchoExecutor(Host host) : Plugin(host) {}

  PluginStatus Init(const std::string& config) override {
    if (!config.empty()) {
      if (config.rfind("nodes=", 0) != 0) {
        return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "config: expected nodes=N");
      }
      nodes_ = std::stoi(config.substr(6));
    }
    host().Log(TESSERA_LOG_INFO, "echo ready");
    return PluginStatus::Ok();
  }
  PluginStatus Inventory(v1::Inventory* out) override {
    for (int i = 0; i < nodes_; ++i) out->add_nodes()->set_name("echo-" + std::to_string(i));
    return PluginStatus::Ok();
  }
  PluginStatus Launch(const v1::LaunchTask& request) override {
    if (request.ref().job() == 666) throw std::runtime_error("launch exploded");
    std::lock_guard<std::mutex> lock(mu_);
    if (!tasks_.emplace(Key(request.ref()), request.ref()).second) return PluginStatus::Ok();
    Emit(v1::BackendEvent::TASK_STARTED, request.ref(), 0);
    return PluginStatus::Ok();
  }
  PluginStatus Stop(const v1::StopTask& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (tasks_.erase(Key(request.ref())) == 0) return PluginStatus::Ok();
    // Reported from another thread, as a real backend does.
    std::thread([host = host(), ref = request.ref()] {
      v1::BackendEvent event;
      event.set_kind(v1::BackendEvent::TASK_EXITED);
      *event.mutable_ref() = ref;
      event.set_exit_code(143);
      event.set_time_us(host.NowUs());
      host.Emit(event);
    }).join();
    return PluginStatus::Ok();
  }
  PluginStatus PollEvents(v1::BackendEvents* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const v1::BackendEvent& event : pending_) *out->add_events() = event;
    pending_.clear();
    return PluginStatus::Ok();
  }
  PluginStatus Reconcile(v1::LiveTasks* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, ref] : tasks_) *out->add_tasks() = ref;
    return PluginStatus::Ok();
  }

 private:
  static std::string Key(const v1::TaskRef& r) {
    return std::to_string(r.job()) + "/" + std::to_string(r.attempt()) + "/" +
           std::to_string(r.task());
  }
  // Started events go through poll_events, stamped with the host's clock.
  void Emit(v1::BackendEvent::Kind kind, const v1::TaskRef& ref, int exit_code) {
    v1::BackendEvent& event = pending_.emplace_back();
    event.set_kind(kind);
    *event.mutable_ref() = ref;
    event.set_exit_code(exit_code);
    event.set_time_us(host().NowUs());
  }

  int nodes_ = 1;
  std::mutex mu_;
  std::map<std::string, v1::TaskRef> tasks_;
  std::vector<v1::BackendEvent> pending_;
};

// An executor that overrides nothing: the SDK answers "not supported".
class BareExecutor : public Plugin {
 public:
  explicit BareExecutor(Host host) : Plugin(host) {}
};

// A partitioner only: executor functions are NULL in its descriptor.
class Partitioner : public Plugin {
 public:
  explicit Partitioner(Host host) : Plugin(host) {}
  PluginStatus ApplyMigLayout(const v1::MigLayoutRequest& request) override {
    if (request.node().empty()) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "apply_mig_layout: node is empty");
    }
    return PluginStatus::Ok();
  }
};

// A plugin whose Init throws.
class ThrowingInit : public Plugin {
 public:
  explicit ThrowingInit(Host host) : Plugin(host) {}
  PluginStatus Init(const std::string&) override { throw 42; }
};

const tessera_plugin_descriptor* EchoEntry() {
  return detail::Describe<EchoExecutor>("echo", "1.0.0", TESSERA_PLUGIN_KIND_EXECUTOR);
}
const tessera_plugin_descriptor* BareEntry() {
  return detail::Describe<BareExecutor>("bare", "0.1.0", TESSERA_PLUGIN_KIND_EXECUTOR);
}
const tessera_plugin_descriptor* PartitionerEntry() {
  return detail::Describe<Partitioner>("mig-only", "0.1.0", TESSERA_PLUGIN_KIND_PARTITIONER);
}
const tessera_plugin_descriptor* ThrowingEntry() {
  return detail::Describe<ThrowingInit>("throws", "0.1.0", TESSERA_PLUGIN_KIND_EXECUTOR);
}

std::unique_ptr<FakeHost> LoadOrDie(tessera_plugin_entry_fn entry, std::string config = "") {
  std::unique_ptr<FakeHost> host;
  const PluginStatus loaded = FakeHost::Load(entry, &host);
  REQUIRE_MESSAGE(loaded.ok(), loaded.message);
  const PluginStatus init = host->Init(config);
  REQUIRE_MESSAGE(init.ok(), init.message);
  return host;
}

// A descriptor edited by a test, handed out by an entry function without captures.
tessera_plugin_descriptor edited;
const tessera_plugin_descriptor* EditedEntry() { return &edited; }

// A descriptor from a newer minor: longer, with a function this host does not know.
struct NewerDescriptor {
  tessera_plugin_descriptor base;
  void (*appended_in_minor_1)(void);
};
NewerDescriptor newer;
const tessera_plugin_descriptor* NewerEntry() { return &newer.base; }

TEST_CASE("fake host: the handshake refuses a different ABI major") {
  edited = *EchoEntry();
  edited.abi_major = TESSERA_PLUGIN_ABI_MAJOR + 1;
  std::unique_ptr<FakeHost> host;
  const PluginStatus status = FakeHost::Load(&EditedEntry, &host);
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(status.message.find("built for plugin ABI 2.") != std::string::npos);
  CHECK(host == nullptr);
}

TEST_CASE("fake host: the handshake refuses a descriptor shorter than minor 0") {
  edited = *EchoEntry();
  edited.struct_size = offsetof(tessera_plugin_descriptor, tessera_plugin_on_deprovision);
  std::unique_ptr<FakeHost> host;
  const PluginStatus status = FakeHost::Load(&EditedEntry, &host);
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(status.message.find("struct_size") != std::string::npos);
}

TEST_CASE("fake host: the handshake refuses a nameless plugin and a NULL descriptor") {
  edited = *EchoEntry();
  edited.name = "";
  std::unique_ptr<FakeHost> host;
  CHECK(FakeHost::Load(&EditedEntry, &host).code == TESSERA_FAILED_PRECONDITION);
  CHECK(FakeHost::Load([]() -> const tessera_plugin_descriptor* { return nullptr; }, &host).code ==
        TESSERA_FAILED_PRECONDITION);
  CHECK(FakeHost::Load(nullptr, &host).code == TESSERA_INVALID_ARGUMENT);
}

TEST_CASE("fake host: a newer minor with a longer descriptor is accepted") {
  newer.base = *EchoEntry();
  newer.base.abi_minor = TESSERA_PLUGIN_ABI_MINOR + 3;
  newer.base.struct_size = sizeof(NewerDescriptor);
  newer.appended_in_minor_1 = +[] {};
  std::unique_ptr<FakeHost> host;
  const PluginStatus status = FakeHost::Load(&NewerEntry, &host);
  REQUIRE_MESSAGE(status.ok(), status.message);
  CHECK(host->descriptor().abi_minor == TESSERA_PLUGIN_ABI_MINOR + 3);
  CHECK(host->name() == "echo");
  REQUIRE(host->Init("").ok());
  v1::Inventory inventory;
  CHECK(host->Inventory(&inventory).ok());
  CHECK(inventory.nodes_size() == 1);
}

TEST_CASE("fake host: a library that does not load or has no entry symbol is refused") {
  std::unique_ptr<FakeHost> host;
  CHECK(FakeHost::Open("/nonexistent/libtessera_plugin_x.so", &host).code == TESSERA_NOT_FOUND);
  const PluginStatus no_symbol = FakeHost::Open("libm.so.6", &host);
  CHECK(no_symbol.code == TESSERA_INVALID_ARGUMENT);
  CHECK(no_symbol.message.find(TESSERA_PLUGIN_ENTRY_SYMBOL) != std::string::npos);
}

TEST_CASE("fake host: init passes the config; a bad one is INVALID_ARGUMENT") {
  std::unique_ptr<FakeHost> host;
  REQUIRE(FakeHost::Load(&EchoEntry, &host).ok());
  const PluginStatus bad = host->Init("colour=blue");
  CHECK(bad.code == TESSERA_INVALID_ARGUMENT);
  CHECK(bad.message == "config: expected nodes=N");
  CHECK_FALSE(host->initialized());

  REQUIRE(host->Init("nodes=3").ok());
  CHECK(host->Init("nodes=3").code == TESSERA_FAILED_PRECONDITION);
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  CHECK(inventory.nodes_size() == 3);
  REQUIRE(host->logs().size() == 1);
  CHECK(host->logs()[0].level == TESSERA_LOG_INFO);
  CHECK(host->logs()[0].message == "echo ready");
}

TEST_CASE("fake host: calls before init are refused") {
  std::unique_ptr<FakeHost> host;
  REQUIRE(FakeHost::Load(&EchoEntry, &host).ok());
  v1::Inventory inventory;
  const PluginStatus status = host->Inventory(&inventory);
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(status.message.find("not initialized") != std::string::npos);
}

TEST_CASE("fake host: an exception escaping the plugin becomes INTERNAL") {
  std::unique_ptr<FakeHost> host = LoadOrDie(&EchoEntry);
  v1::LaunchTask launch;
  *launch.mutable_ref() = Ref(666);
  const PluginStatus status = host->Launch(launch);
  CHECK(status.code == TESSERA_INTERNAL);
  CHECK(status.message == "exception: launch exploded");

  std::unique_ptr<FakeHost> throwing;
  REQUIRE(FakeHost::Load(&ThrowingEntry, &throwing).ok());
  const PluginStatus init = throwing->Init("");
  CHECK(init.code == TESSERA_INTERNAL);
  CHECK(init.message == "unknown exception");
  CHECK_FALSE(throwing->initialized());
}

TEST_CASE("fake host: malformed request bytes are INVALID_ARGUMENT") {
  std::unique_ptr<FakeHost> host = LoadOrDie(&EchoEntry);
  const std::string malformed("\x0a\x7f\x01", 3);
  for (auto call : {FakeHost::RequestCall::kLaunch, FakeHost::RequestCall::kStop,
                    FakeHost::RequestCall::kResize}) {
    const PluginStatus status = host->SendRequestBytes(call, malformed);
    CHECK(status.code == TESSERA_INVALID_ARGUMENT);
    CHECK(status.message.find("malformed request bytes") != std::string::npos);
  }
}

TEST_CASE("fake host: calls a plugin does not support answer FAILED_PRECONDITION") {
  std::unique_ptr<FakeHost> bare = LoadOrDie(&BareEntry);
  v1::Inventory inventory;
  const PluginStatus inventory_status = bare->Inventory(&inventory);
  CHECK(inventory_status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(inventory_status.message == "inventory: not supported by this plugin");
  CHECK(bare->Launch(v1::LaunchTask()).code == TESSERA_FAILED_PRECONDITION);
  CHECK(bare->Reconcile(nullptr).code == TESSERA_FAILED_PRECONDITION);
  // Defaults that succeed: resize is informational, poll and telemetry may be empty.
  CHECK(bare->Resize(v1::ResizeJob()).ok());
  v1::BackendEvents events;
  CHECK(bare->PollEvents(&events).ok());
  CHECK(events.events_size() == 0);
  CHECK(bare->Telemetry(nullptr).ok());

  // Functions of kinds a plugin does not declare are NULL, and the host says so.
  std::unique_ptr<FakeHost> partitioner = LoadOrDie(&PartitionerEntry);
  const bool executor_functions = partitioner->descriptor().tessera_plugin_on_launch != nullptr;
  const bool provider_functions = partitioner->descriptor().tessera_plugin_on_provision != nullptr;
  CHECK_FALSE(executor_functions);
  CHECK_FALSE(provider_functions);
  const PluginStatus launch = partitioner->Launch(v1::LaunchTask());
  CHECK(launch.code == TESSERA_FAILED_PRECONDITION);
  CHECK(launch.message.find("does not provide") != std::string::npos);
  v1::MigLayoutRequest layout;
  CHECK(partitioner->ApplyMigLayout(layout).code == TESSERA_INVALID_ARGUMENT);
  layout.set_node("n0");
  CHECK(partitioner->ApplyMigLayout(layout).ok());
}

TEST_CASE("fake host: emitted and polled events are recorded; WaitForEvent times out") {
  std::unique_ptr<FakeHost> host = LoadOrDie(&EchoEntry);
  host->SetNowUs(5'000'000);
  v1::LaunchTask launch;
  *launch.mutable_ref() = Ref(7);
  launch.set_node("echo-0");
  REQUIRE(host->Launch(launch).ok());
  REQUIRE(host->Launch(launch).ok());  // idempotent: one task, one started event.

  v1::LiveTasks live;
  REQUIRE(host->Reconcile(&live).ok());
  CHECK(live.tasks_size() == 1);

  // Started comes through poll_events, stamped with the virtual clock.
  v1::BackendEvents polled;
  REQUIRE(host->PollEvents(&polled).ok());
  REQUIRE(polled.events_size() == 1);
  CHECK(polled.events(0).time_us() == 5'000'000);
  CHECK(host->WaitForEvent(v1::BackendEvent::TASK_STARTED, Ref(7), milliseconds(0)));

  // Exited comes through the callback, from another thread.
  CHECK_FALSE(host->WaitForEvent(v1::BackendEvent::TASK_EXITED, Ref(7), milliseconds(10)));
  host->AdvanceUs(2'500'000);
  v1::StopTask stop;
  *stop.mutable_ref() = Ref(7);
  REQUIRE(host->Stop(stop).ok());
  const std::optional<v1::BackendEvent> exited =
      host->WaitForEvent(v1::BackendEvent::TASK_EXITED, Ref(7), milliseconds(2000));
  REQUIRE(exited);
  CHECK(exited->exit_code() == 143);
  CHECK(exited->time_us() == 7'500'000);
  CHECK(host->events().size() == 2);
  CHECK(host->violations().empty());

  // Stopping a task that is gone succeeds.
  CHECK(host->Stop(stop).ok());
  const std::map<std::string, FakeHost::CallStats> stats = host->call_stats();
  CHECK(stats.at("launch").count == 2);
  CHECK(stats.at("stop").count == 2);
  CHECK(stats.at("init").count == 1);
}

// Hand-written plugins that break the ABI in ways the SDK's C++ layer never would.
const tessera_host_api* raw_host = nullptr;
int raw_instance = 0;

tessera_plugin_descriptor RawDescriptor() {
  tessera_plugin_descriptor d{};
  d.abi_major = TESSERA_PLUGIN_ABI_MAJOR;
  d.abi_minor = TESSERA_PLUGIN_ABI_MINOR;
  d.struct_size = sizeof(tessera_plugin_descriptor);
  d.kinds = TESSERA_PLUGIN_KIND_EXECUTOR;
  d.name = "raw";
  d.version = "0.0.1";
  d.tessera_plugin_on_init = [](const tessera_host_api* host, tessera_bytes,
                                tessera_plugin_instance** out, tessera_sink*) -> tessera_status {
    raw_host = host;
    *out = reinterpret_cast<tessera_plugin_instance*>(&raw_instance);
    return TESSERA_OK;
  };
  d.tessera_plugin_on_shutdown = [](tessera_plugin_instance*) {};
  return d;
}

TEST_CASE("fake host: a malformed reply, a double write or an unknown status is INTERNAL") {
  edited = RawDescriptor();
  edited.tessera_plugin_on_inventory = [](tessera_plugin_instance*, tessera_sink* out,
                                          tessera_sink*) -> tessera_status {
    const uint8_t garbage[] = {0x0a, 0x7f, 0x01};
    out->write(out, garbage, sizeof(garbage));
    return TESSERA_OK;
  };
  edited.tessera_plugin_on_reconcile = [](tessera_plugin_instance*, tessera_sink* out,
                                          tessera_sink*) -> tessera_status {
    out->write(out, nullptr, 0);
    out->write(out, nullptr, 0);
    return TESSERA_OK;
  };
  edited.tessera_plugin_on_stop = [](tessera_plugin_instance*, tessera_bytes,
                                     tessera_sink* error) -> tessera_status {
    const char message[] = "odd";
    error->write(error, reinterpret_cast<const uint8_t*>(message), 3);
    return 99;
  };
  edited.tessera_plugin_on_launch = [](tessera_plugin_instance*, tessera_bytes,
                                       tessera_sink*) -> tessera_status {
    return TESSERA_UNAVAILABLE;  // and no message.
  };
  std::unique_ptr<FakeHost> host = LoadOrDie(&EditedEntry);

  const PluginStatus inventory = host->Inventory(nullptr);
  CHECK(inventory.code == TESSERA_INTERNAL);
  CHECK(inventory.message == "inventory: the plugin's reply does not parse");
  const PluginStatus reconcile = host->Reconcile(nullptr);
  CHECK(reconcile.code == TESSERA_INTERNAL);
  CHECK(reconcile.message.find("more than once") != std::string::npos);
  const PluginStatus stop = host->Stop(v1::StopTask());
  CHECK(stop.code == TESSERA_INTERNAL);
  CHECK(stop.message.find("unknown status 99") != std::string::npos);
  const PluginStatus launch = host->Launch(v1::LaunchTask());
  CHECK(launch.code == TESSERA_UNAVAILABLE);
  CHECK(launch.message == "launch: failed with no message");
}

TEST_CASE("fake host: malformed events and callbacks after shutdown are violations") {
  edited = RawDescriptor();
  std::unique_ptr<FakeHost> host = LoadOrDie(&EditedEntry);
  REQUIRE(raw_host != nullptr);
  const uint8_t garbage[] = {0x0a, 0x7f};
  raw_host->tessera_host_emit_event(raw_host->context, garbage, sizeof(garbage));
  raw_host->tessera_host_log(raw_host->context, 17, "x", 1);
  CHECK(host->events().empty());
  CHECK(host->violations().size() == 2);

  host->Shutdown();
  CHECK_FALSE(host->initialized());
  raw_host->tessera_host_log(raw_host->context, TESSERA_LOG_WARN, "late", 4);
  const std::vector<std::string> violations = host->violations();
  REQUIRE(violations.size() == 3);
  CHECK(violations[2] == "tessera_host_log called after on_shutdown returned");
}

TEST_CASE("fake host: poll_events and telemetry may overlap launch and stop") {
  std::unique_ptr<FakeHost> host = LoadOrDie(&EchoEntry);
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::thread poller([&] {
    while (!done.load()) failures += host->PollEvents(nullptr).ok() ? 0 : 1;
  });
  std::thread reader([&] {
    while (!done.load()) failures += host->Telemetry(nullptr).ok() ? 0 : 1;
  });
  for (int i = 0; i < 50; ++i) {
    v1::LaunchTask launch;
    *launch.mutable_ref() = Ref(100, i);
    v1::StopTask stop;
    *stop.mutable_ref() = Ref(100, i);
    CHECK(host->Launch(launch).ok());
    CHECK(host->Stop(stop).ok());
  }
  done.store(true);
  poller.join();
  reader.join();
  CHECK(failures.load() == 0);
  int exited = 0;
  for (const v1::BackendEvent& e : host->events()) {
    exited += e.kind() == v1::BackendEvent::TASK_EXITED;
  }
  CHECK(exited == 50);
}

}  // namespace
}  // namespace tessera::plugin
