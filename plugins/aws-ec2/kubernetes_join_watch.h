// KubernetesJoinWatch: how the aws-ec2 provider knows that an instance it launched has joined.
//
// An instance joins as a Kubernetes node (plugins/aws-ec2/README.md, "How a new instance
// joins"): its boot script (the launch template's or the group's user data) starts kubelet with
// the label tessera.io/ec2-instance-id=<its instance id>, read from the instance metadata
// service, and the Kubernetes backend then offers the node to the scheduler like any other.
// List() reads the Nodes that carry that label (one list call, paged) and says, per instance
// id, the node's name and whether its Ready condition is True. The provider counts an instance
// as joined once its node is Ready. Thread-safe as the client is.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ec2_provider_config.h"
#include "kube/kube_client.h"
#include "tessera/plugin/plugin.h"

namespace tessera::aws_ec2 {

inline constexpr char kInstanceIdLabel[] = "tessera.io/ec2-instance-id";

struct JoinedNode {
  std::string name;  // the Node's metadata.name: the scheduler's node name
  bool ready = false;
};

class KubernetesJoinWatch {
 public:
  // Errors: INVALID_ARGUMENT naming join.kubeconfig for a config that cannot be used.
  static plugin::PluginStatus Create(const JoinConfig& config,
                                     std::unique_ptr<KubernetesJoinWatch>* out);

  // Instance id -> its node, for every Node labelled tessera.io/ec2-instance-id. Errors:
  // UNAVAILABLE with the API server's error.
  plugin::PluginStatus List(std::map<std::string, JoinedNode>* out);

 private:
  explicit KubernetesJoinWatch(std::unique_ptr<kube::KubeClient> client)
      : client_(std::move(client)) {}
  std::unique_ptr<kube::KubeClient> client_;
};

}  // namespace tessera::aws_ec2
