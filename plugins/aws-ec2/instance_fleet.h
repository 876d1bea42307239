// InstanceFleet: what the aws-ec2 provider knows of its instances and provisioning requests,
// and the rules that move them along; no I/O. The provider's worker feeds it what EC2 and
// Kubernetes say (Observe, Joined) and the host clock, and sends the events it hands back.
//
// An instance is tracked from its launch (or its adoption: found by the tessera:cluster tag
// after a restart) until it is gone. It counts as joined once its Kubernetes node is Ready; one
// not joined join_timeout after it was launched or adopted is to be terminated
// (TakeJoinTimeouts), and counted. A joined spot instance is interrupted when its spot request
// shows EC2's two-minute notice (Noticed: SPOT_INTERRUPTION for its node, the deadline two
// minutes after the notice) or, the notice missed, when EC2 stops or terminates it without being
// asked (Observe: the deadline now); once per instance. A request ends once each of its
// instances joined or is gone: PROVISION_COMPLETED naming the nodes that joined (fewer than
// asked when capacity ran out), else PROVISION_FAILED naming each error and timeout.
// Not thread-safe: the provider's mutex guards it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "aws/ec2_types.h"
#include "kubernetes_join_watch.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::aws_ec2 {

struct TrackedInstance {
  std::string id;
  std::string group;
  std::string request_id;  // empty for an adopted instance whose request is not under way
  std::string instance_type;
  std::string zone;
  bool spot = false;
  int64_t since_us = 0;  // launched or adopted, host clock
  std::string node;      // set once joined
  bool terminating = false;
  bool interruption_sent = false;  // SPOT_INTERRUPTION emitted for its node
};

struct ProvisionState {
  std::string group;
  int count = 0;
  bool launched = false;  // its RunInstances calls are done
  bool ended = false;
  std::vector<std::string> errors;
  std::set<std::string> instances;  // still tracked
  std::vector<std::string> joined_nodes;
};

class InstanceFleet {
 public:
  // A request accepted now; false if its id was seen before (nothing to do).
  bool Accept(const std::string& request_id, const std::string& group, int count);
  // Requests accepted and not launched yet, oldest first.
  std::vector<std::string> Unlaunched() const;
  const ProvisionState* Request(const std::string& request_id) const;
  // Nodes of `group` there or on their way (for max_nodes).
  int LiveInGroup(const std::string& group) const;

  // The launch of `request_id` is done: these instances (maybe none) and these errors.
  void Launched(const std::string& request_id, const std::vector<aws::Ec2Instance>& instances,
                const std::vector<std::string>& errors, int64_t now_us);
  // EC2's view of every instance tagged with this cluster: unknown live ones are adopted
  // (returned), tracked ones gone are dropped (a spot one not asked to go is an interruption).
  std::vector<std::string> Observe(const std::vector<aws::Ec2Instance>& instances, int64_t now_us,
                                   std::vector<v1::BackendEvent>* events);
  // Joined spot instances not being terminated and not yet interrupted: those whose spot
  // requests are worth reading for a notice. (One not joined yet is read once it joins: EC2
  // keeps the notice in the status until it acts.)
  std::vector<std::string> SpotInstancesAwaitingNotice() const;
  // EC2's spot requests of such instances: each marked for termination, stop or hibernation
  // gives SPOT_INTERRUPTION for its node, deadline_us from the notice's updateTime
  // (aws::SpotNoticeDeadlineUs, mapped through `wall_now_unix_us` onto the host clock `now_us`).
  void Noticed(const std::vector<aws::SpotInstanceRequest>& requests, int64_t now_us,
               long long wall_now_unix_us, std::vector<v1::BackendEvent>* events);
  // Kubernetes' view: instances whose node is Ready join.
  void Joined(const std::map<std::string, JoinedNode>& nodes);
  // Instances past the join timeout, marked terminating and counted.
  std::vector<std::string> TakeJoinTimeouts(int64_t now_us, int64_t timeout_us);
  // Marks the instances of these nodes terminating; INVALID_ARGUMENT-worthy names go in
  // `unknown` (and nothing is marked then).
  std::vector<std::string> Deprovision(const std::vector<std::string>& nodes,
                                       std::vector<std::string>* unknown);
  // Requests that can end now, as their events.
  std::vector<v1::BackendEvent> TakeEnded(int64_t now_us);

  int64_t join_timeouts() const { return join_timeouts_; }
  const std::map<std::string, TrackedInstance>& instances() const { return instances_; }

 private:
  void Forget(const std::string& instance_id, const std::string& why);

  std::map<std::string, TrackedInstance> instances_;
  std::map<std::string, ProvisionState> requests_;
  std::vector<std::string> order_;  // request ids in acceptance order
  int64_t join_timeouts_ = 0;
};

}  // namespace tessera::aws_ec2
