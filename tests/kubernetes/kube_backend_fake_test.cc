// The Kubernetes backend (plugins/kubernetes, loaded as a plugin like any backend) with the
// scheduler, against the fake API server over a real etcd (both started here): jobs run as pods
// bound to the nodes Tessera chose; a gang's pods are all bound; a node that goes NotReady
// requeues its tasks elsewhere; an evicted pod is lost and retried; a 410 in the middle of the
// pod watch loses no event; a restarted scheduler adopts its running pods and makes none twice;
// and pods made by others (`kubectl apply`, schedulerName: tessera) are taken in and scheduled
// with fair share across two namespaces, a gang all at once, a deleted pod's job cancelled.
// Each case uses its own namespace and nodes (a node label the backend selects on). Exits 77
// (ctest: skipped) when etcd, openssl or python3-etcd3 is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "kube/resource_path.h"
#include "kubernetes/fake_apiserver_process.h"
#include "tessera/job.h"
#include "tessera/scheduler.h"

namespace tessera {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json g_info;

std::unique_ptr<kube::KubeClient> Client() {
  auto config = kube::LoadKubeconfig({g_info["kubeconfig"].get<std::string>(), "fake"});
  REQUIRE_MESSAGE(config.ok(), config.error().ToString());
  auto client = kube::KubeClient::Create(config.value());
  REQUIRE_MESSAGE(client.ok(), client.error().ToString());
  return std::move(client).value();
}

bool WaitFor(const std::function<bool()>& done, std::chrono::seconds limit = 30s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

void MakeNamespace(kube::KubeClient& client, const std::string& name) {
  auto made =
      client.Create("/api/v1/namespaces",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  if (!made.ok()) REQUIRE(made.error().kind == kube::KubeErrorKind::kAlreadyExists);
}

// A Ready node with `gpus` A100-80GB GPUs, labelled pool=<pool>.
void MakeNode(kube::KubeClient& client, const std::string& name, const std::string& pool,
              int gpus) {
  json node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels", {{"pool", pool}, {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}}}},
      {"status",
       {{"allocatable",
         {{"cpu", "32"},
          {"memory", "256Gi"},
          {"pods", "110"},
          {"nvidia.com/gpu", std::to_string(gpus)}}},
        {"capacity",
         {{"cpu", "32"},
          {"memory", "256Gi"},
          {"pods", "110"},
          {"nvidia.com/gpu", std::to_string(gpus)}}},
        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  auto made = client.Create("/api/v1/nodes", node);
  REQUIRE_MESSAGE(made.ok(), made.error().ToString());
}

void SetReady(kube::KubeClient& client, const std::string& node, bool ready) {
  json patch = {{"status",
                 {{"conditions",
                   json::array({{{"type", "Ready"},
                                 {"status", ready ? "True" : "False"},
                                 {"reason", ready ? "KubeletReady" : "NodeStatusUnknown"}}})}}}};
  auto patched = client.Patch("/api/v1/nodes/" + node + "/status", patch);
  REQUIRE_MESSAGE(patched.ok(), patched.error().ToString());
}

void Control(kube::KubeClient& client, const std::string& what) {
  const json empty = json::object();
  auto reply = client.Request("POST", "/fake/" + what, &empty, "application/json", nullptr, {});
  REQUIRE_MESSAGE(reply.ok(), reply.error().ToString());
}

std::vector<json> Pods(kube::KubeClient& client, const std::string& ns,
                       const std::string& selector = "") {
  kube::ListOptions list;
  list.label_selector = selector;
  auto pods = client.List(kube::CollectionPath(kube::Resource::Pods(), ns), list);
  REQUIRE_MESSAGE(pods.ok(), pods.error().ToString());
  std::vector<json> out;
  for (const json& p : pods.value()["items"]) out.push_back(p);
  return out;
}

struct Backend {
  std::string pool;  // node label and namespace of the case
  std::string extra_config;
  std::string store;  // empty: in memory
};

std::unique_ptr<Scheduler> OpenScheduler(const Backend& b) {
  Options options;
  BackendOptions backend;
  backend.name = "k8s-" + b.pool;
  backend.plugin.plugin = std::string(TESSERA_PLUGIN_DIR) + "/libtessera_plugin_kubernetes.so";
  backend.plugin.config = "kubeconfig = " + g_info["kubeconfig"].get<std::string>() +
                          "\ncontext = fake\nname = k8s-" + b.pool + "\nnamespace = " + b.pool +
                          "\ndefault_image = busybox:1.36\nnode_selector = pool=" + b.pool + "\n" +
                          b.extra_config;
  options.backends.push_back(backend);
  if (!b.store.empty()) options.store.path = b.store;
  auto opened = Scheduler::Open(options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  return std::move(opened).value();
}

v1::JobState StateOf(Scheduler* s, uint64_t id) {
  auto job = s->GetJob(id);
  REQUIRE(job.ok());
  return job->status().state();
}

// The pod template that makes the kubelet stand-in run the task `seconds` and exit with `code`.
std::string Runs(int seconds, int code = 0) {
  json annotations = {{"fake.tessera.io/exit-code", std::to_string(code)}};
  if (seconds >= 0) annotations["fake.tessera.io/run-seconds"] = std::to_string(seconds);
  return json{{"metadata", {{"annotations", annotations}}}}.dump();
}

v1::JobSpec GpuJob(int gpus, const std::string& backend_spec, int tasks = 1) {
  v1::JobSpec spec = JobSpecBuilder("default").Gpus(gpus).Build();
  spec.set_tasks(tasks);
  spec.set_backend_spec(backend_spec);
  return spec;
}

TEST_CASE("kubernetes backend: jobs run as pods on the nodes chosen, a gang's pods together") {
  auto client = Client();
  MakeNamespace(*client, "kb-run");
  MakeNode(*client, "kb-run-0", "kb-run", 4);
  MakeNode(*client, "kb-run-1", "kb-run", 4);
  auto s = OpenScheduler({"kb-run"});
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  CHECK(nodes->size() == 2);

  auto one = s->Submit(GpuJob(2, Runs(1)));
  REQUIRE(one.ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), one->id()) == v1::SUCCEEDED; }));
  std::vector<json> pods = Pods(*client, "kb-run", "tessera.io/job=" + std::to_string(one->id()));
  REQUIRE(pods.size() == 1);
  const v1::Job done = *s->GetJob(one->id());
  CHECK(pods[0]["spec"]["nodeName"] == done.status().placements(0).node());
  CHECK(pods[0]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2");

  // A failing task's exit code comes back.
  v1::JobSpec failing = GpuJob(1, Runs(0, 3));
  auto bad = s->Submit(failing);
  REQUIRE(bad.ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), bad->id()) == v1::FAILED; }));

  // A gang of two 4-GPU tasks needs both nodes: both pods bound, on different nodes.
  auto gang = s->Submit(GpuJob(4, Runs(-1), 2));
  REQUIRE(gang.ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), gang->id()) == v1::RUNNING; }));
  pods = Pods(*client, "kb-run", "tessera.io/job=" + std::to_string(gang->id()));
  REQUIRE(pods.size() == 2);
  CHECK(pods[0]["spec"]["nodeName"] != pods[1]["spec"]["nodeName"]);
  auto cancelled = s->Cancel(gang->id());
  REQUIRE(cancelled.ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), gang->id()) == v1::CANCELLED; }));
  CHECK(WaitFor([&] {
    return Pods(*client, "kb-run", "tessera.io/job=" + std::to_string(gang->id())).empty();
  }));
  s->Close();
}

