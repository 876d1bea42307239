// The local backend on NVIDIA GPUs through the scheduler's public API, with the fake
// libnvidia-ml.so.1 (plugins/common/nvml/testing) standing in for the driver: a job asking for a
// 3g.40gb instance on an H100 laid out as 7 x 1g.10gb makes the scheduler re-partition the GPU,
// the backend carries it out through NVML, and the task runs with the new instance's MIG UUID;
// an XID error read through NVML fails the GPU and requeues the job that ran on it.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/fixture.h"
#include "tessera/plugin_host.h"

#if TESSERA_HAVE_BACKEND_PLUGINS

namespace tessera::testing {
namespace {

// A state file for the fake NVML, named by TESSERA_FAKE_NVML_STATE while the object lives (the
// in-process backend reads it through the fake at every NVML call).
class FakeNvidiaGpus {
 public:
  FakeNvidiaGpus(const ScratchDir& dir, const std::string& json) : path_(dir.File("nvml.json")) {
    Write(json);
    ::setenv("TESSERA_FAKE_NVML_STATE", path_.c_str(), 1);
  }
  ~FakeNvidiaGpus() { ::unsetenv("TESSERA_FAKE_NVML_STATE"); }
  void Write(const std::string& json) const { std::ofstream(path_, std::ios::trunc) << json; }
  std::string Read() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string path_;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

template <typename Pred>
bool WaitUntil(Pred done, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

Options LocalOnFakeNvml(const ScratchDir& dir, const std::string& extra_config) {
  Options options;
  options.clock = RealClock();
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  PluginOptions plugin;
  plugin.plugin = "local";
  plugin.config = "node_name = gpu-box\nstate_dir = " + dir.File("local") +
                  "\nnvml_library = " TESSERA_PLUGIN_DIR "/testing/nvml/libnvidia-ml.so.1\n" +
                  extra_config;
  options.executor_plugin = plugin;
  return options;
}

constexpr char kSevenSmall[] = R"({"gpus": [{"model": "H100-80GB", "mig_current": 1,
  "mig_pending": 1, "gpu_instances": [
    {"id": 1, "profile_id": 19, "start": 0, "compute_instances": [{"id": 0, "profile_id": 0}]},
    {"id": 2, "profile_id": 19, "start": 1, "compute_instances": [{"id": 0, "profile_id": 0}]},
    {"id": 3, "profile_id": 19, "start": 2, "compute_instances": [{"id": 0, "profile_id": 0}]},
    {"id": 4, "profile_id": 19, "start": 3, "compute_instances": [{"id": 0, "profile_id": 0}]},
    {"id": 5, "profile_id": 19, "start": 4, "compute_instances": [{"id": 0, "profile_id": 0}]},
    {"id": 6, "profile_id": 19, "start": 5, "compute_instances": [{"id": 0, "profile_id": 0}]},
    {"id": 7, "profile_id": 19, "start": 6, "compute_instances": [{"id": 0, "profile_id": 0}]}]}]})";

TEST_CASE("nvidia local: a 3g.40gb job re-partitions an H100 of 7 x 1g.10gb and runs in it") {
  ScratchDir dir;
  FakeNvidiaGpus gpus(dir, kSevenSmall);
  auto opened = Scheduler::Open(LocalOnFakeNvml(dir, "mig_managed = all\n"));
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  Scheduler* s = opened->get();
  const std::string seen = dir.File("seen");
  const uint64_t job =
      MustSubmit(s, JobSpecBuilder("default")
                        .CpuMilli(100)
                        .MigProfile("3g.40gb")
                        .Command({"/bin/sh", "-c", "echo $CUDA_VISIBLE_DEVICES > " + seen})
                        .Build())
          .id();
  REQUIRE(WaitUntil([&] { return IsTerminal(MustGet(s, job).status().state()); }));
  const v1::Job done = MustGet(s, job);
  CHECK(done.status().state() == v1::SUCCEEDED);
  // The node's GPU now has a 3g.40gb instance, and the task saw its MIG UUID.
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  REQUIRE(nodes->size() == 1);
  const v1::GpuDevice& gpu = (*nodes)[0].spec().gpus(0);
  std::string big_uuid;
  int small = 0;
  for (const v1::PartitionInstance& instance : gpu.instances()) {
    if (instance.mig().profile() == "3g.40gb") big_uuid = instance.uuid();
    small += instance.mig().profile() == "1g.10gb" ? 1 : 0;
  }
  INFO((*nodes)[0].spec().DebugString());
  INFO(ReadText(seen));
  REQUIRE(big_uuid.rfind("MIG-", 0) == 0);
  CHECK(small == 4);
  CHECK(ReadText(seen) == big_uuid + "\n");
  // And the driver has it: a 3-slice GPU instance (profile ID 9) with a compute instance.
  CHECK(gpus.Read().find("\"profile_id\": 9") != std::string::npos);
}

