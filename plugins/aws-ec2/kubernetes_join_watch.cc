#include "kubernetes_join_watch.h"

#include <utility>

#include "kube/in_cluster.h"
#include "kube/kubeconfig.h"
#include "kube/resource_path.h"

namespace tessera::aws_ec2 {

using plugin::PluginStatus;

PluginStatus KubernetesJoinWatch::Create(const JoinConfig& config,
                                         std::unique_ptr<KubernetesJoinWatch>* out) {
  kube::KubeOutcome<kube::ClusterConfig> cluster =
      config.in_cluster ? kube::LoadInClusterConfig()
                        : kube::LoadKubeconfig({config.kubeconfig, config.context});
  if (!cluster.ok()) {
    return PluginStatus::Error(
        TESSERA_INVALID_ARGUMENT,
        std::string(config.in_cluster ? "join.in_cluster" : "join.kubeconfig") + ": " +
            cluster.error().ToString());
  }
  kube::KubeClientOptions options;
  options.qps = 20;
  options.burst = 40;
  options.request_timeout = std::chrono::seconds(10);
  auto client = kube::KubeClient::Create(cluster.value(), options);
  if (!client.ok()) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                               "join.kubeconfig: " + client.error().ToString());
  }
  out->reset(new KubernetesJoinWatch(std::move(client).value()));
  return PluginStatus::Ok();
}

PluginStatus KubernetesJoinWatch::List(std::map<std::string, JoinedNode>* out) {
  out->clear();
  kube::ListOptions options;
  options.label_selector = kInstanceIdLabel;  // the label exists, whatever its value
  options.limit = 500;
  const std::string nodes = kube::CollectionPath(kube::Resource::Nodes(), "");
  for (int page = 0; page < 1000; ++page) {
    auto list = client_->List(nodes, options);
    if (!list.ok()) {
      return PluginStatus::Error(TESSERA_UNAVAILABLE,
                                 "listing Kubernetes nodes: " + list.error().ToString());
    }
    for (const nlohmann::json& node : list.value().value("items", nlohmann::json::array())) {
      const nlohmann::json& metadata = node.value("metadata", nlohmann::json::object());
      const nlohmann::json labels = metadata.value("labels", nlohmann::json::object());
      const std::string id = labels.value(kInstanceIdLabel, std::string());
      if (id.empty()) continue;
      JoinedNode joined;
      joined.name = metadata.value("name", std::string());
      const nlohmann::json status = node.value("status", nlohmann::json::object());
      for (const nlohmann::json& condition : status.value("conditions", nlohmann::json::array())) {
        if (condition.value("type", std::string()) == "Ready") {
          joined.ready = condition.value("status", std::string()) == "True";
        }
      }
      (*out)[id] = std::move(joined);
    }
    options.continue_token =
        list.value().value("metadata", nlohmann::json::object()).value("continue", std::string());
    if (options.continue_token.empty()) return PluginStatus::Ok();
  }
  return PluginStatus::Error(TESSERA_UNAVAILABLE, "listing Kubernetes nodes: over 1000 pages");
}

}  // namespace tessera::aws_ec2
