// The Kubernetes backend's translation (plugins/kubernetes): quantities, Node objects as the
// scheduler's nodes, a task's pod, and what a pod's status means for its task. The objects are
// shaped like the API server's (and the NVIDIA device plugin's and GPU feature discovery's
// labels, backends-reference.md section 2), trimmed to the fields read.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "node_inventory.h"
#include "pod_manifest.h"
#include "pod_outcome.h"
#include "quantity.h"

namespace tessera::kubernetes {
namespace {

using nlohmann::json;

TEST_CASE("kubernetes quantities in milli-CPUs, MiB and counts") {
  CHECK(QuantityMilli("16") == 16000);
  CHECK(QuantityMilli("1500m") == 1500);
  CHECK(QuantityMilli("0.5") == 500);
  CHECK(QuantityMilli("100u") == 1);  // rounded up, as MilliValue does.
  CHECK(QuantityMilli("1e3") == 1000000);
  CHECK(QuantityMib("64Gi") == 65536);
  CHECK(QuantityMib("128974848") == 123);
  CHECK(QuantityMib("1G") == 953);  // decimal: rounded down.
  CHECK(QuantityMib("1.5Gi") == 1536);
  CHECK(QuantityCount("8") == 8);
  CHECK(QuantityCount("7.0") == 7);
  for (const char* bad : {"", "Gi", "1.2.3", "5 Gi", "1x", "1e", "--1", "1e1234"}) {
    INFO(bad);
    CHECK_FALSE(QuantityMilli(bad).has_value());
  }
  CHECK(MilliQuantity(2500) == "2500m");
  CHECK(MibQuantity(4096) == "4096Mi");
}

json Node(const std::string& name) {
  json node = json::parse(R"({
    "kind": "Node", "apiVersion": "v1",
    "metadata": {"labels": {"kubernetes.io/hostname": "x"}},
    "spec": {},
    "status": {
      "allocatable": {"cpu": "63900m", "memory": "257380Mi", "pods": "110"},
      "conditions": [{"type": "MemoryPressure", "status": "False"},
                     {"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})");
  node["metadata"]["name"] = name;
  return node;
}

TEST_CASE("a Ready node with whole GPUs, labels, zone and taints") {
  json node = Node("gpu-a");
  node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
  node["metadata"]["labels"]["nvidia.com/gpu.memory"] = "81920";
  node["metadata"]["labels"]["topology.kubernetes.io/zone"] = "eu-1a";
  node["metadata"]["labels"]["example.com/rack"] = "r7";
  node["status"]["allocatable"]["nvidia.com/gpu"] = "8";
  node["spec"]["taints"] = json::parse(
      R"([{"key": "nvidia.com/gpu", "effect": "NoSchedule"},
          {"key": "weird", "effect": "Sometimes"}])");
  const KubeNode k = NodeFromKube(node, {.rack_label = "example.com/rack"});
  REQUIRE(k.excluded.empty());
  CHECK(k.spec.name() == "gpu-a");
  CHECK(k.spec.cpu_milli() == 63900);
  CHECK(k.spec.memory_mib() == 257380);
  REQUIRE(k.spec.gpus_size() == 8);
  CHECK(k.spec.gpus(7).index() == 7);
  CHECK(k.spec.gpus(0).model() == "A100-80GB");
  CHECK(k.spec.gpus(0).memory_mib() == 81920);
  CHECK(k.spec.gpus(0).sharing() == v1::GPU_SHARING_EXCLUSIVE);
  CHECK(k.spec.zone() == "eu-1a");
  CHECK(k.spec.labels().at("rack") == "r7");
  CHECK(k.spec.labels().at("nvidia.com/gpu.product") == "NVIDIA-A100-SXM4-80GB");
  REQUIRE(k.spec.taints_size() == 1);  // an effect Kubernetes does not have is not a taint.
  CHECK(k.spec.taints(0).key() == "nvidia.com/gpu");
  CHECK(k.spec.taints(0).effect() == v1::NO_SCHEDULE);
}

TEST_CASE("a node that is not Ready, cordoned, or malformed") {
  json node = Node("n");
  node["status"]["conditions"][1]["status"] = "Unknown";
  node["status"]["conditions"][1]["reason"] = "NodeStatusUnknown";
  CHECK(NodeFromKube(node, {}).excluded == "not Ready: NodeStatusUnknown");
  node["status"].erase("conditions");
  CHECK(NodeFromKube(node, {}).excluded == "no Ready condition");

  json cordoned = Node("c");
  cordoned["spec"]["unschedulable"] = true;
  const KubeNode k = NodeFromKube(cordoned, {});
  REQUIRE(k.excluded.empty());
  REQUIRE(k.spec.taints_size() == 1);
  CHECK(k.spec.taints(0).key() == "node.kubernetes.io/unschedulable");

  json bad = Node("b");
  bad["status"]["allocatable"]["memory"] = "lots";
  CHECK(NodeFromKube(bad, {}).excluded == "status.allocatable.memory: not a quantity");
  json nameless = Node("");
  CHECK(NodeFromKube(nameless, {}).excluded == "metadata.name: missing");
}

TEST_CASE("time-sliced and MPS GPUs are count/replicas GPUs shared that many ways") {
  json node = Node("ts");
  node["metadata"]["labels"]["nvidia.com/gpu.product"] = "Tesla-T4";
  node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4";
  node["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"] = "time-slicing";
  node["status"]["allocatable"]["nvidia.com/gpu"] = "8";
  KubeNode k = NodeFromKube(node, {.default_gpu_memory_mib = 15360});
  REQUIRE(k.spec.gpus_size() == 2);
  CHECK(k.spec.gpus(1).sharing() == v1::GPU_SHARING_TIME_SLICE);
  CHECK(k.spec.gpus(1).replicas() == 4);
  CHECK(k.spec.gpus(1).model() == "Tesla-T4");
  CHECK(k.spec.gpus(1).memory_mib() == 15360);

  node["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"] = "mps";
  k = NodeFromKube(node, {});
  REQUIRE(k.spec.gpus_size() == 2);
  CHECK(k.spec.gpus(0).sharing() == v1::GPU_SHARING_MPS);
}

TEST_CASE("mixed-strategy MIG resources are packed onto GPUs at NVIDIA's placements") {
  json node = Node("mig");
  node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3";
  node["status"]["allocatable"]["nvidia.com/gpu"] = "1";
  node["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] = "2";
  node["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "7";
  node["status"]["allocatable"]["nvidia.com/mig-7g.80gb"] = "1";
  const KubeNode k = NodeFromKube(node, {});
  REQUIRE(k.excluded.empty());
  // One whole GPU, then 7g | 3g+3g | seven 1g.
  REQUIRE(k.spec.gpus_size() == 4);
  CHECK(k.spec.gpus(0).sharing() == v1::GPU_SHARING_EXCLUSIVE);
  CHECK(k.spec.gpus(1).sharing() == v1::GPU_SHARING_MIG);
  CHECK_FALSE(k.spec.gpus(1).mig_managed());
  CHECK(k.spec.gpus(1).memory_mib() == 81920);  // no memory label: the model's marketed memory.
  REQUIRE(k.spec.gpus(1).mig_instances_size() == 1);
  CHECK(k.spec.gpus(1).mig_instances(0).profile() == "7g.80gb");
  REQUIRE(k.spec.gpus(2).mig_instances_size() == 2);
  CHECK(k.spec.gpus(2).mig_instances(0).profile() == "3g.40gb");
  CHECK(k.spec.gpus(2).mig_instances(0).start() == 0);
  CHECK(k.spec.gpus(2).mig_instances(1).start() == 4);
  REQUIRE(k.spec.gpus(3).mig_instances_size() == 7);
  CHECK(k.spec.gpus(3).mig_instances(6).start() == 6);

  json wrong = Node("m2");
  wrong["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3";
  wrong["status"]["allocatable"]["nvidia.com/mig-3g.20gb"] = "1";  // an A100-40GB profile.
  CHECK(NodeFromKube(wrong, {}).excluded ==
        "status.allocatable: nvidia.com/mig-3g.20gb: not a MIG profile of H100-80GB");
}

TEST_CASE("GPU feature discovery's product labels as model names") {
  CHECK(ModelFromProductLabel("NVIDIA-A100-SXM4-40GB", 0) == "A100-40GB");
  CHECK(ModelFromProductLabel("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", 0) == "H100-80GB");
  CHECK(ModelFromProductLabel("NVIDIA-H200", 0) == "H200-141GB");
  CHECK(ModelFromProductLabel("NVIDIA-L40S", 0) == "L40S");
  CHECK(ModelFromProductLabel("Tesla-T4", 0) == "Tesla-T4");
}

v1::LaunchTask WholeGpuTask() {
  v1::LaunchTask task;
  task.mutable_ref()->set_job(42);
  task.mutable_ref()->set_attempt(2);
  task.mutable_ref()->set_task(1);
  task.set_node("gpu-a");
  task.add_gpus(0);
  task.add_gpus(3);
  task.set_gpu_milli(1000);
  task.set_cpu_milli(4000);
  task.set_memory_mib(16384);
  task.add_command("python");
  task.add_command("train.py");
  (*task.mutable_env())["EPOCHS"] = "3";
  task.set_queue("research/vision");
  task.set_job_name("resnet");
  task.set_time_limit_s(3600);
  return task;
}

TEST_CASE("a task's pod: bound to its node, its resources, labels and the template's rest") {
  v1::LaunchTask task = WholeGpuTask();
  task.set_backend_spec(R"({"metadata": {"labels": {"team": "vision"}},
    "spec": {"containers": [{"name": "train", "image": "pytorch:2.4", "args": ["--x"],
                             "env": [{"name": "A", "value": "1"}],
                             "resources": {"limits": {"example.com/fpga": "1"}}}],
             "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}})");
  json pod;
  std::string error;
  REQUIRE_MESSAGE(BuildPod(task, {.backend_name = "k8s-east"}, &pod, &error), error);
  CHECK(pod["metadata"]["name"] == "tessera-j42-a2-t1");
  CHECK(pod["metadata"]["namespace"] == "default");
  CHECK(pod["metadata"]["labels"]["team"] == "vision");
  CHECK(pod["metadata"]["labels"][kBackendLabel] == "k8s-east");
  CHECK(pod["metadata"]["labels"][kJobLabel] == "42");
  CHECK(pod["metadata"]["annotations"]["tessera.io/queue"] == "research/vision");
  const json& spec = pod["spec"];
  CHECK(spec["nodeName"] == "gpu-a");
  CHECK(spec["restartPolicy"] == "Never");
  CHECK(spec["activeDeadlineSeconds"] == 3600);
  CHECK(spec["tolerations"].size() == 1);
  const json& c = spec["containers"][0];
  CHECK(c["image"] == "pytorch:2.4");
  CHECK(c["command"] == json::array({"python", "train.py"}));
  CHECK_FALSE(c.contains("args"));  // the job's command replaces the image's entry point.
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "2");
  CHECK(c["resources"]["requests"]["nvidia.com/gpu"] == "2");
  CHECK(c["resources"]["limits"]["example.com/fpga"] == "1");
  CHECK(c["resources"]["requests"]["cpu"] == "4000m");
  CHECK(c["resources"]["limits"]["memory"] == "16384Mi");
  std::map<std::string, std::string> env;
  for (const json& e : c["env"]) env[e["name"]] = e["value"];
  CHECK(env.at("A") == "1");
  CHECK(env.at("EPOCHS") == "3");
  CHECK(env.at("TESSERA_JOB_ID") == "42");
  CHECK(env.at("TESSERA_TASK_INDEX") == "1");

  v1::TaskRef back;
  REQUIRE(TaskOfPod(pod, &back));
  CHECK(back.job() == 42);
  CHECK(back.attempt() == 2);
  CHECK(back.task() == 1);
  CHECK_FALSE(TaskOfPod(json::parse(R"({"metadata": {"labels": {"app": "x"}}})"), &back));
}

TEST_CASE("a MIG share asks for its profile's resource; an empty template the default image") {
  v1::LaunchTask task;
  task.set_node("mig");
  task.add_gpus(2);
  task.set_gpu_milli(428);
  task.mutable_partition()->set_sharing(v1::GPU_SHARING_MIG);
  task.mutable_partition()->set_mig_profile("3g.40gb");
  json pod;
  std::string error;
  CHECK_FALSE(BuildPod(task, {}, &pod, &error));
  CHECK(error ==
        "backend_spec.spec.containers[0].image: missing and the backend has no "
        "default_image");
  REQUIRE(BuildPod(task, {.default_image = "busybox:1.36"}, &pod, &error));
  const json& c = pod["spec"]["containers"][0];
  CHECK(c["name"] == "task");
  CHECK(c["image"] == "busybox:1.36");
  CHECK(c["resources"]["limits"]["nvidia.com/mig-3g.40gb"] == "1");
  CHECK_FALSE(c["resources"]["limits"].contains("nvidia.com/gpu"));
}

TEST_CASE("backend specs that would steer placement or escape the namespace are refused") {
  v1::LaunchTask task = WholeGpuTask();
  const PodOptions options{.allowed_namespaces = {"team-a"}, .default_image = "busybox"};
  auto refused = [&](const std::string& spec) {
    task.set_backend_spec(spec);
    json pod;
    std::string error;
    CHECK_FALSE(BuildPod(task, options, &pod, &error));
    return error;
  };
  CHECK(refused("{") == "backend_spec: not valid JSON");
  CHECK(refused("[]") == "backend_spec: must be a JSON object");
  CHECK(refused(R"({"kind": "Pod"})") ==
        "backend_spec.kind: unknown field (a pod template has metadata and spec)");
  CHECK(refused(R"({"spec": {"nodeName": "other"}})") ==
        "backend_spec.spec.nodeName: placement is Tessera's (use the job's node selectors)");
  CHECK(refused(R"({"metadata": {"namespace": "kube-system"}})") ==
        "backend_spec.metadata.namespace: 'kube-system' is not a namespace this backend may use "
        "(config namespaces)");
  CHECK(refused(R"({"metadata": {"name": "x"}})") ==
        "backend_spec.metadata.name: set by the "
        "backend");
  task.set_backend_spec(R"({"metadata": {"namespace": "team-a"}})");
  json pod;
  std::string error;
  REQUIRE(BuildPod(task, options, &pod, &error));
  CHECK(pod["metadata"]["namespace"] == "team-a");
}

json PodWithStatus(const std::string& status) {
  return json{{"metadata", {{"name", "p"}}}, {"status", json::parse(status)}};
}

TEST_CASE("pod phases and container states as task outcomes") {
  CHECK(PodOutcomeOf(PodWithStatus(R"({"phase": "Pending"})")).kind == PodOutcome::kPending);
  CHECK(PodOutcomeOf(PodWithStatus(R"({"phase": "Running"})")).kind == PodOutcome::kRunning);
  CHECK(PodOutcomeOf(PodWithStatus(R"({"phase": "Succeeded"})")).kind == PodOutcome::kExited);

  PodOutcome failed = PodOutcomeOf(PodWithStatus(R"({"phase": "Failed", "containerStatuses": [
      {"name": "task", "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]})"));
  CHECK(failed.kind == PodOutcome::kExited);
  CHECK(failed.exit_code == 3);
  CHECK(failed.reason == "Error");

  PodOutcome oom = PodOutcomeOf(PodWithStatus(R"({"phase": "Failed", "containerStatuses": [
      {"name": "task", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]})"));
  CHECK(oom.kind == PodOutcome::kExited);
  CHECK(oom.exit_code == 137);

  PodOutcome evicted = PodOutcomeOf(
      PodWithStatus(R"({"phase": "Failed", "reason": "Evicted", "message": "low on memory"})"));
  CHECK(evicted.kind == PodOutcome::kLost);
  CHECK(evicted.reason == "Evicted: low on memory");
  CHECK(PodOutcomeOf(PodWithStatus(R"({"phase": "Unknown"})")).kind == PodOutcome::kLost);

  PodOutcome admission =
      PodOutcomeOf(PodWithStatus(R"({"phase": "Failed", "reason": "OutOfnvidia.com/gpu"})"));
  CHECK(admission.kind == PodOutcome::kRejected);
  CHECK(admission.retryable);

  PodOutcome image = PodOutcomeOf(PodWithStatus(R"({"phase": "Pending", "containerStatuses": [
      {"name": "task", "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}]})"));
  CHECK(image.kind == PodOutcome::kRejected);
  CHECK_FALSE(image.retryable);
  CHECK(image.reason == "ErrImagePull: not found");
  CHECK(PodOutcomeOf(PodWithStatus(R"({"phase": "Pending", "containerStatuses": [
      {"name": "task", "state": {"waiting": {"reason": "ContainerCreating"}}}]})"))
            .kind == PodOutcome::kPending);
}

}  // namespace
}  // namespace tessera::kubernetes
