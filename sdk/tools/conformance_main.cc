// tessera-plugin-conformance: runs the SDK's conformance kit (conformance.h) against a built
// plugin and prints one line per check (PASS, FAIL, or SKIP: not applicable, or not run because
// a check it needs failed). Exit status: 0 when every check passed, 1 when one failed, 2 for a
// usage error.
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
    "                                  [--task-command 'ARGV...'] [--provision-group GROUP]\n"
    "  --config FILE          bytes passed to on_init (default: none)\n"
    "  --executor-node NODE   node to launch test tasks on (default: the inventory's first)\n"
    "  --deadline-ms MS       longest a single call may take (default 5000)\n"
    "  --event-timeout-ms MS  wall time to wait for a task's exit event (default 10000)\n"
    "  --task-command ARGV    the test tasks' command, split at spaces; it must run until\n"
    "                         stopped (default 'sleep 300')\n"
    "  --provision-group GROUP  a capacity provider's node group to provision one node from\n"
    "                         and give back (default: not tried; it may cost money)\n";

int Usage(const std::string& why) {
  if (!why.empty()) std::cerr << "tessera-plugin-conformance: " << why << "\n";
  std::cerr << kUsage;
  return 2;
}

// Words separated by spaces or tabs; no quoting.
std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
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
    } else if (arg == "--task-command") {
      if (!value(&text) || SplitWords(text).empty()) {
        return Usage("--task-command needs a command");
      }
      options.task_command = SplitWords(text);
    } else if (arg == "--provision-group") {
      if (!value(&options.provision_node_group) || options.provision_node_group.empty()) {
        return Usage("--provision-group needs a node group name");
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
  int blocked = 0;
  const std::vector<tessera::plugin::CheckResult> results =
      tessera::plugin::RunConformance(plugin, config, options);
  for (const tessera::plugin::CheckResult& result : results) {
    const char* verdict = result.skipped ? "SKIP" : result.passed ? "PASS" : "FAIL";
    std::printf("%s %s: %s\n", verdict, result.name.c_str(), result.detail.c_str());
    failed += tessera::plugin::FailedItself(result) ? 1 : 0;
    blocked += result.blocked_by.empty() ? 0 : 1;
  }
  std::printf("%d of %zu checks failed", failed, results.size());
  if (blocked > 0) std::printf("; %d not run because a check they need failed", blocked);
  std::printf("\n");
  return failed == 0 && blocked == 0 ? 0 : 1;
}