TEST_CASE(
    "kubernetes backend: a node going NotReady requeues its task; an evicted pod is retried") {
  auto client = Client();
  MakeNamespace(*client, "kb-lost");
  MakeNode(*client, "kb-lost-0", "kb-lost", 4);
  MakeNode(*client, "kb-lost-1", "kb-lost", 4);
  auto s = OpenScheduler({"kb-lost"});
  auto job = s->Submit(GpuJob(4, Runs(-1)));
  REQUIRE(job.ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), job->id()) == v1::RUNNING; }));
  const std::string first = s->GetJob(job->id())->status().placements(0).node();
  SetReady(*client, first, false);
  CHECK(WaitFor([&] {
    const v1::Job j = *s->GetJob(job->id());
    return j.status().state() == v1::RUNNING && j.status().attempt() == 2;
  }));
  const std::string second = s->GetJob(job->id())->status().placements(0).node();
  CHECK(second != first);

  // Evicted: lost (not failed), and run again.
  const std::string pod = "tessera-j" + std::to_string(job->id()) + "-a2-t0";
  Control(*client, "evict?namespace=kb-lost&name=" + pod);
  CHECK(WaitFor([&] {
    const v1::Job j = *s->GetJob(job->id());
    return j.status().state() == v1::RUNNING && j.status().attempt() == 3;
  }));
  SetReady(*client, first, true);
  REQUIRE(s->Cancel(job->id()).ok());
  s->Close();
}

