// Cloud burst end to end, in real time: the scheduler with two backends, the Kubernetes backend
// (plugins/kubernetes) against the fake API server and the aws-ec2 capacity provider
// (plugins/aws-ec2) against moto behind the fault proxy, whose kubelet stand-in registers each
// running instance as a Node with the GPUs its type has (/fault/join node_types). A job the
// private node cannot hold gets an EC2 instance, runs there as a pod, is charged to its queue,
// and the idle instance is terminated; a scheduler restarted mid-burst takes the instance's Node
// as a burst node again (its tessera.io/node-group label) and leaks nothing. Exits 77 (skipped)
// when moto_server, etcd, openssl or python3-etcd3 is missing.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "aws/ec2_client.h"
#include "aws/ec2_proxy_process.h"
#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "kubernetes/fake_apiserver_process.h"
#include "tessera/job.h"
#include "tessera/scheduler.h"

namespace tessera {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kAccessKey[] = "AKIDTESSERABURST";
constexpr char kSecret[] = "burst/test+secret";
constexpr char kCluster[] = "burst-e2e";

aws::HttpEndpoint g_proxy;
json g_kube;

void Fault(const std::string& what, const json& body) {
  const auto [status, reply] = aws::testing::PostFault(g_proxy, what, body.dump());
  REQUIRE_MESSAGE(status == 200, reply);
}

bool WaitFor(const std::function<bool()>& done, std::chrono::seconds limit = 60s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return done();
}

std::unique_ptr<kube::KubeClient> KubeClient() {
  auto config = kube::LoadKubeconfig({g_kube["kubeconfig"].get<std::string>(), "fake"});
  REQUIRE_MESSAGE(config.ok(), config.error().ToString());
  auto client = kube::KubeClient::Create(config.value());
  REQUIRE_MESSAGE(client.ok(), client.error().ToString());
  return std::move(client).value();
}

// The private pool: one Node of 4 GPUs with the case's pool label.
void MakePrivateNode(const std::string& pool) {
  const json resources = {
      {"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "4"}};
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata",
                {{"name", pool + "-private"},
                 {"labels", {{"pool", pool}, {"nvidia.com/gpu.product", "NVIDIA-A10G"}}}}},
               {"status",
                {{"allocatable", resources},
                 {"capacity", resources},
                 {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  auto client = KubeClient();
  auto made = client->Create("/api/v1/nodes", node);
  REQUIRE_MESSAGE(made.ok(), made.error().ToString());
  auto ns =
      client->Create("/api/v1/namespaces",
                     {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", pool}}}});
  REQUIRE_MESSAGE(ns.ok(), ns.error().ToString());
}

// moto and the proxy start afresh; instances join as Nodes of g5.12xlarge's shape, in `pool`.
void ResetCloud(const std::string& pool) {
  Fault("reset", json::object());
  const json resources = {
      {"cpu", "48"}, {"memory", "192Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "4"}};
  Fault("join", {{"kube_url", g_kube["url"]},
                 {"token", g_kube["token"]},
                 {"ca", g_kube["ca"]},
                 {"node_types",
                  {{"g5.12xlarge",
                    {{"capacity", resources},
                     {"labels", {{"pool", pool}, {"nvidia.com/gpu.product", "NVIDIA-A10G"}}}}}}}});
}

Options BurstOptions(const std::string& pool, const std::string& store = "") {
  Options options;
  BackendOptions k8s;
  k8s.name = "k8s-" + pool;  // each case its own backend: it adopts only its own pods.
  k8s.plugin.plugin = std::string(TESSERA_PLUGIN_DIR) + "/libtessera_plugin_kubernetes.so";
  k8s.plugin.config = "kubeconfig = " + g_kube["kubeconfig"].get<std::string>() +
                      "\ncontext = fake\nname = k8s-" + pool + "\nnamespace = " + pool +
                      "\ndefault_image = busybox:1.36\nnode_selector = pool=" + pool + "\n";
  options.backends.push_back(k8s);
  BackendOptions ec2;
  ec2.name = "aws";
  ec2.plugin.plugin = TESSERA_AWS_EC2_PLUGIN;
  ec2.plugin.config =
      json{{"cluster", kCluster},
           {"region", "us-east-1"},
           {"endpoint", "http://127.0.0.1:" + g_proxy.port},
           {"credentials",
            {{"shared_credentials_file", "/nonexistent/credentials"}, {"imds_endpoint", "off"}}},
           {"join", {{"kubeconfig", g_kube["kubeconfig"]}, {"timeout_s", 60}}},
           {"poll_interval_ms", 200},
           {"node_groups",
            {{{"name", "a10g"},
              {"market", "on-demand"},
              {"max_nodes", 2},
              {"image_id", "ami-12c6146b"},
              {"instance_types", {{{"type", "g5.12xlarge"}, {"on_demand_price_per_hour", 5.672}}}},
              {"zones", {"us-east-1a"}}}}}}
          .dump();
  options.backends.push_back(ec2);
  options.elastic.scale_out_after = 1s;
  options.elastic.scale_in_after = 3s;
  options.elastic.metering_interval = 1s;
  options.engine.max_reservations = 0;
  if (!store.empty()) options.store.path = store;
  return options;
}

std::unique_ptr<Scheduler> OpenScheduler(const Options& options) {
  auto opened = Scheduler::Open(options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  return std::move(opened).value();
}

// A 4-GPU job whose pod the kubelet stand-in runs `seconds` (< 0: until deleted).
v1::JobSpec GpuJob(int seconds) {
  v1::JobSpec spec = JobSpecBuilder("default").Gpus(4).CpuMilli(4000).MemoryMib(16384).Build();
  json annotations = {{"fake.tessera.io/exit-code", "0"}};
  if (seconds >= 0) annotations["fake.tessera.io/run-seconds"] = std::to_string(seconds);
  spec.set_backend_spec(json{{"metadata", {{"annotations", annotations}}}}.dump());
  return spec;
}

v1::Job Get(Scheduler* s, uint64_t id) {
  auto job = s->GetJob(id);
  REQUIRE(job.ok());
  return *job;
}

std::optional<std::map<std::string, std::string>> LabelsOf(Scheduler* s, const std::string& name) {
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  for (const v1::Node& node : *nodes) {
    if (node.spec().name() == name) {
      return std::map<std::string, std::string>(node.spec().labels().begin(),
                                                node.spec().labels().end());
    }
  }
  return std::nullopt;
}

size_t LiveInstances() {
  aws::Ec2ClientOptions options;
  options.endpoint = g_proxy;
  options.credentials = {kAccessKey, kSecret, ""};
  aws::DescribeInstancesRequest request;
  request.filters = {{"tag:tessera:cluster", {kCluster}},
                     {"instance-state-name", {"pending", "running"}}};
  auto all = aws::Ec2Client(options).DescribeAllInstances(request);
  REQUIRE_MESSAGE(all.ok(), all.error().ToString());
  return all.value().size();
}

TEST_CASE("ec2 burst: a job the private node cannot hold runs on an EC2 instance, then it goes") {
  const std::string pool = "eb-run";
  ResetCloud(pool);
  MakePrivateNode(pool);
  auto s = OpenScheduler(BurstOptions(pool));
  auto holder = s->Submit(GpuJob(-1));
  REQUIRE(holder.ok());
  REQUIRE(WaitFor([&] { return Get(s.get(), holder->id()).status().state() == v1::RUNNING; }));
  auto job = s->Submit(GpuJob(4));
  REQUIRE(job.ok());
  REQUIRE(WaitFor([&] { return Get(s.get(), job->id()).status().state() == v1::RUNNING; }));
  const std::string node = Get(s.get(), job->id()).status().placements(0).node();
  CHECK(node.rfind("ip-", 0) == 0);  // the instance's private DNS name, as its Node is named.
  CHECK(LiveInstances() == 1);
  // A burst node once the request ended (EC2 saw the Node Ready): labelled, and charged.
  CHECK(WaitFor(
      [&] {
        auto labels = LabelsOf(s.get(), node);
        return labels && (*labels)["tessera.io/burst-market"] == "on-demand";
      },
      20s));
  REQUIRE(WaitFor([&] { return Get(s.get(), job->id()).status().state() == v1::SUCCEEDED; }));
  auto queue = s->GetQueue("default");
  REQUIRE(queue.ok());
  CHECK(queue->status().burst().today() > 0);
  // Idle for scale_in_after: drained, given back, terminated; its Node goes with it.
  CHECK(WaitFor([&] { return LiveInstances() == 0; }, 30s));
  CHECK(WaitFor([&] { return !LabelsOf(s.get(), node).has_value(); }, 30s));
  CHECK(LabelsOf(s.get(), pool + "-private").has_value());
  REQUIRE(s->Cancel(holder->id()).ok());
  s->Close();
}

TEST_CASE("ec2 burst: a scheduler restarted mid-burst keeps its instance a burst node") {
  const std::string pool = "eb-restart";
  ResetCloud(pool);
  MakePrivateNode(pool);
  const std::string store =
      std::filesystem::temp_directory_path() / ("tessera-ec2-burst-" + std::to_string(::getpid()));
  std::filesystem::remove(store);
  std::string node;
  uint64_t job = 0;
  {
    auto s = OpenScheduler(BurstOptions(pool, store));
    REQUIRE(s->Submit(GpuJob(-1)).ok());
    auto submitted = s->Submit(GpuJob(-1));
    REQUIRE(submitted.ok());
    job = submitted->id();
    const bool running = WaitFor([&] { return Get(s.get(), job).status().state() == v1::RUNNING; });
    const v1::JobStatus status = Get(s.get(), job).status();
    REQUIRE_MESSAGE(running, v1::JobState_Name(status.state()) << ": " << status.reason());
    node = Get(s.get(), job).status().placements(0).node();
    s->Close();
  }
  auto s = OpenScheduler(BurstOptions(pool, store));
  auto labels = LabelsOf(s.get(), node);
  REQUIRE(labels.has_value());
  CHECK((*labels)["tessera.io/burst-market"] == "on-demand");
  CHECK(LiveInstances() == 1);  // adopted by its tags, not launched again.
  REQUIRE(s->Cancel(job).ok());
  CHECK(WaitFor([&] { return LiveInstances() == 0; }, 30s));
  s->Close();
  std::filesystem::remove(store);
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using tessera::aws::testing::OnPath;
  for (const char* tool : {"moto_server", "etcd", "openssl"}) {
    if (!OnPath(tool)) {
      std::cout << "SKIP ec2_burst: " << tool
                << " not found (scripts/install-deps.sh installs moto[server], etcd-server)\n";
      return 77;
    }
  }
  const std::string probe =
      std::string(TESSERA_DEBIAN_PYTHON3) + " -c 'import etcd3, yaml' >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0) {
    std::cout << "SKIP ec2_burst: python3-etcd3 or python3-yaml missing\n";
    return 77;
  }
  ::setenv("AWS_ACCESS_KEY_ID", tessera::kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", tessera::kSecret, 1);
  ::unsetenv("AWS_SESSION_TOKEN");
  tessera::testing::FakeApiServerProcess kube;
  std::string error;
  if (!kube.Start(TESSERA_DEBIAN_PYTHON3, TESSERA_KUBE_FAKE_APISERVER, &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  tessera::aws::testing::Ec2ProxyProcess proxy;
  if (!proxy.Start(TESSERA_EC2_FAULT_PROXY, tessera::kAccessKey, tessera::kSecret,
                   /*tls=*/false, &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  tessera::g_proxy = proxy.endpoint();
  tessera::g_kube = kube.info();
  doctest::Context context(argc, argv);
  return context.run();
}
