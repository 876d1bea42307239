#include "instance_fleet.h"

#include "aws/spot_interruption.h"
#include "launch_fallback.h"

namespace tessera::aws_ec2 {
namespace {

std::string TagValue(const aws::Ec2Instance& instance, const std::string& key) {
  for (const aws::Tag& tag : instance.tags) {
    if (tag.key == key) return tag.value;
  }
  return {};
}

bool Live(const aws::Ec2Instance& instance) {
  return instance.state.name == "pending" || instance.state.name == "running";
}

}  // namespace

bool InstanceFleet::Accept(const std::string& request_id, const std::string& group, int count) {
  if (requests_.count(request_id) != 0) return false;
  ProvisionState& state = requests_[request_id];
  state.group = group;
  state.count = count;
  // Instances adopted after a restart that this request launched before it: they are its, and
  // it launches nothing more.
  for (auto& [id, instance] : instances_) {
    if (instance.request_id == request_id) {
      state.instances.insert(id);
      if (!instance.node.empty()) state.joined_nodes.push_back(instance.node);
      state.launched = true;
    }
  }
  order_.push_back(request_id);
  return true;
}

std::vector<std::string> InstanceFleet::Unlaunched() const {
  std::vector<std::string> out;
  for (const std::string& id : order_) {
    const ProvisionState& state = requests_.at(id);
    if (!state.launched && !state.ended) out.push_back(id);
  }
  return out;
}

const ProvisionState* InstanceFleet::Request(const std::string& request_id) const {
  auto found = requests_.find(request_id);
  return found == requests_.end() ? nullptr : &found->second;
}

int InstanceFleet::LiveInGroup(const std::string& group) const {
  int live = 0;
  for (const auto& [id, instance] : instances_) {
    live += instance.group == group && !instance.terminating ? 1 : 0;
  }
  for (const auto& [id, state] : requests_) {
    if (state.group == group && !state.launched && !state.ended) live += state.count;
  }
  return live;
}

void InstanceFleet::Launched(const std::string& request_id,
                             const std::vector<aws::Ec2Instance>& instances,
                             const std::vector<std::string>& errors, int64_t now_us) {
  ProvisionState& state = requests_.at(request_id);
  state.launched = true;
  state.errors.insert(state.errors.end(), errors.begin(), errors.end());
  for (const aws::Ec2Instance& instance : instances) {
    TrackedInstance& tracked = instances_[instance.instance_id];
    tracked.id = instance.instance_id;
    tracked.group = state.group;
    tracked.request_id = request_id;
    tracked.instance_type = instance.instance_type;
    tracked.zone = instance.availability_zone;
    tracked.spot = instance.lifecycle == "spot";
    tracked.since_us = now_us;
    state.instances.insert(instance.instance_id);
  }
}

std::vector<std::string> InstanceFleet::Observe(const std::vector<aws::Ec2Instance>& instances,
                                                int64_t now_us,
                                                std::vector<v1::BackendEvent>* events) {
  std::vector<std::string> adopted;
  std::set<std::string> seen;
  for (const aws::Ec2Instance& instance : instances) {
    seen.insert(instance.instance_id);
    auto tracked = instances_.find(instance.instance_id);
    if (tracked == instances_.end()) {
      if (!Live(instance)) continue;
      TrackedInstance& fresh = instances_[instance.instance_id];
      fresh.id = instance.instance_id;
      fresh.group = TagValue(instance, kNodeGroupTag);
      fresh.request_id = TagValue(instance, kRequestIdTag);
      fresh.instance_type = instance.instance_type;
      fresh.zone = instance.availability_zone;
      fresh.spot = instance.lifecycle == "spot";
      fresh.since_us = now_us;
      if (auto request = requests_.find(fresh.request_id); request != requests_.end()) {
        request->second.instances.insert(fresh.id);
      }
      adopted.push_back(instance.instance_id);
      continue;
    }
    if (Live(instance)) continue;
    TrackedInstance& gone = tracked->second;
    if (gone.spot && !gone.terminating && !gone.node.empty() && !gone.interruption_sent) {
      // EC2 took it back and we missed its notice (it came and went between two reads, or the
      // reads failed). The node leaves now.
      v1::BackendEvent event;
      event.set_kind(v1::BackendEvent::SPOT_INTERRUPTION);
      event.set_node(gone.node);
      event.set_time_us(now_us);
      event.set_deadline_us(now_us);
      event.set_message("EC2 reports spot instance " + gone.id + " " + instance.state.name);
      events->push_back(std::move(event));
    }
    Forget(gone.id, gone.terminating ? "" : gone.id + " " + instance.state.name + " by EC2");
  }
  // A tracked instance EC2 no longer lists at all is gone too (terminated an hour ago or more),
  // unless it is new: EC2's DescribeInstances is eventually consistent, and may not list an
  // instance for a while after RunInstances returned it.
  constexpr int64_t kListingDelayUs = 120'000'000;
  for (auto it = instances_.begin(); it != instances_.end();) {
    const std::string id = it->first;
    const bool listed_late = now_us - it->second.since_us < kListingDelayUs;
    ++it;
    if (seen.count(id) == 0 && !listed_late) Forget(id, id + " no longer listed by EC2");
  }
  return adopted;
}

std::vector<std::string> InstanceFleet::SpotInstancesAwaitingNotice() const {
  std::vector<std::string> ids;
  for (const auto& [id, instance] : instances_) {
    if (instance.spot && !instance.node.empty() && !instance.terminating &&
        !instance.interruption_sent) {
      ids.push_back(id);
    }
  }
  return ids;
}

void InstanceFleet::Noticed(const std::vector<aws::SpotInstanceRequest>& requests, int64_t now_us,
                            long long wall_now_unix_us, std::vector<v1::BackendEvent>* events) {
  for (const aws::SpotInstanceRequest& request : requests) {
    const std::string action = aws::InterruptionActionOfStatus(request.status_code);
    if (action.empty()) continue;
    auto found = instances_.find(request.instance_id);
    if (found == instances_.end()) continue;
    TrackedInstance& instance = found->second;
    if (!instance.spot || instance.node.empty() || instance.terminating ||
        instance.interruption_sent) {
      continue;
    }
    instance.interruption_sent = true;
    v1::BackendEvent event;
    event.set_kind(v1::BackendEvent::SPOT_INTERRUPTION);
    event.set_node(instance.node);
    event.set_time_us(now_us);
    event.set_deadline_us(
        aws::SpotNoticeDeadlineUs(request.status_update_unix_us, now_us, wall_now_unix_us));
    event.set_message("EC2 will " + action + " spot instance " + instance.id + ": its request " +
                      request.spot_instance_request_id + " is " + request.status_code +
                      (request.status_update_time.empty()
                           ? " (no notice time: two minutes from now)"
                           : " since " + request.status_update_time));
    events->push_back(std::move(event));
  }
}

void InstanceFleet::Joined(const std::map<std::string, JoinedNode>& nodes) {
  for (auto& [id, instance] : instances_) {
    if (!instance.node.empty() || instance.terminating) continue;
    auto found = nodes.find(id);
    if (found == nodes.end() || !found->second.ready) continue;
    instance.node = found->second.name;
    if (auto request = requests_.find(instance.request_id); request != requests_.end()) {
      request->second.joined_nodes.push_back(instance.node);
    }
  }
}

std::vector<std::string> InstanceFleet::TakeJoinTimeouts(int64_t now_us, int64_t timeout_us) {
  std::vector<std::string> out;
  for (auto& [id, instance] : instances_) {
    if (!instance.node.empty() || instance.terminating || now_us - instance.since_us < timeout_us) {
      continue;
    }
    instance.terminating = true;
    ++join_timeouts_;
    out.push_back(id);
    if (auto request = requests_.find(instance.request_id); request != requests_.end()) {
      request->second.errors.push_back(id + " (" + instance.instance_type + " in " + instance.zone +
                                       ") did not join within " +
                                       std::to_string(timeout_us / 1'000'000) + " s: terminated");
      request->second.instances.erase(id);
    }
  }
  return out;
}

std::vector<std::string> InstanceFleet::Deprovision(const std::vector<std::string>& nodes,
                                                    std::vector<std::string>* unknown) {
  std::vector<std::string> ids;
  for (const std::string& node : nodes) {
    bool found = false;
    for (auto& [id, instance] : instances_) {
      if (instance.node == node && !instance.terminating) {
        ids.push_back(id);
        found = true;
        break;
      }
    }
    if (!found) unknown->push_back(node);
  }
  if (!unknown->empty()) return {};
  for (const std::string& id : ids) instances_[id].terminating = true;
  return ids;
}

void InstanceFleet::Forget(const std::string& instance_id, const std::string& why) {
  auto found = instances_.find(instance_id);
  if (found == instances_.end()) return;
  if (auto request = requests_.find(found->second.request_id); request != requests_.end()) {
    if (request->second.instances.erase(instance_id) != 0 && !why.empty() &&
        found->second.node.empty()) {
      request->second.errors.push_back(why + " before it joined");
    }
  }
  instances_.erase(found);
}

std::vector<v1::BackendEvent> InstanceFleet::TakeEnded(int64_t now_us) {
  std::vector<v1::BackendEvent> events;
  for (const std::string& id : order_) {
    ProvisionState& state = requests_.at(id);
    if (state.ended || !state.launched) continue;
    bool waiting = false;
    for (const std::string& instance : state.instances) {
      waiting = waiting || instances_.at(instance).node.empty();
    }
    if (waiting) continue;
    state.ended = true;
    v1::BackendEvent event;
    event.set_request_id(id);
    event.set_time_us(now_us);
    std::string refused;
    for (const std::string& error : state.errors) refused += (refused.empty() ? "" : "; ") + error;
    if (state.joined_nodes.empty()) {
      event.set_kind(v1::BackendEvent::PROVISION_FAILED);
      event.set_message("no node of group '" + state.group +
                        "' joined: " + (refused.empty() ? "no instance launched" : refused));
    } else {
      event.set_kind(v1::BackendEvent::PROVISION_COMPLETED);
      for (const std::string& node : state.joined_nodes) event.add_nodes(node);
      event.set_message(std::to_string(state.joined_nodes.size()) + " of " +
                        std::to_string(state.count) + " node(s) of group '" + state.group +
                        "' joined" + (refused.empty() ? "" : "; refused or lost: " + refused));
    }
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace tessera::aws_ec2
