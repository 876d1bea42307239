// kube: pods made by others (`schedulerName: tessera`) bound by Tessera through the Kubernetes
// backend (plugins/kubernetes), against the fake API server over a real etcd on loopback
// (plugins/kubernetes/testing/fake_apiserver.py, its kubelet stand-in on). Each run starts a
// fresh fake, makes --nodes Ready nodes of 8 A100-80GB GPUs, opens a scheduler with the
// backend in intake mode (scheduler_name = tessera, every pod to the default queue), and then
// --create-threads threads create --pods one-GPU pods as fast as the fake takes them:
//
//   binds_per_s          pods / the time from the first create until every pod's job is
//                        RUNNING (bound by the backend, started by the kubelet stand-in, and
//                        seen through the backend's watch: an upper bound on the last bind)
//   decided_per_s        pods / the time until the scheduler had placed every job (taken in
//                        through the intake watch, submitted, decided)
//   tessera_cpu_ms_per_bind  CPU of this process (getrusage) over that time, less the creating
//                        threads' own (RUSAGE_THREAD), per pod; split into the decision thread
//                        (engine_cpu_ms_per_bind), the store writer, and the rest (the backend's
//                        watches, JSON, HTTPS and the plugin host: backend_cpu_ms_per_bind)
//   engine_busy_ms_per_bind  the decision passes' own time (SchedulerStats.decision_latency)
//   api_requests_per_bind  requests the fake served over that time, less the creates, per pod
//   fake_cpu_ms_per_bind, etcd_cpu_ms_per_bind  the fake's and its etcd's CPU per pod
//
// Then, with the scheduler closed, the API call alone on the same fake, from --workers threads
// (the backend's own worker count), timed one by one: for fresh unbound pods, the one call the
// backend makes per bind, a Binding POST with the pod's uid and the task's annotations
// (api_alone_binds_per_s, bind_p50_ms, bind_p99_ms). So the Tessera rate can be read against
// what the API itself allows with the same call pattern.
//
// Once per invocation (not per run), beside it:
//   - the fake's own ceiling, measured alone by its bench_binds.py (same nodes and pods, 16
//     threads): fake_ceiling_binds_per_s (--no-ceiling skips it);
//   - watch recovery at --watch-pods pods (0 skips it): the list-watch loop the backend uses
//     (kube::ListWatch, pages of 500) mirrors a namespace of that many pods; while its handler
//     is held, the watch is expired (an ERROR 410 in the stream), pods are added, changed and
//     deleted and etcd is compacted; from the release to the relist's sync is
//     watch_recovery_s, and the mirror is checked against a fresh list (watch_consistent).
//
// Every run's numbers are one JSON line (medians over --repeat runs). The fake is one Python
// process: it, not Tessera, is usually the limit here; compare binds_per_s with
// api_alone_binds_per_s and fake_ceiling_binds_per_s of the same sitting.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "benchmarks.h"
#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "kube/list_watch.h"
#include "kube/resource_path.h"
#include "kubernetes/fake_apiserver_process.h"
#include "tessera/plugin_host.h"
#include "tessera/scheduler.h"

namespace tessera::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double RusageSeconds(int who) {
  struct rusage usage {};
  ::getrusage(who, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// utime + stime of process `pid` from /proc/<pid>/stat, and its parent pid; false when gone.
bool ProcessCpu(int pid, double* seconds, int* parent) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  int64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 4) *parent = std::stoi(field);
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  *seconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return true;
}

// CPU seconds of the fake (`pid`) and of its children (the etcd it launched).
struct FakeCpu {
  double fake = 0;
  double etcd = 0;
};
FakeCpu FakeCpuNow(int pid) {
  FakeCpu cpu;
  int parent = 0;
  ProcessCpu(pid, &cpu.fake, &parent);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    double seconds = 0;
    if (ProcessCpu(std::stoi(name), &seconds, &parent) && parent == pid) cpu.etcd += seconds;
  }
  return cpu;
}

