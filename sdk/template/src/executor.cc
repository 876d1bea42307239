// The noop executor: a minimal but complete Tessera executor plugin, the starting point for a
// real one. It offers a few identical nodes, and its tasks "run" (doing nothing) until they are
// stopped. It reports every start and exit through the host's event callback, answers
// reconcile with the tasks alive, and rejects a bad configuration with INVALID_ARGUMENT.
//
// Its name is PLUGIN_NAME, which CMakeLists.txt defines (the one place to rename the plugin).
//
// Configuration (the bytes the operator gives; the format is the plugin's choice): key=value
// lines, '#' starts a comment.
//   node_prefix=<name>  nodes are named <prefix>-0, <prefix>-1, ...; default: the plugin's name
//   nodes=1             how many nodes, 1..1000
//   gpus_per_node=0     GPUs per node, 0..16
//
// Failing one task: a launch that cannot run (no such node or GPU) is logged and reported as a
// LAUNCH_REJECTED event (not retryable: the request itself is wrong), and Launch returns Ok.
// Returning an error instead would place the job again and again, and a few errors in a row
// mark the whole plugin unhealthy (abi.h): every node cordoned, every job requeued. Errors are
// for a failing plugin only.
//
// Threads: the host calls one method at a time, except PollEvents and Telemetry, which may
// overlap any call; the task table is guarded by a mutex for them.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "tessera/plugin/key_value_config.h"
#include "tessera/plugin/plugin.h"

namespace noop {

using tessera::plugin::Host;
using tessera::plugin::PluginStatus;
namespace v1 = tessera::v1;

#ifndef PLUGIN_NAME
#error "PLUGIN_NAME must be defined (CMakeLists.txt does)"
#endif

struct Config {
  std::string node_prefix = PLUGIN_NAME;
  int nodes = 1;
  int gpus_per_node = 0;
};

// Parses a node index in [0, last]; false for anything else.
bool ParseIndex(std::string_view text, int last, int* out) {
  if (text.empty() || text.size() > 9) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value > last) return false;
  *out = value;
  return true;
}

// The SDK's KeyValueConfig does the parsing and names the line or key of any error.
PluginStatus ParseConfig(std::string_view text, Config* config) {
  tessera::plugin::KeyValueConfig kv;
  PluginStatus status =
      tessera::plugin::KeyValueConfig::Parse(text, {"node_prefix", "nodes", "gpus_per_node"}, &kv);
  if (status.ok()) status = kv.String("node_prefix", &config->node_prefix);
  if (status.ok()) status = kv.Integer("nodes", 1, 1000, &config->nodes);
  if (status.ok()) status = kv.Integer("gpus_per_node", 0, 16, &config->gpus_per_node);
  if (!status.ok()) return status;
  for (char c : config->node_prefix) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) {
      return PluginStatus::Error(
          TESSERA_INVALID_ARGUMENT,
          "node_prefix: may hold only a-z, 0-9 and '-', got '" + config->node_prefix + "'");
    }
  }
  return PluginStatus::Ok();
}

class NoopExecutor : public tessera::plugin::Plugin {
 public:
  explicit NoopExecutor(Host host) : Plugin(host) {}

  PluginStatus Init(const std::string& config) override {
    PluginStatus status = ParseConfig(config, &config_);
    if (!status.ok()) return status;
    host().Log(TESSERA_LOG_INFO,
               std::string(PLUGIN_NAME) + ": " + std::to_string(config_.nodes) + " nodes");
    return PluginStatus::Ok();
  }

