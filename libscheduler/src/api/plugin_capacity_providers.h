// PluginCapacityProviders: the backends that are capacity providers (a plugin with
// on_provision), as the autoscaler sees them (elastic/capacity_providers.h). Requests go to the
// backend's current executor (a restart replaces it); the groups are those its plugin reported
// at its start. Strand only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/plugin_backend.h"
#include "elastic/capacity_providers.h"

namespace tessera {

class PluginCapacityProviders final : public CapacityProviders {
 public:
  explicit PluginCapacityProviders(const std::vector<std::unique_ptr<PluginBackend>>& backends)
      : backends_(backends) {}

  std::vector<BurstGroup> Groups() const override {
    std::vector<BurstGroup> out;
    for (const auto& backend : backends_) {
      if (!backend->info().capacity_provider) continue;
      const v1::Backend status = backend->Status();  // the loop reads it: keep it alive.
      for (const v1::NodeGroup& g : status.node_groups()) out.push_back({backend->name(), g});
    }
    return out;
  }

  void Provision(const std::string& backend, const std::string& group, int count,
                 const std::string& request_id) override {
    if (PluginBackend* b = Find(backend)) b->executor()->Provision(group, count, request_id);
  }

  void Deprovision(const std::string& backend, const std::vector<std::string>& nodes) override {
    if (PluginBackend* b = Find(backend)) b->executor()->Deprovision(nodes);
  }

 private:
  PluginBackend* Find(const std::string& name) const {
    for (const auto& backend : backends_) {
      if (backend->name() == name) return backend.get();
    }
    return nullptr;
  }

  const std::vector<std::unique_ptr<PluginBackend>>& backends_;
};

}  // namespace tessera
