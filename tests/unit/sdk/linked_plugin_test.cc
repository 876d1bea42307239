// Linked plugins (tessera/plugin/linked.h): one Plugin class, the test backend
// (tests/plugins/test_backend.h), checked by the conformance kit as the shared object
// libtessera_plugin_test_backend.so and linked into this binary gets the same verdict from every
// check, working and misbehaving alike; and what is particular to a linked plugin (its factory,
// the C on_init that cannot reach it, the handshake on its name and version) says what is wrong.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugins/test_backend.h"
#include "tessera/plugin/conformance.h"
#include "tessera/plugin/fake_host.h"
#include "tessera/plugin/linked.h"

namespace tessera::plugin {
namespace {

std::string TestBackendPath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plugins" /
          "libtessera_plugin_test_backend.so")
      .string();
}

std::shared_ptr<const LinkedPlugin> LinkedTestBackend(std::atomic<int>* made = nullptr) {
  return MakeLinkedPlugin("test-backend", "0.1.0", TESSERA_PLUGIN_KIND_EXECUTOR,
                          [made](Host host) -> std::unique_ptr<Plugin> {
                            if (made) ++*made;
                            return std::make_unique<testing::TestBackend>(host);
                          });
}

// A result without its timings: call_latency's detail is the slowest call of each kind.
std::string Verdict(const CheckResult& r) {
  std::string verdict = r.name + (r.passed ? " passed" : r.skipped ? " not run" : " failed");
  if (!r.blocked_by.empty()) verdict += " (blocked by " + r.blocked_by + ")";
  if (!r.passed && r.name != "call_latency") verdict += ": " + r.detail;
  // Test job numbers differ from run to run: "TaskRef{job 673268061008, ..." reads "job N".
  return std::regex_replace(verdict, std::regex("job [0-9]+"), "job N");
}

std::vector<std::string> Verdicts(const std::vector<CheckResult>& results) {
  std::vector<std::string> verdicts;
  for (const CheckResult& r : results) verdicts.push_back(Verdict(r));
  return verdicts;
}

TEST_CASE("linked plugin: the conformance kit finds what it finds in the same class loaded") {
  // A working backend, one whose init fails, one whose launches fail: the verdicts differ between
  // configs (so the comparison can fail) and not between the two ways of hosting the class.
  for (const char* config : {"", "reject=1\n", "launch_error=1\n"}) {
    CAPTURE(config);
    const std::vector<std::string> loaded = Verdicts(RunConformance(TestBackendPath(), config));
    const std::vector<std::string> linked = Verdicts(RunConformance(LinkedTestBackend(), config));
    CHECK(linked == loaded);

    CHECK(linked.size() > 10);
  }
  const std::vector<std::string> working = Verdicts(RunConformance(LinkedTestBackend(), ""));
  CHECK(std::count(working.begin(), working.end(), "launch_then_reconcile passed") == 1);
  CHECK(std::count(working.begin(), working.end(), "stop_reports_exit passed") == 1);
}

TEST_CASE("linked plugin: each init makes a new instance through the factory") {
  std::atomic<int> made{0};
  std::unique_ptr<FakeHost> host;
  REQUIRE(FakeHost::Linked(LinkedTestBackend(&made), &host).ok());
  CHECK(made == 0);  // Nothing is made before on_init.
  CHECK(host->name() == "test-backend");
  CHECK(host->version() == "0.1.0");
  CHECK(host->Declares(TESSERA_PLUGIN_KIND_EXECUTOR));
  CHECK_FALSE(host->Declares(TESSERA_PLUGIN_KIND_PARTITIONER));
  const bool no_partitioner_calls =
      host->descriptor().tessera_plugin_on_apply_mig_layout == nullptr;
  CHECK(no_partitioner_calls);

  REQUIRE(host->Init("nodes=2\n").ok());
  CHECK(made == 1);
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  CHECK(inventory.nodes_size() == 2);
  host->Shutdown();
  REQUIRE(host->Init("nodes=3\n").ok());
  CHECK(made == 2);
  inventory.Clear();
  REQUIRE(host->Inventory(&inventory).ok());
  CHECK(inventory.nodes_size() == 3);

  const PluginStatus refused = [&] {
    host->Shutdown();
    return host->Init("reject=1\n");
  }();
  CHECK(refused.code == TESSERA_INVALID_ARGUMENT);
  CHECK(refused.message == "reject: set");
}