// Runs `work(client, i)` for i in [0, count) from `threads` threads; the threads' own CPU
// (RUSAGE_THREAD) is added to *cpu_s. The first error stops the rest and is returned.
std::string Parallel(int threads, int count, kube::KubeClient* client,
                     const std::function<std::string(kube::KubeClient&, int)>& work,
                     double* cpu_s = nullptr) {
  std::atomic<int> next{0};
  std::mutex mu;
  std::string error;
  double cpu = 0;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      pthread_setname_np(pthread_self(), "kube-bench-api");
      const double start = RusageSeconds(RUSAGE_THREAD);
      for (int i = next++; i < count; i = next++) {
        std::string e = work(*client, i);
        if (!e.empty()) {
          std::lock_guard<std::mutex> lock(mu);
          if (error.empty()) error = std::move(e);
          next = count;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      cpu += RusageSeconds(RUSAGE_THREAD) - start;
    });
  }
  for (std::thread& t : pool) t.join();
  if (cpu_s != nullptr) *cpu_s += cpu;
  return error;
}

std::string NodeName(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "gpu-%04d", i);
  return name;
}

json Node(int i) {
  const json resources = {
      {"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", NodeName(i)},
            {"labels",
             {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
              {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % 4)}}}}},
          {"status",
           {{"capacity", resources},
            {"allocatable", resources},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json Pod(const std::string& ns, const std::string& name, const std::string& scheduler) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"schedulerName", scheduler},
            {"restartPolicy", "Never"},
            {"containers", json::array({{{"name", "main"},
                                         {"image", "busybox:1.36"},
                                         {"resources",
                                          {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}},
                                           {"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
}

std::string PodName(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "p-%05d", i);
  return name;
}

std::string MakeNamespace(kube::KubeClient& client, const std::string& name) {
  auto made =
      client.Create("/api/v1/namespaces",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  return made.ok() ? "" : "namespace " + name + ": " + made.error().ToString();
}

std::string CreatePods(kube::KubeClient* client, const std::string& ns, int pods, int threads,
                       const std::string& scheduler, double* cpu_s = nullptr) {
  const std::string collection = kube::CollectionPath(kube::Resource::Pods(), ns);
  return Parallel(
      threads, pods, client,
      [&](kube::KubeClient& c, int i) -> std::string {
        auto made = c.Create(collection, Pod(ns, PodName(i), scheduler));
        return made.ok() ? "" : "creating pod " + PodName(i) + ": " + made.error().ToString();
      },
      cpu_s);
}

int64_t RequestsServed(kube::KubeClient& client) {
  auto stats = client.Get("/fake/stats");
  return stats.ok() ? stats.value().value("requests", int64_t{0}) : -1;
}

double Ms(double seconds) { return seconds * 1000.0; }

double PercentileMs(std::vector<double> seconds, double p) {
  if (seconds.empty()) return 0;
  std::sort(seconds.begin(), seconds.end());
  const size_t rank = std::min(seconds.size() - 1, static_cast<size_t>(p * seconds.size()));
  return Ms(seconds[rank]);
}

// The API call alone: for `pods` unbound pods of `ns`, the backend's Binding POST (the pod's
// uid, the task's annotations), from `threads` threads, each call timed.
StatusOr<Json> ApiAlone(kube::KubeClient* client, const std::string& ns, int pods, int nodes,
                        int threads) {
  auto listed = client->List(kube::CollectionPath(kube::Resource::Pods(), ns), kube::ListOptions{});
  if (!listed.ok()) return InternalError("listing " + ns + ": " + listed.error().ToString());
  std::map<std::string, std::string> uids;
  for (const json& pod : listed.value().value("items", json::array())) {
    uids[pod["metadata"].value("name", "")] = pod["metadata"].value("uid", "");
  }
  std::mutex mu;
  std::vector<double> bind_s;
  const auto start = Clock::now();
  const std::string error = Parallel(threads, pods, client, [&](kube::KubeClient& c, int i) {
    const std::string name = PodName(i);
    const std::string path = kube::ObjectPath(kube::Resource::Pods(), ns, name);
    const json annotations = {{"tessera.io/backend", "bench"},
                              {"tessera.io/job", std::to_string(i + 1)},
                              {"tessera.io/attempt", "1"},
                              {"tessera.io/task", "0"},
                              {"tessera.io/external-id", ns + "/" + name + "/" + uids[name]}};
    const json binding = {
        {"apiVersion", "v1"},
        {"kind", "Binding"},
        {"metadata",
         {{"name", name}, {"namespace", ns}, {"uid", uids[name]}, {"annotations", annotations}}},
        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", NodeName(i % nodes)}}}};
    const auto t = Clock::now();
    auto bound = c.Create(path + "/binding", binding);
    if (!bound.ok()) return "binding " + name + ": " + bound.error().ToString();
    const double bind_took = SecondsSince(t);
    std::lock_guard<std::mutex> lock(mu);
    bind_s.push_back(bind_took);
    return std::string();
  });
  if (!error.empty()) return InternalError(error);
  const double wall = SecondsSince(start);
  return Json{{"binds_per_s", pods / wall},
              {"bind_p50_ms", PercentileMs(bind_s, 0.5)},
              {"bind_p99_ms", PercentileMs(bind_s, 0.99)}};
}

std::string BuildPluginsDir() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "plugins")
      .string();
}

StatusOr<std::unique_ptr<kube::KubeClient>> ClientOf(const json& info) {
  auto config = kube::LoadKubeconfig({info.value("kubeconfig", ""), "fake"});
  if (!config.ok()) return InternalError(config.error().ToString());
  kube::KubeClientOptions options;
  options.qps = 0;  // the benchmark's own calls are not limited.
  auto client = kube::KubeClient::Create(config.value(), options);
  if (!client.ok()) return InternalError(client.error().ToString());
  return std::move(client).value();
}

StatusOr<Json> RunOnce(const KubeFlags& flags, int run) {
  testing::FakeApiServerProcess fake;
  std::string error;
  if (!fake.Start(TESSERA_BENCH_PYTHON3, TESSERA_BENCH_FAKE_APISERVER, &error, {})) {
    return InternalError(error);
  }
  const int fake_pid = fake.info().value("pid", 0);
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<kube::KubeClient> client, ClientOf(fake.info()));
  const std::string ns = "bench";
  if (std::string e = MakeNamespace(*client, ns); !e.empty()) return InternalError(e);
  const auto nodes_start = Clock::now();
  error = Parallel(flags.create_threads, flags.nodes, client.get(), [](kube::KubeClient& c, int i) {
    auto made = c.Create("/api/v1/nodes", Node(i));
    return made.ok() ? std::string() : "creating node: " + made.error().ToString();
  });
  if (!error.empty()) return InternalError(error);
  const double nodes_s = SecondsSince(nodes_start);

  Options options;
  options.log.level = LogLevel::kWarning;
  options.plugin_dirs = {BuildPluginsDir()};
  BackendOptions backend;
  backend.name = "k8s";
  backend.plugin.plugin = flags.plugin;
  backend.plugin.config = "kubeconfig = " + fake.info().value("kubeconfig", "") +
                          "\ncontext = fake\nname = k8s\nscheduler_name = tessera\n"
                          "default_queue = default\nworkers = " +
                          std::to_string(flags.workers) + "\n";
  for (char c : flags.backend_config) backend.plugin.config += c == ';' ? '\n' : c;
  backend.plugin.config += "\n";
  options.backends.push_back(backend);
  const auto open_start = Clock::now();
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Open(options));
  while (static_cast<int>(scheduler->GetStats().nodes()) < flags.nodes) {
    if (SecondsSince(open_start) > 60) return InternalError("the nodes did not all come in 60 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double open_s = SecondsSince(open_start);

  // The window: from the first create until every job runs.
  const int64_t requests_before = RequestsServed(*client);
  const FakeCpu fake_before = FakeCpuNow(fake_pid);
  const double cpu_before = RusageSeconds(RUSAGE_SELF);
  const double decide_before = ThreadCpuSeconds("tessera-decide");
  const double store_before = ThreadCpuSeconds("tessera-store");
  const v1::SchedulerStats stats_before = scheduler->GetStats();
  double creators_cpu = 0;
  const auto start = Clock::now();
  std::thread creators([&] {
    error =
        CreatePods(client.get(), ns, flags.pods, flags.create_threads, "tessera", &creators_cpu);
  });
  double created_s = 0, decided_s = 0, running_s = 0;
  std::atomic<bool> created{false};
  std::thread created_watch([&] {
    creators.join();
    created_s = SecondsSince(start);
    created = true;
  });
  // RUNNING comes from the backend's pod watch once the kubelet stand-in has started the bound
  // pod: the events say when the last one did.
  std::atomic<int64_t> running{0};
  std::atomic<bool> stop_events{false};
  std::thread events([&] {
    uint64_t after = stats_before.last_event_seq();
    std::set<uint64_t> seen;
    while (!stop_events) {
      auto batch = scheduler->WatchEvents(after, 5000, std::chrono::milliseconds(50));
      if (!batch.ok()) break;
      for (const v1::Event& e : *batch) {
        after = e.seq();
        if (e.to_state() == v1::RUNNING && seen.insert(e.job_id()).second) ++running;
      }
    }
  });
  const int64_t placed_before = stats_before.placements();
  while (true) {
    if (decided_s == 0 && scheduler->GetStats().placements() - placed_before >= flags.pods) {
      decided_s = SecondsSince(start);
    }
    if (running >= flags.pods) {
      running_s = SecondsSince(start);
      break;
    }
    if (created && !error.empty()) break;
    if (SecondsSince(start) > flags.timeout_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop_events = true;
  events.join();
  created_watch.join();
  if (!error.empty()) return InternalError(error);
  const v1::SchedulerStats stats_after = scheduler->GetStats();
  const double cpu_after = RusageSeconds(RUSAGE_SELF);
  const double decide_cpu = ThreadCpuSeconds("tessera-decide") - decide_before;
  const double store_cpu = ThreadCpuSeconds("tessera-store") - store_before;
  const FakeCpu fake_after = FakeCpuNow(fake_pid);
  const int64_t requests = RequestsServed(*client) - requests_before - 1;  // the stats read
  if (running_s == 0) {
    return InternalError("only " + std::to_string(running.load()) + " of " +
                         std::to_string(flags.pods) + " pods running after " +
                         std::to_string(flags.timeout_s) + " s");
  }
  scheduler->Close();
  scheduler.reset();

  const double pods = flags.pods;
  const double tessera_cpu = cpu_after - cpu_before - creators_cpu;
  const double busy_us =
      stats_after.decision_latency().total_us() - stats_before.decision_latency().total_us();
  Json result = {
      {"benchmark", "kube"},
      {"nodes", flags.nodes},
      {"pods", flags.pods},
      {"create_threads", flags.create_threads},
      {"workers", flags.workers},
      {"plugin", flags.plugin},
      {"backend_config", flags.backend_config},
      {"binds_per_s", pods / running_s},
      {"decided_per_s", decided_s > 0 ? pods / decided_s : 0.0},
      {"creates_per_s", pods / created_s},
      {"wall_s", running_s},
      {"nodes_create_s", nodes_s},
      {"open_s", open_s},
      {"tessera_cpu_ms_per_bind", Ms(tessera_cpu) / pods},
      {"engine_cpu_ms_per_bind", Ms(decide_cpu) / pods},
      {"store_cpu_ms_per_bind", Ms(store_cpu) / pods},
      {"backend_cpu_ms_per_bind", Ms(tessera_cpu - decide_cpu - store_cpu) / pods},
      {"engine_busy_ms_per_bind", busy_us / 1000.0 / pods},
      {"decisions", stats_after.decisions() - stats_before.decisions()},
      {"api_requests_per_bind", (static_cast<double>(requests) - pods) / pods},
      {"fake_cpu_ms_per_bind", Ms(fake_after.fake - fake_before.fake) / pods},
      {"etcd_cpu_ms_per_bind", Ms(fake_after.etcd - fake_before.etcd) / pods},
  };

  // The API call alone, on fresh pods no scheduler takes in.
  const std::string alone = "alone";
  if (std::string e = MakeNamespace(*client, alone); !e.empty()) return InternalError(e);
  if (std::string e = CreatePods(client.get(), alone, flags.pods, flags.create_threads, "none");
      !e.empty()) {
    return InternalError(e);
  }
  TESSERA_ASSIGN_OR_RETURN(Json calls,
                           ApiAlone(client.get(), alone, flags.pods, flags.nodes, flags.workers));
  result["api_alone_binds_per_s"] = calls["binds_per_s"];
  result["bind_p50_ms"] = calls["bind_p50_ms"];
  result["bind_p99_ms"] = calls["bind_p99_ms"];
  Progress("kube run " + std::to_string(run) + ": " + std::to_string(flags.pods) +
           " pods bound in " + std::to_string(running_s) + " s (" +
           std::to_string(pods / running_s) + " binds/s); the API call alone " +
           std::to_string(result["api_alone_binds_per_s"].get<double>()) + " binds/s");
  return result;
}

// The fake's own ceiling, by its bench_binds.py (which starts a fake of its own).
StatusOr<Json> FakeCeiling(const KubeFlags& flags) {
  const std::string command =
      std::string(TESSERA_BENCH_PYTHON3) + " " + TESSERA_BENCH_BIND_CEILING + " --nodes " +
      std::to_string(flags.nodes) + " --pods " + std::to_string(flags.pods) + " --threads 16";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return InternalError("cannot run " + command);
  std::string out;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  const int status = ::pclose(pipe);
  const size_t brace = out.rfind('{');
  json line = brace == std::string::npos ? json() : json::parse(out.substr(brace), nullptr, false);
  if (status != 0 || !line.is_object()) {
    return InternalError(command + " failed (status " + std::to_string(status) + "): " + out);
  }
  return line;
}

// Mirrors a namespace's pods (name -> resourceVersion); can hold its thread on one pod's ADDED.
class Mirror : public kube::ListWatchHandler {
 public:
  void OnSync(const kube::ListSync& sync) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const json& o : sync.diff.deleted) objects_.erase(Name(o));
    for (const json& o : sync.diff.added) objects_[Name(o)] = Rv(o);
    for (const json& o : sync.diff.modified) objects_[Name(o)] = Rv(o);
    ++syncs_;
    last_sync_ = Clock::now();
    changes_ = sync.diff.added.size() + sync.diff.modified.size() + sync.diff.deleted.size();
    cv_.notify_all();
  }
  void OnEvent(const kube::WatchEvent& event) override {
    const std::string name = Name(event.object);
    std::unique_lock<std::mutex> lock(mu_);
    if (event.type == kube::WatchEventType::kDeleted) {
      objects_.erase(name);
    } else {
      objects_[name] = Rv(event.object);
    }
    if (name == hold_on_ && event.type == kube::WatchEventType::kAdded) {
      held_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !held_; });
    }
  }
  void HoldOn(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_on_ = name;
  }
  bool WaitHeld(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return held_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
    hold_on_.clear();
    cv_.notify_all();
  }
  bool WaitSyncs(int n, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return syncs_ >= n; });
  }
  Clock::time_point last_sync() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_sync_;
  }
  size_t changes() {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_;
  }
  std::map<std::string, std::string> Objects() {
    std::lock_guard<std::mutex> lock(mu_);
    return objects_;
  }

 private:
  static std::string Name(const json& o) { return o["metadata"].value("name", ""); }
  static std::string Rv(const json& o) { return o["metadata"].value("resourceVersion", ""); }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> objects_;
  int syncs_ = 0;
  size_t changes_ = 0;
  Clock::time_point last_sync_;
  std::string hold_on_;
  bool held_ = false;
};