TEST_CASE(
    "nvidia local: a high-priority 7g.80gb job drains the 1g tasks and runs in the new instance") {
  ScratchDir dir;
  FakeNvidiaGpus gpus(dir, kSevenSmall);
  Options options = LocalOnFakeNvml(dir, "mig_managed = all\n");
  options.preemption.min_runtime = std::chrono::seconds(0);
  auto opened = Scheduler::Open(options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  Scheduler* s = opened->get();
  std::vector<uint64_t> small;
  for (int i = 0; i < 7; ++i) {
    small.push_back(MustSubmit(s, JobSpecBuilder("default")
                                      .PriorityClass("low")
                                      .CpuMilli(100)
                                      .MigProfile("1g.10gb")
                                      .Command({"/bin/sh", "-c", "exec sleep 60"})
                                      .Build())
                        .id());
  }
  REQUIRE(WaitUntil([&] {
    for (uint64_t id : small) {
      if (MustGet(s, id).status().state() != v1::RUNNING) return false;
    }
    return true;
  }));
  std::vector<std::string> small_uuids;
  auto before = s->ListNodes();
  REQUIRE(before.ok());
  for (const v1::PartitionInstance& i : (*before)[0].spec().gpus(0).instances()) {
    small_uuids.push_back(i.uuid());
  }
  CHECK(small_uuids.size() == 7);
  const std::string seen = dir.File("seen");
  const uint64_t big =
      MustSubmit(s, JobSpecBuilder("default")
                        .PriorityClass("high")
                        .CpuMilli(100)
                        .MigProfile("7g.80gb")
                        .Command({"/bin/sh", "-c", "echo $CUDA_VISIBLE_DEVICES > " + seen})
                        .Build())
          .id();
  REQUIRE(WaitUntil([&] { return MustGet(s, big).status().state() == v1::SUCCEEDED; }));
  // The GPU was re-partitioned to one 7g instance for it, and its task ran in that instance: a
  // new device, not one of the seven it replaced. (The drained jobs then have it laid out in
  // 1g instances again.)
  auto events = s->WatchEvents(0, 10000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  bool repartitioned = false;
  for (const v1::Event& e : *events) {
    repartitioned |=
        e.kind() == v1::MIG_LAYOUT_CHANGED &&
        e.reason() == "GPU 0 re-partitioned to 7g.80gb@0 for job " + std::to_string(big);
  }
  CHECK(repartitioned);
  const std::string task_saw = ReadText(seen);
  CHECK(task_saw.rfind("MIG-", 0) == 0);
  for (const std::string& uuid : small_uuids) CHECK(task_saw != uuid + "\n");
  // The low-priority jobs were preempted and wait for 1g instances again.
  for (uint64_t id : small) {
    const v1::Job job = MustGet(s, id);
    CHECK(job.status().preemptions() == 1);
    CHECK(job.status().state() != v1::FAILED);
  }
  for (uint64_t id : small) (void)s->Cancel(id);
}

TEST_CASE("nvidia local: a time-sliced GPU runs as many tasks at once as it has replicas") {
  ScratchDir dir;
  FakeNvidiaGpus gpus(dir, R"({"gpus": [{"model": "A100-80GB"}]})");
  auto opened =
      Scheduler::Open(LocalOnFakeNvml(dir, "time_slice_gpus = all\ntime_slice_replicas = 2\n"));
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  Scheduler* s = opened->get();
  std::vector<uint64_t> jobs;
  for (int i = 0; i < 3; ++i) {
    const std::string seen = dir.File("seen-" + std::to_string(i));
    jobs.push_back(
        MustSubmit(s, JobSpecBuilder("default")
                          .CpuMilli(100)
                          .GpuForm(v1::GPU_FORM_TIME_SLICE)
                          .Command({"/bin/sh", "-c",
                                    "echo $CUDA_VISIBLE_DEVICES > " + seen + "; exec sleep 60"})
                          .Build())
            .id());
  }
  auto running = [&] {
    int n = 0;
    for (uint64_t id : jobs) n += MustGet(s, id).status().state() == v1::RUNNING ? 1 : 0;
    return n;
  };
  REQUIRE(WaitUntil([&] { return running() == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(running() == 2);  // the third waits for a slice.
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  const std::string gpu_uuid = (*nodes)[0].spec().gpus(0).uuid();
  int on_the_gpu = 0;
  for (int i = 0; i < 3; ++i)
    on_the_gpu += ReadText(dir.File("seen-" + std::to_string(i))) == gpu_uuid + "\n";
  CHECK(on_the_gpu == 2);  // both slices name the same GPU.
  for (uint64_t id : jobs) (void)s->Cancel(id);
}

TEST_CASE("nvidia local: an XID error read through NVML fails the GPU and requeues its job") {
  ScratchDir dir;
  FakeNvidiaGpus gpus(dir, R"({"gpus": [{"model": "A100-80GB"}]})");
  auto opened = Scheduler::Open(LocalOnFakeNvml(dir, ""));
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  Scheduler* s = opened->get();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default")
                                         .CpuMilli(100)
                                         .Gpus(1)
                                         .Command({"/bin/sh", "-c", "exec sleep 60"})
                                         .Build())
                           .id();
  REQUIRE(WaitUntil([&] { return MustGet(s, job).status().state() == v1::RUNNING; }));
  gpus.Write(R"({"gpus": [{"model": "A100-80GB", "xid_events": [79]}]})");  // fell off the bus.
  REQUIRE(WaitUntil([&] {
    auto nodes = s->ListNodes();
    return nodes.ok() && nodes->size() == 1 && (*nodes)[0].status().gpus_size() == 1 &&
           (*nodes)[0].status().gpus(0).failed();
  }));
  auto nodes = s->ListNodes();
  CHECK((*nodes)[0].status().gpus(0).reason().find("XID 79") != std::string::npos);
  // Requeued with nowhere to go: the node's only GPU has failed.
  REQUIRE(WaitUntil([&] { return MustGet(s, job).status().state() == v1::PENDING; }));
  CHECK(MustGet(s, job).status().attempt() == 2);
  REQUIRE(s->Cancel(job).ok());
}

}  // namespace
}  // namespace tessera::testing

#endif  // TESSERA_HAVE_BACKEND_PLUGINS
