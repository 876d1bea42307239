// Pods on Tessera's nodes that Tessera did not place.
//
// A node the backend offers may also run pods Tessera never decided on: kube-scheduler's, a
// DaemonSet's (the NVIDIA device plugin, a log shipper), another scheduler's, or pods made with
// `spec.nodeName` already set. What they request is not free: the kubelet admits a pod only
// while the requests of the pods on the node fit its allocatable, so a GPU Tessera counted as
// free but a foreign pod holds would get Tessera's pod refused (`OutOfnvidia.com/gpu`). The
// backend therefore offers each node's `status.allocatable` less the requests of the
// non-terminated pods bound there by others; ForeignPods keeps those requests, per pod and per
// node, from the backend's watches.
//
// A pod's request is kube-scheduler's (pkg/scheduler/framework, computePodResourceRequest):
// for each resource, the larger of the sum over its containers and the largest of its init
// containers, plus `spec.overhead`; a container's request of a resource is its `requests`
// entry, else its `limits` entry (the API server defaults one from the other). Restartable
// init containers (sidecars) are counted as ordinary init containers, which can understate a
// pod that has them. Resources are kept in thousandths (milli-CPUs, milli-bytes, milli-GPUs),
// so one map holds them all; a quantity that does not parse (the API server validates them, so
// none should) is not counted.
//
// Not thread-safe: the backend calls it under its own lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::kubernetes {

// Resource name ("cpu", "memory", "nvidia.com/gpu") -> quantity in thousandths of its unit.
using ResourceMilli = std::map<std::string, int64_t>;

// What the pod requests, by kube-scheduler's rule above.
ResourceMilli PodRequestMilli(const nlohmann::json& pod);

// A copy of the Node `node` whose `status.allocatable` is less `used`, never below zero (the
// other fields are untouched, so NodeFromKube reads it as ever).
nlohmann::json AllocatableLess(const nlohmann::json& node, const ResourceMilli& used);

class ForeignPods {
 public:
  // The pod as now seen (`deleted`: gone): counted on its node while it is bound and neither
  // Succeeded nor Failed, else no longer counted. Returns the nodes whose use changed (its
  // former node and its present one), so that only they are offered again.
  std::vector<std::string> Update(const nlohmann::json& pod, bool deleted);
  // No longer counted (the pod turned out to be Tessera's, say); its node, or none.
  std::vector<std::string> Forget(const std::string& uid);
  // What others' pods request on `node`; nullptr when nothing.
  const ResourceMilli* On(const std::string& node) const;
  std::size_t pods() const { return pods_.size(); }

 private:
  struct Counted {
    std::string node;
    ResourceMilli request;
  };
  void Add(const std::string& node, const ResourceMilli& request, int sign);

  std::map<std::string, Counted> pods_;        // by uid
  std::map<std::string, ResourceMilli> used_;  // by node
};

}  // namespace tessera::kubernetes
