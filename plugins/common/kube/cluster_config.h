// ClusterConfig: everything the client needs to reach one API server as one identity, whether it
// came from a kubeconfig file (kubeconfig.h) or from a pod's service account (in_cluster.h).
// Certificates and keys are held as PEM text, read when the config is loaded; the bearer token
// is either fixed (`token`) or a file that is re-read as it rotates (`token_file`, see
// token_source.h). A plain value.
#pragma once

#include <string>

namespace tessera::kube {

struct ClusterConfig {
  // The API server's URL: "https://10.0.0.1:6443", possibly with a path prefix
  // ("https://rancher.example/k8s/clusters/c-1"); "http://127.0.0.1:8001" (kubectl proxy, tests).
  std::string server;
  // Trusted CA certificates (PEM) for the server's chain; empty means the system's store.
  std::string ca_pem;
  // Skip verifying the server's certificate (kubeconfig insecure-skip-tls-verify). Never the
  // default; a kubeconfig must ask for it.
  bool insecure_skip_tls_verify = false;
  // The name the server's certificate must carry, also sent as SNI; empty means the host of
  // `server` (an IP address is checked against the certificate's IP SANs and sends no SNI).
  std::string tls_server_name;
  // A client certificate chain and its private key (PEM), both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
  // A fixed bearer token, or a file holding one (re-read; takes precedence when both are set,
  // as in client-go).
  std::string token;
  std::string token_file;
  // The namespace of the context (or the pod's own); "default" when none is given.
  std::string namespace_name = "default";
  // Where this came from, for error messages: "kubeconfig /home/a/.kube/config, context dev".
  std::string source;
};

}  // namespace tessera::kube
