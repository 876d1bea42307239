// The Kubernetes backend's configuration: "key = value" lines (tessera/plugin/key_value_config.h),
// the `config` of its entry in the daemon's `backends` list (docs/kubernetes.md):
//
//   kubeconfig = /etc/tessera/kubeconfig   # or in_cluster = true (the pod's service account)
//   context = prod                         # default: the kubeconfig's current-context
//   name = k8s-east                        # the tessera.io/backend label on its pods
//   namespace = tessera-jobs               # where Tessera's own jobs' pods go
//   namespaces = team-a,team-b             # others a job's pod template may name
//   default_image = busybox:1.36           # for jobs whose template names no image
//   node_selector = tessera.io/pool=gpu    # which nodes it offers (a label selector; all if unset)
//   rack_label = example.com/rack          # copied to the scheduler's "rack" label
//   qps = 500                              # client-side request rate, and burst
//   burst = 1000
//   # Pods made by others (kubectl, Job controllers, Kubeflow) that name this scheduler:
//   scheduler_name = tessera               # empty: take in no pods
//   queue_for_namespace = ml-a:research/a,ml-b:research/b
//   queue_label = tessera.io/queue         # a pod label naming its queue (wins over the map)
//   default_queue =                        # for pods of other namespaces; empty: not taken in
//   priority_for_class = k8s-high:high     # pod priorityClassName -> Tessera priority class
//   pod_group_label = tessera.io/pod-group # pods with the same value form one gang
//   pod_group_size_label = tessera.io/pod-group-size
//   default_cpu_milli = 100                # for pods that request no CPU / memory
//   default_memory_mib = 128
//   resubmit_interval_s = 30               # waiting pods are submitted again this often, so a
//                                          # submit refused at first (its queue not made yet)
//                                          # goes through later; submits are idempotent
//   default_gpu_memory_mib = 16384         # GPU memory when neither the nvidia.com/gpu.memory
//                                          # label nor the model name ("A100-80GB") says
//   count_others_pods = true               # offer a node's allocatable less the requests of
//                                          # pods bound there by others (foreign_pods.h); false
//                                          # saves a watch of every bound pod where Tessera's
//                                          # nodes are its own
//
// Every error names the key and the line.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "tessera/plugin/plugin.h"

namespace tessera::kubernetes {

struct KubeBackendConfig {
  std::string kubeconfig;  // a path; empty with in_cluster false: $KUBECONFIG, ~/.kube/config.
  std::string context;
  bool in_cluster = false;
  std::string name = "kubernetes";
  std::string pod_namespace = "default";
  std::set<std::string> namespaces;
  std::string default_image;
  std::string node_selector;
  std::string rack_label;
  int64_t default_gpu_memory_mib = 16384;
  int64_t qps = 500;
  int64_t burst = 1000;
  int64_t workers = 8;  // threads that create, bind and delete pods.

  std::string scheduler_name;  // empty: no intake of pods made by others.
  std::map<std::string, std::string> queue_for_namespace;
  std::string queue_label = "tessera.io/queue";
  std::string default_queue;
  std::map<std::string, std::string> priority_for_class;
  std::string pod_group_label = "tessera.io/pod-group";
  std::string pod_group_size_label = "tessera.io/pod-group-size";
  int64_t default_cpu_milli = 100;
  int64_t default_memory_mib = 128;
  int64_t resubmit_interval_s = 30;
  bool count_others_pods = true;
};

plugin::PluginStatus ParseKubeBackendConfig(const std::string& text, KubeBackendConfig* config);

}  // namespace tessera::kubernetes
