#include "kube/in_cluster.h"

#include <cstdlib>

#include "kube/file_text.h"

namespace tessera::kube {
namespace {

std::string Trim(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

}  // namespace

KubeOutcome<ClusterConfig> LoadInClusterConfig(const InClusterOptions& options) {
  const auto getenv = [&](const std::string& name) -> std::string {
    if (options.getenv) return options.getenv(name);
    const char* value = std::getenv(name.c_str());
    return value != nullptr ? value : "";
  };
  const std::string host = getenv("KUBERNETES_SERVICE_HOST");
  const std::string port = getenv("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return MakeError(
        KubeErrorKind::kConfig,
        "in-cluster config: " +
            std::string(host.empty() ? "KUBERNETES_SERVICE_HOST" : "KUBERNETES_SERVICE_PORT") +
            " is not set (not running in a pod?)");
  }
  ClusterConfig config;
  config.source = "in-cluster service account " + options.root;
  // An IPv6 service address (a dual-stack cluster) needs brackets in the URL.
  const bool ipv6 = host.find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;

  std::string error;
  const std::string ca_path = options.root + "/ca.crt";
  if (!ReadFileText(ca_path, &config.ca_pem, &error)) {
    return MakeError(KubeErrorKind::kConfig, "in-cluster config: " + ca_path + ": " + error);
  }
  if (config.ca_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return MakeError(KubeErrorKind::kConfig,
                     "in-cluster config: " + ca_path + ": no PEM certificate in it");
  }
  config.token_file = options.root + "/token";
  std::string token;
  if (!ReadFileText(config.token_file, &token, &error)) {
    return MakeError(KubeErrorKind::kConfig,
                     "in-cluster config: " + config.token_file + ": " + error);
  }
  if (Trim(token).empty()) {
    return MakeError(KubeErrorKind::kConfig, "in-cluster config: " + config.token_file + ": empty");
  }
  std::string namespace_name;
  if (ReadFileText(options.root + "/namespace", &namespace_name, &error)) {
    namespace_name = Trim(namespace_name);
    if (!namespace_name.empty()) config.namespace_name = namespace_name;
  }
  return config;
}

}  // namespace tessera::kube
