// cloud_provider: the capacity provider of the pool (cloud_pool.h).
#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "cloud_pool.h"
#include "tessera/plugin/plugin.h"

namespace tessera::testing::cloud_pool {
namespace {

using tessera::plugin::PluginStatus;
namespace v1 = tessera::v1;

constexpr int64_t kReclaimAfterNoticeUs = 120'000'000;  // EC2's two minutes.

int64_t Ms(const std::string& config, const std::string& key, int64_t fallback) {
  const std::string v = ConfigValue(config, key);
  return v.empty() ? fallback : std::stoll(v);
}

class CloudProvider : public tessera::plugin::Plugin {
 public:
  explicit CloudProvider(tessera::plugin::Host host) : Plugin(host) {}

  PluginStatus Init(const std::string& config) override {
    pool_ = ConfigValue(config, "pool");
    if (pool_.empty()) return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "pool: required");
    spot_ = ConfigValue(config, "market") == "spot";
    price_ = std::stod(ConfigValue(config, "price", "2.0"));
    join_delay_us_ = Ms(config, "join_delay_ms", 30'000) * 1000;
    complete_after_us_ = Ms(config, "complete_after_ms", 5'000) * 1000;
    notice_after_us_ = Ms(config, "notice_after_ms", 0) * 1000;
    also_name_ = ConfigValue(config, "also_name");
    return PluginStatus::Ok();
  }

  // An executor with no nodes (see cloud_pool.h): nothing is ever placed here.
  PluginStatus Inventory(v1::Inventory*) override { return PluginStatus::Ok(); }
  PluginStatus Reconcile(v1::LiveTasks*) override { return PluginStatus::Ok(); }
  PluginStatus Launch(const v1::LaunchTask&) override {
    return PluginStatus::Error(TESSERA_FAILED_PRECONDITION, "launch: this provider has no nodes");
  }
  PluginStatus Stop(const v1::StopTask&) override { return PluginStatus::Ok(); }

  PluginStatus NodeGroups(v1::NodeGroups* out) override {
    v1::NodeGroup* group = out->add_groups();
    group->set_name(kGroup);
    v1::NodeSpec* shape = group->mutable_shape();
    shape->set_name(kGroup);  // not a prefix of the machines' names: they are the cloud's own.
    shape->set_cpu_milli(32000);
    shape->set_memory_mib(131072);
    for (int g = 0; g < 4; ++g) {
      v1::GpuDevice* gpu = shape->add_gpus();
      gpu->set_index(g);
      gpu->set_model("L4");
      gpu->set_memory_mib(23034);
      gpu->set_healthy(true);
    }
    group->set_price_per_hour(price_);
    group->set_max_nodes(8);
    group->set_market(spot_ ? v1::SPOT : v1::ON_DEMAND);
    return PluginStatus::Ok();
  }

  PluginStatus Provision(const v1::ProvisionRequest& request, v1::ProvisionResult*) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (request.node_group() != kGroup) {
      return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                                 "node_group: no node group '" + request.node_group() + "'");
    }
    if (requests_.count(request.request_id()) != 0) return PluginStatus::Ok();  // idempotent.
    std::vector<Machine> machines = Read(pool_);
    const int64_t join_at = host().NowUs() + join_delay_us_;
    Request& r = requests_[request.request_id()];
    r.complete_at_us = join_at + complete_after_us_;
    for (int i = 0; i < request.count(); ++i) {
      machines.push_back({MachineName(machines.size()), join_at, 0});
      r.nodes.push_back(machines.back().name);
    }
    Write(pool_, machines);
    return PluginStatus::Ok();
  }

  PluginStatus Deprovision(const v1::DeprovisionRequest& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Machine> machines = Read(pool_);
    for (Machine& m : machines) {
      const bool named = std::find(request.nodes().begin(), request.nodes().end(), m.name) !=
                         request.nodes().end();
      if (named && m.gone_at_us == 0) m.gone_at_us = host().NowUs();
    }
    Write(pool_, machines);
    return PluginStatus::Ok();
  }

  PluginStatus PollEvents(v1::BackendEvents* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = host().NowUs();
    int64_t next = 0;
    auto later = [&next, now](int64_t at) {
      if (at > now && (next == 0 || at < next)) next = at;
    };
    for (auto& [id, r] : requests_) {
      if (r.done) continue;
      if (r.complete_at_us > now) {
        later(r.complete_at_us);
        continue;
      }
      r.done = true;
      v1::BackendEvent* completed = out->add_events();
      completed->set_kind(v1::BackendEvent::PROVISION_COMPLETED);
      completed->set_request_id(id);
      for (const std::string& node : r.nodes) completed->add_nodes(node);
      if (!also_name_.empty()) completed->add_nodes(also_name_);
      completed->set_message(std::to_string(r.nodes.size()) + " machine(s) joined");
    }
    if (spot_ && notice_after_us_ > 0) Interrupt(now, out, later);
    out->set_next_event_us(next);
    return PluginStatus::Ok();
  }

 private:
  struct Request {
    std::vector<std::string> nodes;
    int64_t complete_at_us = 0;
    bool done = false;
  };

  // Spot notices notice_after_us_ after a machine joined; the machine goes two minutes later.
  template <typename Later>
  void Interrupt(int64_t now, v1::BackendEvents* out, Later& later) {
    std::vector<Machine> machines = Read(pool_);
    bool changed = false;
    for (Machine& m : machines) {
      if (m.gone_at_us != 0) continue;
      const int64_t notice_at = m.join_at_us + notice_after_us_;
      if (notice_at > now) {
        later(notice_at);
        continue;
      }
      if (noticed_.insert(m.name).second) {
        v1::BackendEvent* notice = out->add_events();
        notice->set_kind(v1::BackendEvent::SPOT_INTERRUPTION);
        notice->set_node(m.name);
        notice->set_deadline_us(notice_at + kReclaimAfterNoticeUs);
        notice->set_message("instance-action: terminate");
      }
      if (notice_at + kReclaimAfterNoticeUs <= now) {
        m.gone_at_us = now;
        changed = true;
      } else {
        later(notice_at + kReclaimAfterNoticeUs);
      }
    }
    if (changed) Write(pool_, machines);
  }

  std::string pool_;
  bool spot_ = false;
  double price_ = 2.0;
  int64_t join_delay_us_ = 0;
  int64_t complete_after_us_ = 0;
  int64_t notice_after_us_ = 0;
  std::string also_name_;
  std::mutex mu_;
  std::map<std::string, Request> requests_;
  std::set<std::string> noticed_;
};

}  // namespace
}  // namespace tessera::testing::cloud_pool

TESSERA_PLUGIN(tessera::testing::cloud_pool::CloudProvider, "cloud-provider", "0.1.0",
               TESSERA_PLUGIN_KIND_CAPACITY_PROVIDER | TESSERA_PLUGIN_KIND_EXECUTOR)
