// libtessera_plugin_kubernetes.so: the Kubernetes backend (kubernetes_backend.h).
#include "kubernetes_backend.h"

namespace tessera::kubernetes {

std::unique_ptr<plugin::Plugin> MakeKubernetesBackend(plugin::Host host) {
  return std::make_unique<KubernetesBackend>(host);
}

}  // namespace tessera::kubernetes

TESSERA_PLUGIN_FACTORY(tessera::kubernetes::MakeKubernetesBackend, tessera::kubernetes::kPluginName,
                       tessera::kubernetes::kPluginVersion, tessera::kubernetes::kPluginKinds)