StatusOr<std::map<std::string, std::string>> ServerView(kube::KubeClient& client,
                                                        const std::string& ns) {
  std::map<std::string, std::string> out;
  kube::ListOptions list;
  list.limit = 500;
  do {
    auto page = client.List(kube::CollectionPath(kube::Resource::Pods(), ns), list);
    if (!page.ok()) return InternalError(page.error().ToString());
    for (const json& p : page.value()["items"]) {
      out[p["metadata"].value("name", "")] = p["metadata"].value("resourceVersion", "");
    }
    list.continue_token = page.value()["metadata"].value("continue", "");
  } while (!list.continue_token.empty());
  return out;
}

StatusOr<Json> WatchRecovery(const KubeFlags& flags) {
  testing::FakeApiServerProcess fake;
  std::string error;
  if (!fake.Start(TESSERA_BENCH_PYTHON3, TESSERA_BENCH_FAKE_APISERVER, &error, {"--no-kubelet"})) {
    return InternalError(error);
  }
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<kube::KubeClient> client, ClientOf(fake.info()));
  const std::string ns = "watch";
  if (std::string e = MakeNamespace(*client, ns); !e.empty()) return InternalError(e);
  Progress("kube watch: creating " + std::to_string(flags.watch_pods) + " pods");
  if (std::string e = CreatePods(client.get(), ns, flags.watch_pods, flags.create_threads, "none");
      !e.empty()) {
    return InternalError(e);
  }
  // The backend's own client settings (plugins/common/kube/README.md), and its loop.
  auto config = kube::LoadKubeconfig({fake.info().value("kubeconfig", ""), "fake"});
  if (!config.ok()) return InternalError(config.error().ToString());
  auto watch_client = kube::KubeClient::Create(config.value());
  if (!watch_client.ok()) return InternalError(watch_client.error().ToString());
  Mirror mirror;
  kube::ListWatchOptions options;
  options.namespace_name = ns;
  kube::ListWatch watch(watch_client.value().get(), options, &mirror);
  const auto list_start = Clock::now();
  watch.Start();
  if (!mirror.WaitSyncs(1, std::chrono::seconds(120))) return InternalError("no first list");
  const double first_list_s =
      std::chrono::duration<double>(mirror.last_sync() - list_start).count();

  // Held on a pod's ADDED: the stream gets an ERROR 410; meanwhile 10 pods come, 10 change and
  // 10 go, and etcd is compacted past where the watch was.
  mirror.HoldOn("trigger");
  const std::string pods = kube::CollectionPath(kube::Resource::Pods(), ns);
  if (!client->Create(pods, Pod(ns, "trigger", "none")).ok()) return InternalError("trigger");
  if (!mirror.WaitHeld(std::chrono::seconds(30))) return InternalError("the watch never held");
  const json empty = json::object();
  auto expired =
      client->Request("POST", "/fake/expire-watches", &empty, "application/json", nullptr, {});
  if (!expired.ok()) return InternalError(expired.error().ToString());
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  for (int i = 0; i < 10; ++i) {
    auto path = kube::ObjectPath(kube::Resource::Pods(), ns, PodName(i));
    if (!client->Delete(path, now).ok()) return InternalError("delete");
    auto changed = client->Patch(kube::ObjectPath(kube::Resource::Pods(), ns, PodName(100 + i)),
                                 {{"metadata", {{"labels", {{"changed", "yes"}}}}}});
    if (!changed.ok()) return InternalError(changed.error().ToString());
    if (!client->Create(pods, Pod(ns, "new-" + std::to_string(i), "none")).ok()) {
      return InternalError("create");
    }
  }
  auto compacted =
      client->Request("POST", "/fake/compact", &empty, "application/json", nullptr, {});
  if (!compacted.ok()) return InternalError(compacted.error().ToString());
  const auto released = Clock::now();
  mirror.Release();
  if (!mirror.WaitSyncs(2, std::chrono::seconds(120))) return InternalError("no relist");
  const double recovery_s = std::chrono::duration<double>(mirror.last_sync() - released).count();
  const size_t changes = mirror.changes();
  TESSERA_ASSIGN_OR_RETURN(auto server, ServerView(*client, ns));
  const bool consistent = mirror.Objects() == server;
  const kube::ListWatchStats stats = watch.Stats();
  watch.Stop();
  return Json{{"watch_pods", static_cast<int64_t>(server.size())},
              {"watch_first_list_s", first_list_s},
              {"watch_recovery_s", recovery_s},
              {"watch_relist_changes", static_cast<int64_t>(changes)},
              {"watch_gone_in_stream", stats.gone_in_stream},
              {"watch_consistent", consistent}};
}

}  // namespace

