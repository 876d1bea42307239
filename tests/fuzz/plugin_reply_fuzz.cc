// Fuzz target: replies of an executor plugin, as the scheduler parses and uses them. The input
// becomes the configuration of reply_plugin.cc, which answers on_inventory, on_reconcile,
// on_poll_events and on_telemetry with bytes cut from it; the target opens a scheduler on that
// plugin (in process), submits a one-GPU job so that a launch and polls follow, lets the
// poller run a few times and closes. Whatever the plugin writes, Open must fail with a status
// or the scheduler must run and close; a crash, a hang or a sanitizer report is a finding.
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "fuzz_support.h"
#include "tessera/scheduler.h"
#include "tessera/v1/plugin.pb.h"

#ifndef TESSERA_FUZZ_REPLY_PLUGIN
#error "TESSERA_FUZZ_REPLY_PLUGIN must name the path of reply_plugin.cc's shared object"
#endif

namespace {

tessera::StatusOr<std::unique_ptr<tessera::Scheduler>> OpenOnReplies(const std::string& replies) {
  tessera::Options options;
  options.store.path = "";                      // in memory.
  options.log.level = tessera::LogLevel::kOff;  // an unhealthy plugin logs on every input.
  tessera::PluginOptions plugin;
  plugin.plugin = TESSERA_FUZZ_REPLY_PLUGIN;
  plugin.config = replies;
  plugin.call_deadline = std::chrono::milliseconds(2000);
  plugin.poll_interval = std::chrono::milliseconds(1);
  plugin.max_restarts_per_minute = 0;  // replies are fuzzed, not restarts: no restarter thread.
  options.executor_plugin = plugin;
  return tessera::Scheduler::Open(options);
}

// The plugin's configuration for these four replies (the format of reply_plugin.cc).
std::string Replies(const std::string& inventory) {
  std::string out;
  for (const std::string& reply : {inventory, std::string(), std::string(), std::string()}) {
    out.push_back(static_cast<char>(reply.size() & 0xff));
    out.push_back(static_cast<char>(reply.size() >> 8));
    out += reply;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Kept loaded for good: libFuzzer counts coverage in the plugin's memory, which a dlclose at
  // the scheduler's close would unmap under it.
  FUZZ_CHECK(::dlopen(TESSERA_FUZZ_REPLY_PLUGIN, RTLD_NOW | RTLD_NODELETE) != nullptr);
  // The harness itself works: a well-formed inventory opens a scheduler on the plugin.
  tessera::v1::Inventory inventory;
  tessera::v1::NodeSpec* node = inventory.add_nodes();
  node->set_name("n0");
  node->set_cpu_milli(8000);
  node->set_memory_mib(16384);
  auto scheduler = OpenOnReplies(Replies(inventory.SerializeAsString()));
  if (!scheduler.ok())
    std::fprintf(stderr, "%s\n", std::string(scheduler.status().message()).c_str());
  FUZZ_CHECK(scheduler.ok());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto scheduler = OpenOnReplies(std::string(reinterpret_cast<const char*>(data), size));
  if (!scheduler.ok()) {
    FUZZ_CHECK(!scheduler.status().message().empty());
    return 0;
  }
  tessera::v1::JobSpec spec;
  spec.set_queue("default");
  spec.set_name("fuzz");
  spec.mutable_task()->set_cpu_milli(1000);
  spec.mutable_task()->set_memory_mib(1024);
  spec.mutable_task()->set_gpu_count(1);
  (void)(*scheduler)->Submit(spec);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  return 0;
}
