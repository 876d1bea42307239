#include "sim_capacity.h"

#include <limits>
#include <utility>

#include "sim_cluster.h"

namespace tessera::sim {
namespace {

plugin::PluginStatus Invalid(std::string message) {
  return plugin::PluginStatus::Error(TESSERA_INVALID_ARGUMENT, std::move(message));
}

int64_t AfterMs(int64_t now_us, int64_t ms) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (ms > (kMax - now_us) / 1000) return kMax;
  return now_us + ms * 1000;
}

}  // namespace

SimCapacity::SimCapacity(std::vector<CapacityGroup> groups) : groups_(std::move(groups)) {
  for (size_t g = 0; g < groups_.size(); ++g) group_index_[groups_[g].group.name()] = g;
  next_index_.assign(groups_.size(), 0);
  live_or_pending_.assign(groups_.size(), 0);
}

v1::NodeGroups SimCapacity::Groups() const {
  v1::NodeGroups out;
  for (const CapacityGroup& g : groups_) *out.add_groups() = g.group;
  return out;
}

plugin::PluginStatus SimCapacity::Provision(const v1::ProvisionRequest& request, int64_t now_us) {
  if (request.request_id().empty()) return Invalid("request_id: must not be empty");
  if (requests_.count(request.request_id()) != 0) return plugin::PluginStatus::Ok();
  auto found = group_index_.find(request.node_group());
  if (found == group_index_.end()) {
    return Invalid("node_group: no node group '" + request.node_group() + "'");
  }
  if (request.count() <= 0) {
    return Invalid("count: must be > 0, got " + std::to_string(request.count()));
  }
  const size_t g = found->second;
  const CapacityGroup& group = groups_[g];
  Request& accepted = requests_[request.request_id()];
  accepted.group = g;
  accepted.count = request.count();
  if (group.provisions_fail) {
    accepted.failure = "node group '" + group.group.name() + "' has no capacity (provisions_fail)";
  } else if (live_or_pending_[g] + request.count() > group.group.max_nodes()) {
    accepted.failure = "node group '" + group.group.name() + "' is at its max_nodes " +
                       std::to_string(group.group.max_nodes()) + " (" +
                       std::to_string(live_or_pending_[g]) + " there or on their way)";
  } else {
    live_or_pending_[g] += request.count();
  }
  timeline_.emplace(AfterMs(now_us, group.provision_delay_ms),
                    Item{What::kEndRequest, request.request_id(), ""});
  return plugin::PluginStatus::Ok();
}

plugin::PluginStatus SimCapacity::Deprovision(const v1::DeprovisionRequest& request,
                                              int64_t now_us) {
  for (int i = 0; i < request.nodes_size(); ++i) {
    if (nodes_.count(request.nodes(i)) == 0) {
      return Invalid("nodes[" + std::to_string(i) + "]: '" + request.nodes(i) +
                     "' is not a node this provider added");
    }
  }
  for (const std::string& node : request.nodes()) {
    // A notice or reclaim still scheduled for it no longer applies.
    for (auto it = timeline_.begin(); it != timeline_.end();) {
      it = it->second.node == node ? timeline_.erase(it) : std::next(it);
    }
    timeline_.emplace(now_us, Item{What::kReclaim, "", node});
  }
  return plugin::PluginStatus::Ok();
}

std::vector<SimCapacity::Due> SimCapacity::TakeDue(int64_t now_us) {
  std::vector<Due> due;
  while (!timeline_.empty() && timeline_.begin()->first <= now_us) {
    const auto [at_us, item] = *timeline_.begin();
    timeline_.erase(timeline_.begin());
    due.push_back(Take(at_us, item));
  }
  return due;
}

int64_t SimCapacity::NextDueUs() const { return timeline_.empty() ? 0 : timeline_.begin()->first; }

SimCapacity::Due SimCapacity::Take(int64_t at_us, const Item& item) {
  Due due;
  due.at_us = at_us;
  v1::BackendEvent event;
  event.set_time_us(at_us);
  switch (item.what) {
    case What::kEndRequest: {
      const Request& request = requests_.at(item.request_id);
      const CapacityGroup& group = groups_[request.group];
      event.set_request_id(item.request_id);
      if (!request.failure.empty()) {
        event.set_kind(v1::BackendEvent::PROVISION_FAILED);
        event.set_message(request.failure);
        break;
      }
      event.set_kind(v1::BackendEvent::PROVISION_COMPLETED);
      for (int n = 0; n < request.count; ++n) {
        v1::NodeSpec node = ExpandNode(group.nodes, next_index_[request.group]++);
        nodes_[node.name()] = request.group;
        event.add_nodes(node.name());
        if (group.group.market() == v1::SPOT && group.interrupt_after_ms > 0) {
          const int64_t notice_us = AfterMs(at_us, group.interrupt_after_ms);
          timeline_.emplace(notice_us, Item{What::kNotice, "", node.name()});
          timeline_.emplace(AfterMs(notice_us, group.interruption_notice_ms),
                            Item{What::kReclaim, "", node.name()});
        }
        due.join.push_back(std::move(node));
      }
      event.set_message(std::to_string(request.count) + " node(s) of group '" + group.group.name() +
                        "' joined");
      break;
    }
    case What::kNotice: {
      const CapacityGroup& group = groups_[nodes_.at(item.node)];
      event.set_kind(v1::BackendEvent::SPOT_INTERRUPTION);
      event.set_node(item.node);
      event.set_deadline_us(AfterMs(at_us, group.interruption_notice_ms));
      event.set_message("spot node '" + item.node + "' is taken back in " +
                        std::to_string(group.interruption_notice_ms / 1000) + " s");
      break;
    }
    case What::kReclaim: {
      auto node = nodes_.find(item.node);
      if (node == nodes_.end()) return due;  // taken back already.
      --live_or_pending_[node->second];
      nodes_.erase(node);
      due.leave.push_back(item.node);
      return due;
    }
  }
  due.events.push_back(std::move(event));
  return due;
}

}  // namespace tessera::sim