int RunKube(const KubeFlags& flags) {
  std::vector<Json> runs;
  for (int run = 1; run <= flags.common.repeat; ++run) {
    StatusOr<Json> result = RunOnce(flags, run);
    if (!result.ok()) {
      std::cerr << "kube: " << result.status() << '\n';
      return 1;
    }
    runs.push_back(*result);
  }
  Json summary = Summarize(runs, "binds_per_s");
  if (flags.ceiling) {
    Progress("kube: the fake's own ceiling (bench_binds.py)");
    StatusOr<Json> ceiling = FakeCeiling(flags);
    if (!ceiling.ok()) {
      std::cerr << "kube: " << ceiling.status() << '\n';
      return 1;
    }
    summary["fake_ceiling_binds_per_s"] = (*ceiling)["binds_per_s"];
    summary["fake_ceiling_creates_per_s"] = (*ceiling)["pod_creates_per_s"];
  }
  if (flags.watch_pods > 0) {
    StatusOr<Json> watch = WatchRecovery(flags);
    if (!watch.ok()) {
      std::cerr << "kube: " << watch.status() << '\n';
      return 1;
    }
    for (const auto& [key, value] : watch->items()) summary[key] = value;
  }
  EmitJsonLine(summary);
  PrintTable(summary,
             {"nodes", "pods", "binds_per_s", "decided_per_s", "creates_per_s",
              "tessera_cpu_ms_per_bind", "engine_cpu_ms_per_bind", "backend_cpu_ms_per_bind",
              "engine_busy_ms_per_bind", "api_requests_per_bind", "fake_cpu_ms_per_bind",
              "etcd_cpu_ms_per_bind", "api_alone_binds_per_s", "bind_p50_ms",
              "fake_ceiling_binds_per_s", "watch_pods", "watch_recovery_s", "watch_consistent"});
  return summary.value("watch_consistent", true) ? 0 : 1;
}

}  // namespace tessera::bench