  PluginStatus Inventory(v1::Inventory* out) override {
    for (int n = 0; n < config_.nodes; ++n) {
      v1::NodeSpec* node = out->add_nodes();
      node->set_name(NodeName(n));
      node->set_cpu_milli(16'000);
      node->set_memory_mib(64 * 1024);
      for (int g = 0; g < config_.gpus_per_node; ++g) {
        v1::GpuDevice* gpu = node->add_gpus();
        gpu->set_index(g);
        gpu->set_model("NOOP-16GB");
        gpu->set_memory_mib(16 * 1024);
        gpu->set_uuid("GPU-" + NodeName(n) + "-" + std::to_string(g));
        gpu->set_healthy(true);
      }
    }
    return PluginStatus::Ok();
  }

  PluginStatus Launch(const v1::LaunchTask& request) override {
    const int node = NodeIndex(request.node());
    if (node < 0) return Reject(request.ref(), "no node '" + request.node() + "'");
    for (int gpu : request.gpus()) {
      if (gpu < 0 || gpu >= config_.gpus_per_node) {
        return Reject(request.ref(), "no GPU " + std::to_string(gpu) + " on " + request.node());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Idempotent: a task that exists is not started twice.
      if (!tasks_.emplace(Key(request.ref()), request.ref()).second) return PluginStatus::Ok();
    }
    Report(v1::BackendEvent::TASK_STARTED, request.ref(), 0, "started on " + request.node());
    return PluginStatus::Ok();
  }

  PluginStatus Stop(const v1::StopTask& request) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Stopping a task that is gone succeeds, and reports nothing.
      if (tasks_.erase(Key(request.ref())) == 0) return PluginStatus::Ok();
    }
    Report(v1::BackendEvent::TASK_EXITED, request.ref(), kStoppedExitCode, "stopped");
    return PluginStatus::Ok();
  }

  PluginStatus Reconcile(v1::LiveTasks* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, ref] : tasks_) *out->add_tasks() = ref;
    return PluginStatus::Ok();
  }

  // Every event goes through the callback, so there is never anything to poll.
  PluginStatus PollEvents(v1::BackendEvents* out) override { return PluginStatus::Ok(); }

  PluginStatus Telemetry(v1::TelemetryBatch* out) override {
    const int64_t now = host().NowUs();
    for (int n = 0; n < config_.nodes; ++n) {
      for (int g = 0; g < config_.gpus_per_node; ++g) {
        v1::GpuTelemetry* reading = out->add_readings();
        reading->set_node(NodeName(n));
        reading->set_gpu(g);
        reading->set_time_us(now);
        reading->set_temperature_c(35.0);
      }
    }
    return PluginStatus::Ok();
  }

 private:
  // What a process killed by SIGTERM exits with.
  static constexpr int32_t kStoppedExitCode = 128 + 15;
  // Fails one launch, and only that one: logs why, reports the launch rejected (for good: the
  // request names what this backend does not have), answers Ok.
  PluginStatus Reject(const v1::TaskRef& ref, const std::string& why) const {
    host().Log(TESSERA_LOG_WARN, "launch of job " + std::to_string(ref.job()) + " attempt " +
                                     std::to_string(ref.attempt()) + " task " +
                                     std::to_string(ref.task()) + " rejected: " + why);
    v1::BackendEvent event;
    event.set_kind(v1::BackendEvent::LAUNCH_REJECTED);
    *event.mutable_ref() = ref;
    event.set_retryable(false);
    event.set_time_us(host().NowUs());
    event.set_message(why);
    host().Emit(event);
    return PluginStatus::Ok();
  }

  using TaskKey = std::tuple<uint64_t, int32_t, int32_t>;
  static TaskKey Key(const v1::TaskRef& ref) { return {ref.job(), ref.attempt(), ref.task()}; }

  std::string NodeName(int n) const { return config_.node_prefix + "-" + std::to_string(n); }
  int NodeIndex(const std::string& name) const {
    const std::string prefix = config_.node_prefix + "-";
    int n = -1;
    if (name.rfind(prefix, 0) != 0 ||
        !ParseIndex(std::string_view(name).substr(prefix.size()), config_.nodes - 1, &n) ||
        NodeName(n) != name) {
      return -1;
    }
    return n;
  }

  void Report(v1::BackendEvent::Kind kind, const v1::TaskRef& ref, int32_t exit_code,
              const std::string& message) const {
    v1::BackendEvent event;
    event.set_kind(kind);
    *event.mutable_ref() = ref;
    event.set_exit_code(exit_code);
    event.set_time_us(host().NowUs());
    event.set_message(message);
    host().Emit(event);
  }

  Config config_;
  std::mutex mu_;
  std::map<TaskKey, v1::TaskRef> tasks_;
};

}  // namespace noop

TESSERA_PLUGIN(noop::NoopExecutor, PLUGIN_NAME, PLUGIN_VERSION, TESSERA_PLUGIN_KIND_EXECUTOR)
