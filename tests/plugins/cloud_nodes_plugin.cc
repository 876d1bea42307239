// cloud_nodes: the executor through which the pool's machines join (cloud_pool.h).
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "cloud_pool.h"
#include "tessera/plugin/plugin.h"

namespace tessera::testing::cloud_pool {
namespace {

using tessera::plugin::PluginStatus;
namespace v1 = tessera::v1;

// How often it looks at the pool, on the host's clock, as a watcher of a cluster API would.
constexpr int64_t kLookEveryUs = 5'000'000;

class CloudNodes : public tessera::plugin::Plugin {
 public:
  explicit CloudNodes(tessera::plugin::Host host) : Plugin(host) {}

  PluginStatus Init(const std::string& config) override {
    pool_ = ConfigValue(config, "pool");
    if (pool_.empty()) return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "pool: required");
    group_label_ = ConfigValue(config, "group_label") == "1";
    return PluginStatus::Ok();
  }

  PluginStatus Inventory(v1::Inventory* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    listed_ = Present(host().NowUs());
    for (const std::string& name : listed_) {
      v1::NodeSpec* node = out->add_nodes();
      node->set_name(name);
      node->set_cpu_milli(32000);
      node->set_memory_mib(131072);
      for (int g = 0; g < 4; ++g) {
        v1::GpuDevice* gpu = node->add_gpus();
        gpu->set_index(g);
        gpu->set_model("L4");
        gpu->set_memory_mib(23034);
        gpu->set_healthy(true);
      }
      if (group_label_) (*node->mutable_labels())["tessera.io/node-group"] = kGroup;
    }
    return PluginStatus::Ok();
  }

  PluginStatus Launch(const v1::LaunchTask& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t duration_us = request.simulation().duration_ms() * 1000;
    tasks_[KeyOf(request.ref())] = {request.ref(),
                                    duration_us > 0 ? host().NowUs() + duration_us : 0};
    v1::BackendEvent started;
    started.set_kind(v1::BackendEvent::TASK_STARTED);
    *started.mutable_ref() = request.ref();
    host().Emit(started);
    return PluginStatus::Ok();
  }

  PluginStatus Stop(const v1::StopTask& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tasks_.find(KeyOf(request.ref()));
    if (it == tasks_.end()) return PluginStatus::Ok();
    Exit(it->second.ref, 143);
    tasks_.erase(it);
    return PluginStatus::Ok();
  }

  PluginStatus Reconcile(v1::LiveTasks* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, task] : tasks_) *out->add_tasks() = task.ref;
    return PluginStatus::Ok();
  }

  PluginStatus PollEvents(v1::BackendEvents* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = host().NowUs();
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (it->second.ends_us > 0 && it->second.ends_us <= now) {
        Exit(it->second.ref, 0);
        it = tasks_.erase(it);
      } else {
        ++it;
      }
    }
    // Machines that joined or went since the last inventory: the host reads it again.
    if (Present(now) != listed_) {
      out->add_events()->set_kind(v1::BackendEvent::INVENTORY_CHANGED);
    }
    int64_t next = now + kLookEveryUs;
    for (const auto& [key, task] : tasks_) {
      if (task.ends_us > now && task.ends_us < next) next = task.ends_us;
    }
    out->set_next_event_us(next);
    return PluginStatus::Ok();
  }

 private:
  using Key = std::tuple<uint64_t, int32_t, int32_t>;
  struct Task {
    v1::TaskRef ref;
    int64_t ends_us = 0;
  };
  static Key KeyOf(const v1::TaskRef& r) { return {r.job(), r.attempt(), r.task()}; }

  std::set<std::string> Present(int64_t now) const {
    std::set<std::string> present;
    for (const Machine& m : Read(pool_)) {
      if (m.join_at_us <= now && m.gone_at_us == 0) present.insert(m.name);
    }
    return present;
  }

  void Exit(const v1::TaskRef& ref, int code) {
    v1::BackendEvent exited;
    exited.set_kind(v1::BackendEvent::TASK_EXITED);
    *exited.mutable_ref() = ref;
    exited.set_exit_code(code);
    host().Emit(exited);
  }

  std::string pool_;
  bool group_label_ = false;
  std::mutex mu_;
  std::set<std::string> listed_;  // in the last inventory.
  std::map<Key, Task> tasks_;
};

}  // namespace
}  // namespace tessera::testing::cloud_pool

TESSERA_PLUGIN(tessera::testing::cloud_pool::CloudNodes, "cloud-nodes", "0.1.0",
               TESSERA_PLUGIN_KIND_EXECUTOR)