TEST_CASE("kubernetes backend: a 410 in the middle of the pod watch loses no event") {
  auto client = Client();
  MakeNamespace(*client, "kb-gone");
  MakeNode(*client, "kb-gone-0", "kb-gone", 8);
  auto s = OpenScheduler({"kb-gone"});
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) {
    auto job = s->Submit(GpuJob(1, Runs(2)));
    REQUIRE(job.ok());
    ids.push_back(job->id());
  }
  CHECK(WaitFor([&] { return StateOf(s.get(), ids[3]) == v1::RUNNING; }));
  // etcd compacted and every watch ended with an ERROR 410, while the pods finish.
  Control(*client, "compact");
  for (uint64_t id : ids) {
    CHECK(WaitFor([&] { return StateOf(s.get(), id) == v1::SUCCEEDED; }));
  }
  s->Close();
}

TEST_CASE("kubernetes backend: a restarted scheduler adopts its running pods, none made twice") {
  auto client = Client();
  MakeNamespace(*client, "kb-restart");
  MakeNode(*client, "kb-restart-0", "kb-restart", 4);
  char dir[] = "/tmp/tessera-kb-restart-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string store = std::string(dir) + "/store.db";
  uint64_t id = 0;
  {
    auto s = OpenScheduler({"kb-restart", "", store});
    auto job = s->Submit(GpuJob(4, Runs(-1)));
    REQUIRE(job.ok());
    id = job->id();
    CHECK(WaitFor([&] { return StateOf(s.get(), id) == v1::RUNNING; }));
    s->Close();
  }
  auto s = OpenScheduler({"kb-restart", "", store});
  std::this_thread::sleep_for(1s);
  const v1::Job job = *s->GetJob(id);
  CHECK(job.status().state() == v1::RUNNING);
  CHECK(job.status().attempt() == 1);
  CHECK(Pods(*client, "kb-restart", "tessera.io/job=" + std::to_string(id)).size() == 1);
  REQUIRE(s->Cancel(id).ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), id) == v1::CANCELLED; }));
  s->Close();
  std::filesystem::remove_all(dir);
}

