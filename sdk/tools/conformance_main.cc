// tessera-plugin-conformance: runs the SDK's conformance kit (conformance.h) against a built
// plugin and prints one line per check. Exit status: 0 when every check passed, 1 when one
// failed, 2 for a usage error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/plugin/conformance.h"

namespace {

constexpr const char* kUsage =
    "usage: tessera-plugin-conformance <plugin.so> [--config FILE] [--executor-node NODE]\n"
    "                                  [--deadline-ms MS] [--event-timeout-ms MS]\n"
    "  --config FILE          bytes passed to on_init (default: none)\n"
    "  --executor-node NODE   node to launch test tasks on (default: the inventory's first)\n"
    "  --deadline-ms MS       longest a single call may take (default 5000)\n"
    "  --event-timeout-ms MS  wall time to wait for a task's exit event (default 10000)\n";

int Usage(const std::string& why) {
  if (!why.empty()) std::cerr << "tessera-plugin-conformance: " << why << "\n";
  std::cerr << kUsage;
  return 2;
}

bool ParseMs(const std::string& text, std::chrono::milliseconds* out) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value <= 0) return false;
  *out = std::chrono::milliseconds(value);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plugin;
  std::string config;
  tessera::plugin::ConformanceOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string text;
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--config") {
      if (!value(&text)) return Usage("--config needs a file");
      std::ifstream in(text, std::ios::binary);
      if (!in) return Usage("cannot read config file " + text);
      std::ostringstream bytes;
      bytes << in.rdbuf();
      config = bytes.str();
    } else if (arg == "--executor-node") {
      if (!value(&options.executor_node)) return Usage("--executor-node needs a node name");
    } else if (arg == "--deadline-ms") {
      if (!value(&text) || !ParseMs(text, &options.deadline)) {
        return Usage("--deadline-ms needs a positive number");
      }
    } else if (arg == "--event-timeout-ms") {
      if (!value(&text) || !ParseMs(text, &options.event_timeout)) {
        return Usage("--event-timeout-ms needs a positive number");
      }
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage("unknown option " + arg);
    } else if (plugin.empty()) {
      plugin = arg;
    } else {
      return Usage("more than one plugin given");
    }
  }
  if (plugin.empty()) return Usage("no plugin given");
  // dlopen searches the library path for a bare name; a file in the working directory is meant.
  if (plugin.find('/') == std::string::npos) plugin = "./" + plugin;

  int failed = 0;
  const std::vector<tessera::plugin::CheckResult> results =
      tessera::plugin::RunConformance(plugin, config, options);
  for (const tessera::plugin::CheckResult& result : results) {
    const char* verdict = !result.passed ? "FAIL" : result.skipped ? "SKIP" : "PASS";
    std::printf("%s %s: %s\n", verdict, result.name.c_str(), result.detail.c_str());
    failed += result.passed ? 0 : 1;
  }
  std::printf("%d of %zu checks failed\n", failed, results.size());
  return failed == 0 ? 0 : 1;
}