TEST_CASE("linked plugin: a factory that makes nothing or throws fails init, naming why") {
  std::unique_ptr<FakeHost> host;
  REQUIRE(FakeHost::Linked(MakeLinkedPlugin("empty", "1", TESSERA_PLUGIN_KIND_EXECUTOR,
                                            [](Host) { return std::unique_ptr<Plugin>(); }),
                           &host)
              .ok());
  PluginStatus status = host->Init("");
  CHECK(status.code == TESSERA_INTERNAL);
  CHECK(status.message == "on_init: the plugin factory made no plugin");
  CHECK_FALSE(host->initialized());

  REQUIRE(FakeHost::Linked(MakeLinkedPlugin("throws", "1", TESSERA_PLUGIN_KIND_EXECUTOR,
                                            [](Host) -> std::unique_ptr<Plugin> {
                                              throw std::runtime_error("no runner yet");
                                            }),
                           &host)
              .ok());
  status = host->Init("");
  CHECK(status.code == TESSERA_INTERNAL);
  CHECK(status.message == "exception: no runner yet");

  REQUIRE(FakeHost::Linked(std::make_shared<const LinkedPlugin>(
                               LinkedPlugin{"no-make", "1", TESSERA_PLUGIN_KIND_EXECUTOR, {}}),
                           &host)
              .ok());
  status = host->Init("");
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "on_init: linked plugin 'no-make' has no make");
}

TEST_CASE("linked plugin: the handshake holds it to a name, a version and known kinds") {
  std::unique_ptr<FakeHost> host;
  auto make = [](Host host) -> std::unique_ptr<Plugin> {
    return std::make_unique<testing::TestBackend>(host);
  };
  PluginStatus status = FakeHost::Linked(MakeLinkedPlugin("", "1", 1, make), &host);
  CHECK(status.code == TESSERA_FAILED_PRECONDITION);
  CHECK(status.message == "handshake: descriptor has no name");
  status = FakeHost::Linked(MakeLinkedPlugin("p", "", 1, make), &host);
  CHECK(status.message == "handshake: plugin 'p' has no version");
  status = FakeHost::Linked(MakeLinkedPlugin("p", "1", 0, make), &host);
  CHECK(status.message ==
        "handshake: plugin 'p': descriptor kinds 0 is not a set of TESSERA_PLUGIN_KIND_* bits");
  status = FakeHost::Linked(nullptr, &host);
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "load: NULL linked plugin");
}

TEST_CASE("linked plugin: the descriptor's own on_init, which cannot reach the factory, refuses") {
  const std::shared_ptr<const LinkedPlugin> plugin = LinkedTestBackend();
  const tessera_plugin_descriptor d = LinkedDescriptor(*plugin);
  std::string error;
  tessera_sink sink{};
  sink.context = &error;
  sink.write = [](tessera_sink* s, const uint8_t* data, size_t size) {
    static_cast<std::string*>(s->context)->append(reinterpret_cast<const char*>(data), size);
  };
  tessera_plugin_instance* instance = nullptr;
  const tessera_host_api api{};
  CHECK(d.tessera_plugin_on_init(&api, tessera_bytes{nullptr, 0}, &instance, &sink) ==
        TESSERA_FAILED_PRECONDITION);
  CHECK(error == "on_init: a linked plugin is made with InitLinked");
  CHECK(instance == nullptr);
}

}  // namespace
}  // namespace tessera::plugin
