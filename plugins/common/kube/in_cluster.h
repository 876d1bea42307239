// LoadInClusterConfig: a ClusterConfig for a process running in a pod, from its service
// account, as client-go's rest.InClusterConfig builds one: the server from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (https), the CA from `<root>/ca.crt`, the
// bearer token from `<root>/token` (kept as a token file, so the kubelet's rotation of it, about
// hourly, is picked up; token_source.h) and the namespace from `<root>/namespace`.
// The root is /var/run/secrets/kubernetes.io/serviceaccount; tests point it elsewhere and may
// supply the environment. Errors are kind kConfig and name the variable or the file.
#pragma once

#include <functional>
#include <string>

#include "kube/cluster_config.h"
#include "kube/kube_error.h"

namespace tessera::kube {

inline constexpr char kServiceAccountRoot[] = "/var/run/secrets/kubernetes.io/serviceaccount";

struct InClusterOptions {
  std::string root = kServiceAccountRoot;
  // Reads an environment variable ("" when unset); the process environment when empty.
  std::function<std::string(const std::string&)> getenv;
};

KubeOutcome<ClusterConfig> LoadInClusterConfig(const InClusterOptions& options = {});

}  // namespace tessera::kube
