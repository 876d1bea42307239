// The conformance kit (conformance.h) against the plugin host's test backend
// (tests/plugins/test_backend.cc) made to misbehave: what a failure says (the call, the message
// and field, the status by name), and that one root cause is one failure, the checks that need
// the failed one reported as not run, naming it.
#include "tessera/plugin/conformance.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace tessera::plugin {
namespace {

// build/tests/tessera_unit_tests -> build/tests/plugins/ (tests/plugins/CMakeLists.txt).
std::string TestBackendPath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "plugins" /
          "libtessera_plugin_test_backend.so")
      .string();
}

std::map<std::string, CheckResult> ByName(const std::vector<CheckResult>& results) {
  std::map<std::string, CheckResult> by_name;
  for (const CheckResult& result : results) by_name[result.name] = result;
  return by_name;
}

std::vector<std::string> FailedItselfNames(const std::vector<CheckResult>& results) {
  std::vector<std::string> names;
  for (const CheckResult& result : results) {
    if (FailedItself(result)) names.push_back(result.name);
  }
  return names;
}

TEST_CASE("conformance: a failed init is one failure; what needs it is not run, and says so") {
  const std::vector<CheckResult> results = RunConformance(TestBackendPath(), "reject=1\n");
  std::map<std::string, CheckResult> r = ByName(results);
  // The test backend also takes garbage for a config: that is a second, separate cause.
  CHECK(FailedItselfNames(results) ==
        std::vector<std::string>{"init", "init_rejects_garbage_config"});
  CHECK(r["init"].detail == "on_init with the given config returned INVALID_ARGUMENT: reject: set");
  CHECK(r["init_rejects_garbage_config"].detail ==
        "on_init with config bytes no format accepts: expected INVALID_ARGUMENT, got OK");
  CHECK(r["handshake"].passed);

  for (const char* name : {"shutdown_after_init", "reinit_after_shutdown", "inventory",
                           "stop_unknown_task", "malformed_launch", "malformed_stop"}) {
    CAPTURE(name);
    CHECK_FALSE(r[name].passed);
    CHECK(r[name].skipped);
    CHECK(r[name].blocked_by == "init");
    CHECK(r[name].detail == "not run: it needs init, which failed");
  }
  CHECK(r["reconcile_forgets_exited"].blocked_by == "init");
  CHECK(r["reconcile_forgets_exited"].detail ==
        "not run: it needs stop_reports_exit, which was not run because init failed");
}

TEST_CASE("conformance: a failing launch names the call, the task and the status by name") {
  const std::vector<CheckResult> results = RunConformance(TestBackendPath(), "launch_error=1\n");
  std::map<std::string, CheckResult> r = ByName(results);
  CHECK(r["inventory"].passed);
  CHECK_FALSE(r["launch_then_reconcile"].passed);
  CHECK(r["launch_then_reconcile"].blocked_by.empty());
  const std::string& why = r["launch_then_reconcile"].detail;
  CHECK_MESSAGE(why.find("on_launch(LaunchTask for TaskRef{job ") == 0, why);
  CHECK_MESSAGE(
      why.find(", attempt 1, task 0} on node 'test-0') returned UNAVAILABLE") != std::string::npos,
      why);
  for (const char* name :
       {"launch_is_idempotent", "stop_reports_exit", "concurrent_poll_and_telemetry"}) {
    CAPTURE(name);
    CHECK(r[name].blocked_by == "launch_then_reconcile");
    CHECK(r[name].detail == "not run: it needs launch_then_reconcile, which failed");
  }
  CHECK(r["reconcile_forgets_exited"].detail ==
        "not run: it needs stop_reports_exit, which was not run because launch_then_reconcile "
        "failed");
  // What does not need a launch still runs, and passes.
  CHECK(r["stop_unknown_task"].passed);
  CHECK(r["malformed_launch"].passed);
}

}  // namespace
}  // namespace tessera::plugin
