// Pods bound to a node by others (plugins/kubernetes/foreign_pods.h): what each requests by
// kube-scheduler's rule, what they take from a node's allocatable, and the per-node sums as
// pods come, move, end and go.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "foreign_pods.h"
#include "node_inventory.h"

namespace tessera::kubernetes {
namespace {

using nlohmann::json;

json PodOn(const std::string& uid, const std::string& node, const std::string& phase = "Running") {
  json pod = json::parse(R"({
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"containers": [
      {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                  "limits": {"nvidia.com/gpu": "2"}}},
      {"name": "b", "resources": {"requests": {"cpu": "250m"}}}]},
    "status": {}})");
  pod["metadata"]["uid"] = uid;
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = phase;
  return pod;
}

TEST_CASE("a pod's request: its containers' sum, its largest init container, its overhead") {
  json pod = PodOn("u1", "n");
  ResourceMilli request = PodRequestMilli(pod);
  CHECK(request["cpu"] == 750);
  CHECK(request["memory"] == (int64_t{1} << 30) * 1000);  // thousandths of a byte.
  CHECK(request["nvidia.com/gpu"] == 2000);               // the limit stands for the request.

  // An init container that asks more than the containers together bounds the pod.
  pod["spec"]["initContainers"] =
      json::parse(R"([{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "10Mi"}}}])");
  pod["spec"]["overhead"] = {{"cpu", "100m"}};
  request = PodRequestMilli(pod);
  CHECK(request["cpu"] == 2100);
  CHECK(request["memory"] == (int64_t{1} << 30) * 1000);

  // A request of its own wins over the limit.
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1";
  CHECK(PodRequestMilli(pod)["nvidia.com/gpu"] == 1000);
}

TEST_CASE("a node offers its allocatable less what others' pods there request") {
  const json node = json::parse(R"({
    "metadata": {"name": "gpu-a", "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
    "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"},
               "conditions": [{"type": "Ready", "status": "True"}]}})");
  ForeignPods foreign;
  CHECK(foreign.Update(PodOn("u1", "gpu-a"), false) == std::vector<std::string>{"gpu-a"});
  CHECK(foreign.Update(PodOn("u2", "gpu-a"), false) == std::vector<std::string>{"gpu-a"});
  CHECK(foreign.Update(PodOn("u2", "gpu-a"), false).empty());  // the same again: no change.
  REQUIRE(foreign.On("gpu-a") != nullptr);
  const KubeNode offered = NodeFromKube(AllocatableLess(node, *foreign.On("gpu-a")), {});
  REQUIRE(offered.excluded.empty());
  CHECK(offered.spec.cpu_milli() == 64000 - 1500);
  CHECK(offered.spec.memory_mib() == 512 * 1024 - 2048);
  CHECK(offered.spec.gpus_size() == 4);

  // More than the node has: nothing left, never less than nothing.
  ResourceMilli huge = {{"nvidia.com/gpu", 100000}, {"cpu", 1}};
  const KubeNode full = NodeFromKube(AllocatableLess(node, huge), {});
  CHECK(full.spec.gpus_size() == 0);
  CHECK(full.spec.cpu_milli() == 63999);
}

TEST_CASE("others' pods are counted while bound and running, on the node they are on") {
  ForeignPods foreign;
  CHECK(foreign.Update(PodOn("u1", ""), false).empty());  // not bound yet: nothing to count.
  CHECK(foreign.On("a") == nullptr);
  foreign.Update(PodOn("u1", "a"), false);
  CHECK(foreign.On("a")->at("nvidia.com/gpu") == 2000);
  // Moved (deleted and made again elsewhere under the same uid does not happen, but a relist
  // may show the pod on another node): both nodes change.
  CHECK(foreign.Update(PodOn("u1", "b"), false) == std::vector<std::string>{"a", "b"});
  CHECK(foreign.On("a") == nullptr);
  CHECK(foreign.On("b")->at("cpu") == 750);
  // Ended: its resources are free again, though the pod object stays.
  CHECK(foreign.Update(PodOn("u1", "b", "Succeeded"), false) == std::vector<std::string>{"b"});
  CHECK(foreign.On("b") == nullptr);
  CHECK(foreign.pods() == 0);
  foreign.Update(PodOn("u2", "b", "Pending"), false);  // bound, not started: counted.
  CHECK(foreign.On("b") != nullptr);
  CHECK(foreign.Update(PodOn("u2", "b"), true) == std::vector<std::string>{"b"});
  CHECK(foreign.On("b") == nullptr);
  foreign.Update(PodOn("u3", "c"), false);
  CHECK(foreign.Forget("u3") == std::vector<std::string>{"c"});
  CHECK(foreign.Forget("u3").empty());
}

}  // namespace
}  // namespace tessera::kubernetes
