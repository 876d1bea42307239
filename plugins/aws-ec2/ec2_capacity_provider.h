// Ec2CapacityProvider: the aws-ec2 plugin, an ABI 1.1 capacity provider that rents EC2 GPU
// instances (plugins/aws-ec2/README.md).
//
// Init reads the config, finds credentials (credential_chain.h), checks every configured
// instance type against DescribeInstanceTypes and prices spot groups from
// DescribeSpotPriceHistory (node_group_catalog.h), and adopts the instances this cluster already
// has (DescribeInstances by the tessera:cluster tag), so a restarted plugin leaks none and
// launches nothing twice. Rejected or missing credentials fail Init with one message.
//
// Provision accepts at once; a worker thread launches (launch_fallback.h), then every
// poll_interval_ms looks at EC2 (instances of the cluster) and Kubernetes (their nodes), and
// moves the fleet on (instance_fleet.h): joins, join timeouts (terminated and counted in the
// log and the request's message), spot interruptions (the two-minute notice read from the spot
// requests of its joined spot instances, DescribeSpotInstanceRequests; else EC2's stop or
// termination seen in DescribeInstances), and the requests' PROVISION_COMPLETED /
// PROVISION_FAILED events. Deprovision terminates the instances of the nodes named. Events
// are emitted through the host's callback. The host calls one method at a time; a mutex
// guards what the worker shares.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aws/ec2_client.h"
#include "credential_chain.h"
#include "ec2_provider_config.h"
#include "instance_fleet.h"
#include "kubernetes_join_watch.h"
#include "node_group_catalog.h"
#include "tessera/plugin/plugin.h"

namespace tessera::aws_ec2 {

class Ec2CapacityProvider : public plugin::Plugin {
 public:
  explicit Ec2CapacityProvider(plugin::Host host);
  ~Ec2CapacityProvider() override;

  plugin::PluginStatus Init(const std::string& config) override;
  plugin::PluginStatus Start(const v1::StartRequest& request) override;
  void Shutdown() override;
  plugin::PluginStatus NodeGroups(v1::NodeGroups* out) override;
  // Errors: INVALID_ARGUMENT naming the field (no request_id, an unknown node_group, count <=
  // 0). A request past the group's max_nodes is accepted and ends with PROVISION_FAILED.
  plugin::PluginStatus Provision(const v1::ProvisionRequest& request,
                                 v1::ProvisionResult* out) override;
  // Errors: INVALID_ARGUMENT for a node that is not one of this provider's joined instances.
  plugin::PluginStatus Deprovision(const v1::DeprovisionRequest& request) override;

 private:
  void StartWorker();
  void Work();
  // One pass: launches, terminations, then what EC2 and Kubernetes say.
  void Pass();
  // The spot requests of the joined spot instances, for EC2's interruption notices. A failure
  // (throttling past the client's retries, a missing permission) is logged when it starts or
  // changes and read again next pass.
  void ReadSpotNotices(std::vector<v1::BackendEvent>* events);
  void Terminate(const std::vector<std::string>& instance_ids, const std::string& why);
  void Emit(const std::vector<v1::BackendEvent>& events);
  // Waits up to `pause` or until Shutdown; false once shutting down.
  bool Pause(std::chrono::milliseconds pause);
  aws::DescribeInstancesRequest ClusterInstances() const;

  Ec2ProviderConfig config_;
  std::unique_ptr<CredentialChain> credentials_;
  std::unique_ptr<aws::Ec2Client> ec2_;
  std::unique_ptr<KubernetesJoinWatch> join_;
  std::vector<CatalogGroup> groups_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool kicked_ = false;
  InstanceFleet fleet_;
  std::vector<std::string> to_terminate_;
  std::string spot_notice_error_;  // the worker's own: the last failure of ReadSpotNotices logged
  std::thread worker_;
};

}  // namespace tessera::aws_ec2