json IntakePod(const std::string& ns, const std::string& name, int gpus, int seconds,
               const std::string& group = "", int group_size = 0) {
  json labels = json::object();
  if (!group.empty()) {
    labels["tessera.io/pod-group"] = group;
    labels["tessera.io/pod-group-size"] = std::to_string(group_size);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels", labels},
            {"annotations", {{"fake.tessera.io/run-seconds", std::to_string(seconds)}}}}},
          {"spec",
           {{"schedulerName", "tessera"},
            {"restartPolicy", "Never"},
            {"containers", json::array({{{"name", "main"},
                                         {"image", "busybox"},
                                         {"resources",
                                          {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                                           {"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}})}}}};
}

bool KubectlApply(const json& object) {
  const std::string file = "/tmp/tessera-kb-intake-" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream out(file);
    out << object.dump();
  }
  const std::string command = "KUBECONFIG=" + g_info["kubeconfig"].get<std::string>() +
                              " kubectl apply -f " + file + " >/dev/null";
  const bool ok = std::system(command.c_str()) == 0;
  std::remove(file.c_str());
  return ok;
}

TEST_CASE("kubernetes backend: pods made by others are scheduled with fair share, gangs whole") {
  auto client = Client();
  MakeNamespace(*client, "kb-ml-a");
  MakeNamespace(*client, "kb-ml-b");
  // Six one-GPU pods from each namespace, made with kubectl before there is any GPU node.
  const bool kubectl = std::system("command -v kubectl >/dev/null 2>&1") == 0;
  for (int i = 0; i < 6; ++i) {
    for (const char* ns : {"kb-ml-a", "kb-ml-b"}) {
      const json pod = IntakePod(ns, "w-" + std::to_string(i), 1, 1);
      if (kubectl) {
        REQUIRE(KubectlApply(pod));
      } else {
        REQUIRE(client->Create(kube::CollectionPath(kube::Resource::Pods(), ns), pod).ok());
      }
    }
  }
  // The queues come after the backend took the pods in, as at a daemon's first start (it
  // declares its queues once open): the first submits are refused (no such queue) and the
  // backend's resubmission (every second here) brings them in.
  auto s = OpenScheduler({"kb-intake",
                          "scheduler_name = tessera\n"
                          "queue_for_namespace = kb-ml-a:team-a,kb-ml-b:team-b\n"
                          "resubmit_interval_s = 1\n"});
  for (const char* queue : {"team-a", "team-b"}) {
    v1::QueueSpec q;
    q.set_name(queue);
    q.set_weight(1);
    REQUIRE(s->CreateQueue(q).ok());
  }
  auto jobs_in = [&](const std::string& queue) {
    v1::ListJobsRequest request;
    request.set_queue(queue);
    auto listed = s->ListJobs(request);
    REQUIRE(listed.ok());
    return listed->jobs_size();
  };
  CHECK(WaitFor([&] { return jobs_in("team-a") == 6 && jobs_in("team-b") == 6; }));
  // Now four GPUs come: two for each namespace, not first come first served.
  MakeNode(*client, "kb-intake-0", "kb-intake", 4);
  auto bound = [&](const std::string& ns) {
    int n = 0;
    for (const json& pod : Pods(*client, ns)) n += pod["spec"].value("nodeName", "") != "";
    return n;
  };
  CHECK(WaitFor([&] { return bound("kb-ml-a") + bound("kb-ml-b") >= 4; }));
  CHECK(bound("kb-ml-a") == 2);
  CHECK(bound("kb-ml-b") == 2);
  // All of them run and succeed in time.
  CHECK(WaitFor([&] { return bound("kb-ml-a") == 6 && bound("kb-ml-b") == 6; }, 60s));

  // A gang of three 1-GPU pods: nothing until the third exists, then all bound.
  REQUIRE(client
              ->Create(kube::CollectionPath(kube::Resource::Pods(), "kb-ml-a"),
                       IntakePod("kb-ml-a", "g-0", 1, 30, "trio", 3))
              .ok());
  REQUIRE(client
              ->Create(kube::CollectionPath(kube::Resource::Pods(), "kb-ml-a"),
                       IntakePod("kb-ml-a", "g-1", 1, 30, "trio", 3))
              .ok());
  std::this_thread::sleep_for(1s);
  auto gang_bound = [&] {
    int n = 0;
    for (const json& pod : Pods(*client, "kb-ml-a", "tessera.io/pod-group=trio")) {
      n += pod["spec"].value("nodeName", "") != "";
    }
    return n;
  };
  CHECK(gang_bound() == 0);
  REQUIRE(client
              ->Create(kube::CollectionPath(kube::Resource::Pods(), "kb-ml-a"),
                       IntakePod("kb-ml-a", "g-2", 1, 30, "trio", 3))
              .ok());
  CHECK(WaitFor([&] { return gang_bound() == 3; }));
  // Its owner deletes one of its running pods: the gang's job is cancelled (not failed with
  // the kill's exit code), and its other pods are stopped.
  auto job_in_a = [&](const std::string& name) -> std::optional<v1::Job> {
    v1::ListJobsRequest request;
    request.set_queue("team-a");
    request.set_page_size(1000);
    const auto listed = s->ListJobs(request);
    REQUIRE(listed.ok());
    for (const v1::Job& j : listed->jobs()) {
      if (j.spec().name() == name) return j;
    }
    return std::nullopt;
  };
  CHECK(WaitFor([&] {
    const auto j = job_in_a("kb-ml-a/trio");
    return j && j->status().state() == v1::RUNNING;
  }));
  REQUIRE(client->Delete(kube::ObjectPath(kube::Resource::Pods(), "kb-ml-a", "g-1")).ok());
  CHECK(WaitFor([&] {
    const auto j = job_in_a("kb-ml-a/trio");
    return j && j->status().state() == v1::CANCELLED;
  }));
  CHECK(WaitFor([&] { return Pods(*client, "kb-ml-a", "tessera.io/pod-group=trio").empty(); }));

  // A pod that cannot run yet (5 GPUs > 4), deleted by its owner: its job is cancelled.
  REQUIRE(client
              ->Create(kube::CollectionPath(kube::Resource::Pods(), "kb-ml-b"),
                       IntakePod("kb-ml-b", "too-big", 5, 1))
              .ok());
  auto job_named = [&](const std::string& name) -> std::optional<v1::Job> {
    v1::ListJobsRequest request;
    request.set_queue("team-b");
    request.set_page_size(1000);
    const auto listed = s->ListJobs(request);
    REQUIRE(listed.ok());
    for (const v1::Job& j : listed->jobs()) {
      if (j.spec().name() == name) return j;
    }
    return std::nullopt;
  };
  CHECK(WaitFor([&] { return job_named("kb-ml-b/too-big").has_value(); }));
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  REQUIRE(client->Delete(kube::ObjectPath(kube::Resource::Pods(), "kb-ml-b", "too-big"), now).ok());
  CHECK(WaitFor([&] {
    const auto j = job_named("kb-ml-b/too-big");
    return j && j->status().state() == v1::CANCELLED;
  }));
  s->Close();
}

// A pod bound to `node` by someone else: made with spec.nodeName set, as a DaemonSet's pods
// are (or by kube-scheduler's Binding); it runs until deleted.
json BoundPod(const std::string& ns, const std::string& name, const std::string& node, int gpus,
              const std::string& scheduler) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"schedulerName", scheduler},
            {"nodeName", node},
            {"restartPolicy", "Never"},
            {"containers", json::array({{{"name", "main"},
                                         {"image", "busybox"},
                                         {"resources",
                                          {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                                           {"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}})}}}};
}

TEST_CASE("kubernetes backend: what pods bound by others request is not offered") {
  auto client = Client();
  MakeNamespace(*client, "kb-others");
  MakeNode(*client, "kb-others-0", "kb-others", 4);
  const std::string pods = kube::CollectionPath(kube::Resource::Pods(), "kb-others");
  // Before Tessera starts, kube-scheduler's pod holds two of the node's four GPUs.
  REQUIRE(
      client->Create(pods, BoundPod("kb-others", "theirs", "kb-others-0", 2, "default-scheduler"))
          .ok());
  auto s = OpenScheduler({"kb-others", "scheduler_name = tessera\ndefault_queue = default\n"});
  auto offered = [&](const char* what) -> int64_t {
    auto nodes = s->ListNodes();
    REQUIRE(nodes.ok());
    REQUIRE(nodes->size() == 1);
    const v1::NodeSpec& spec = (*nodes)[0].spec();
    if (std::string(what) == "cpu") return spec.cpu_milli();
    if (std::string(what) == "memory") return spec.memory_mib();
    return spec.gpus_size();
  };
  CHECK(WaitFor([&] { return offered("gpus") == 2; }, 5s));
  CHECK(offered("cpu") == 31000);
  CHECK(offered("memory") == 256 * 1024 - 1024);
  // A pod that names Tessera's scheduler but was made bound (not taken in): counted as well.
  REQUIRE(client->Create(pods, BoundPod("kb-others", "bypass", "kb-others-0", 1, "tessera")).ok());
  CHECK(WaitFor([&] { return offered("gpus") == 1; }, 5s));
  // A two-GPU job waits for them; when kube-scheduler's pod goes, it runs.
  auto job = s->Submit(GpuJob(2, Runs(-1)));
  REQUIRE(job.ok());
  std::this_thread::sleep_for(1s);
  CHECK(StateOf(s.get(), job->id()) == v1::PENDING);
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  REQUIRE(
      client->Delete(kube::ObjectPath(kube::Resource::Pods(), "kb-others", "theirs"), now).ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), job->id()) == v1::RUNNING; }));
  // Tessera's own pod there is not counted as someone else's.
  CHECK(offered("gpus") == 3);
  REQUIRE(s->Cancel(job->id()).ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), job->id()) == v1::CANCELLED; }));
  REQUIRE(
      client->Delete(kube::ObjectPath(kube::Resource::Pods(), "kb-others", "bypass"), now).ok());
  s->Close();
}

TEST_CASE("kubernetes backend: a pod taken in is bound in one call and adopted after a restart") {
  auto client = Client();
  MakeNamespace(*client, "kb-adopt");
  MakeNode(*client, "kb-adopt-0", "kb-adopt", 4);
  char dir[] = "/tmp/tessera-kb-adopt-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string store = std::string(dir) + "/store.db";
  const Backend backend{
      "kb-adopt", "scheduler_name = tessera\nqueue_for_namespace = kb-adopt:default\n", store};
  const std::string path = kube::ObjectPath(kube::Resource::Pods(), "kb-adopt", "w");
  uint64_t id = 0;
  {
    auto s = OpenScheduler(backend);
    REQUIRE(client
                ->Create(kube::CollectionPath(kube::Resource::Pods(), "kb-adopt"),
                         IntakePod("kb-adopt", "w", 2, 600))
                .ok());
    auto running = [&] {
      v1::ListJobsRequest request;
      request.set_queue("default");
      auto listed = s->ListJobs(request);
      REQUIRE(listed.ok());
      for (const v1::Job& j : listed->jobs()) {
        if (j.spec().name() == "kb-adopt/w" && j.status().state() == v1::RUNNING) {
          id = j.id();
          return true;
        }
      }
      return false;
    };
    CHECK(WaitFor(running));
    // Bound with the task in its annotations, and no label written: the Binding was the one
    // write, so the pod's resourceVersion moved for the bind and the kubelet stand-in only.
    auto pod = client->Get(path);
    REQUIRE(pod.ok());
    const json& annotations = pod.value()["metadata"]["annotations"];
    CHECK(annotations.value("tessera.io/backend", "") == "k8s-kb-adopt");
    CHECK(annotations.value("tessera.io/job", "") == std::to_string(id));
    CHECK(annotations.value("tessera.io/external-id", "").rfind("kb-adopt/w/", 0) == 0);
    CHECK_FALSE(
        pod.value()["metadata"].value("labels", json::object()).contains("tessera.io/backend"));
    s->Close();
  }
  // A restarted scheduler finds it by its annotations: the job still runs on attempt 1.
  auto s = OpenScheduler(backend);
  std::this_thread::sleep_for(1s);
  const v1::Job job = *s->GetJob(id);
  CHECK(job.status().state() == v1::RUNNING);
  CHECK(job.status().attempt() == 1);
  // It is still followed: its owner deletes it, and the job is cancelled.
  REQUIRE(client->Delete(path).ok());
  CHECK(WaitFor([&] { return StateOf(s.get(), id) == v1::CANCELLED; }));
  s->Close();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  for (const char* tool : {"etcd", "openssl"}) {
    if (std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) != 0) {
      std::cout << "SKIP kube_backend_fake: " << tool << " not found (scripts/install-deps.sh)\n";
      return 77;
    }
  }
  const std::string probe =
      std::string(TESSERA_DEBIAN_PYTHON3) + " -c 'import etcd3, yaml' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) {
    std::cout << "SKIP kube_backend_fake: python3-etcd3 or python3-yaml missing\n";
    return 77;
  }
  tessera::testing::FakeApiServerProcess fake;
  std::string error;
  if (!fake.Start(TESSERA_DEBIAN_PYTHON3, TESSERA_KUBE_FAKE_APISERVER, &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  tessera::g_info = fake.info();
  doctest::Context context(argc, argv);
  return context.run();
}
