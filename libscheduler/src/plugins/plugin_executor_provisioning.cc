// PluginExecutor, continued: a capacity provider's provisioning requests (ended by the plugin's
// event or by their deadline) and deprovisioning.
#include "plugins/plugin_executor.h"
#include "plugins/plugin_executor_shared.h"

namespace tessera {

using executor_detail::Bytes;
using executor_detail::CallError;
using executor_detail::StringSink;

uint64_t PluginExecutor::Provision(const std::string& node_group, int count,
                                   const std::string& request_id) {
  OperationTracker& operations = *shared_->wiring.operations;
  const int64_t now = shared_->wiring.clock->NowUs();
  const int64_t deadline_us = options_.provision_deadline.count() * 1000;
  const uint64_t op = operations.Begin(
      OperationKind::kProvision,
      "node group " + node_group + " x " + std::to_string(count) + ", request " + request_id, now,
      deadline_us);
  provisioning_[request_id].operation = op;
  if (unhealthy_ || library_->descriptor().tessera_plugin_on_provision == nullptr) {
    TakeProvisionEnd(request_id, false,
                     unhealthy_ ? "the plugin is unhealthy; on_provision was not called"
                                : "the plugin is not a capacity provider (it has no on_provision)");
    return op;
  }
  // The plugin ends the request with an event; the deadline ends it if the plugin does not.
  std::weak_ptr<Shared> weak = shared_;
  provisioning_[request_id].deadline =
      shared_->wiring.timers->Schedule(now + deadline_us, [this, weak, op] {
        // The executor lives while its Shared's hooks are set (the destructor clears them).
        if (auto s = weak.lock(); s && s->provision_ended) ExpireProvision(op);
      });
  v1::ProvisionRequest request;
  request.set_node_group(node_group);
  request.set_count(count);
  request.set_request_id(request_id);
  request.set_epoch(shared_->wiring.fencing_epoch);
  std::shared_ptr<Shared> shared = shared_;
  const std::string what = "on_provision";
  const bool queued = Queue(
      Lane::kOperations, what, [shared, what, request_id, bytes = request.SerializeAsString()] {
        StringSink out;
        StringSink error;
        const tessera_status code = shared->library->descriptor().tessera_plugin_on_provision(
            shared->instance, Bytes(bytes), &out.sink, &error.sink);
        if (code == TESSERA_OK) {
          shared->CallSucceeded(what);
          return;  // under way: its event ends it.
        }
        const std::string why = CallError(shared->library->info(), what, code, error.bytes);
        shared->CallFailed(what, why, nullptr);
        shared->Post([shared, request_id, why] {
          if (shared->provision_ended) shared->provision_ended(request_id, false, why, {});
        });
      });
  if (!queued) {
    TakeProvisionEnd(request_id, false, "the plugin is unhealthy; on_provision was not called");
    return op;
  }
  // As after a launch: the poll that follows tells a plugin on a virtual clock when the request
  // ends (next_event_us), which no earlier poll could.
  PostPoll();
  return op;
}

void PluginExecutor::TakeProvisionEnd(const std::string& request_id, bool succeeded,
                                      const std::string& why,
                                      const std::vector<std::string>& nodes) {
  auto it = provisioning_.find(request_id);
  if (it == provisioning_.end()) {
    // Not under way (a request of an earlier run, or one that timed out): only logged.
    LogInfo(shared_->wiring.log, "plugin '{}': provisioning {} {} (no request under way): {}",
            library_->info().name, request_id, succeeded ? "completed" : "failed", why);
    return;
  }
  const uint64_t op = it->second.operation;
  if (it->second.deadline) shared_->wiring.timers->Cancel(*it->second.deadline);
  provisioning_.erase(it);
  // False when it failed already, with the plugin (OperationTracker::FailAll): it still ends here.
  shared_->wiring.operations->End(op, succeeded, why);
  if (succeeded) {
    LogInfo(shared_->wiring.log, "plugin '{}': provisioning {} completed: {}",
            library_->info().name, request_id, why);
  } else {
    LogWarning(shared_->wiring.log, "plugin '{}': provisioning {} failed: {}",
               library_->info().name, request_id, why);
  }
  if (shared_->wiring.on_provisioned) {
    shared_->wiring.on_provisioned(request_id, succeeded, why, nodes);
  }
}

void PluginExecutor::ExpireProvision(uint64_t id) {
  for (auto& [request_id, provisioning] : provisioning_) {
    if (provisioning.operation != id) continue;
    provisioning.deadline.reset();           // it is running now.
    const std::string request = request_id;  // TakeProvisionEnd erases the entry.
    TakeProvisionEnd(request, false,
                     "timed out: no PROVISION_COMPLETED or PROVISION_FAILED within " +
                         std::to_string(options_.provision_deadline.count()) + " ms");
    return;
  }
}

void PluginExecutor::Deprovision(const std::vector<std::string>& nodes) {
  v1::DeprovisionRequest request;
  std::string subject = "node(s)";
  for (const std::string& node : nodes) {
    request.add_nodes(node);
    subject += " " + node;
  }
  request.set_epoch(shared_->wiring.fencing_epoch);
  PostRequest("on_deprovision", OperationKind::kDeprovision, std::move(subject), {},
              &library_->descriptor().tessera_plugin_on_deprovision, request.SerializeAsString());
  PostPoll();
}

}  // namespace tessera
