// The local backend serving NVIDIA vGPUs: the backend made as a linked plugin
// (plugins/local/local_backend.h) with the fake /sys of plugins/common/vgpu/testing in its sysfs
// seam, the fake libnvidia-ml.so.1 for its GPU, and the SDK's FakeHost driving it through the
// ABI. A vGPU is made for a placed vGPU task and removed after it; a second type on the same GPU
// is refused; a restarted backend takes back the device of a task it adopts.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "local_backend.h"
#include "support/temp_dir.h"
#include "tessera/plugin/fake_host.h"
#include "tessera/plugin/linked.h"
#include "unit/plugins_common/fake_nvml_fixture.h"
#include "vgpu/device_uuid.h"
#include "vgpu/testing/fake_vgpu_sysfs.h"

namespace tessera {
namespace {

using nvml::fake::FakeGpus;
using plugin::FakeHost;
using plugin::PluginStatus;
using vgpu::testing::FakeGpuModel;
using vgpu::testing::FakeVgpuForm;
using vgpu::testing::FakeVgpuSysfs;

constexpr const char* kNode = "vgpu-node";
// Where the fake NVML puts its GPU 0 ("00000000:10:00.0"), in sysfs's form.
constexpr const char* kPf = "0000:10:00.0";

std::unique_ptr<FakeHost> Start(const testing::TempDir& dir, std::shared_ptr<FakeVgpuSysfs> sysfs) {
  auto linked = plugin::MakeLinkedPlugin(
      local::kPluginName, local::kPluginVersion, local::kPluginKinds,
      [sysfs](plugin::Host host) { return local::MakeLocalBackend(host, {sysfs}); });
  std::unique_ptr<FakeHost> host;
  PluginStatus status = FakeHost::Linked(linked, &host);
  REQUIRE_MESSAGE(status.ok(), status.message);
  status = host->Init("node_name = " + std::string(kNode) + "\nstate_dir = " + dir.path().string() +
                      "\npoll_interval_ms = 10\nnvml_library = " + nvml::fake::FakePath() +
                      "\nvgpu_gpus = 0\n");
  REQUIRE_MESSAGE(status.ok(), status.message);
  return host;
}

v1::LaunchTask VgpuTask(uint64_t job, const std::string& type, const std::string& script) {
  v1::LaunchTask launch;
  launch.mutable_ref()->set_job(job);
  launch.mutable_ref()->set_attempt(1);
  launch.set_node(kNode);
  launch.set_cpu_milli(100);
  launch.set_memory_mib(16);
  launch.add_gpus(0);
  launch.mutable_partition()->set_sharing(v1::GPU_SHARING_VGPU);
  launch.mutable_partition()->set_vgpu_type(type);
  for (const std::string& arg : {std::string("/bin/sh"), std::string("-c"), script}) {
    launch.add_command(arg);
  }
  return launch;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<v1::BackendEvent> Await(FakeHost& host, v1::BackendEvent::Kind kind, uint64_t job) {
  return host.WaitForEvent(
      [&](const v1::BackendEvent& e) {
        return e.ref().job() == job &&
               (e.kind() == kind || e.kind() == v1::BackendEvent::LAUNCH_REJECTED);
      },
      std::chrono::seconds(10));
}

TEST_CASE("local vGPU: a device is made for a placed vGPU task and removed after it") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-40GB"}]})");
  auto sysfs = std::make_shared<FakeVgpuSysfs>();
  sysfs->AddGpu(kPf, FakeGpuModel::A100_40GB(), FakeVgpuForm::kMdevOnPf);
  testing::TempDir dir("local-vgpu");
  std::unique_ptr<FakeHost> host = Start(dir, sysfs);
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  CHECK(inventory.nodes(0).gpus(0).sharing() == v1::GPU_SHARING_VGPU);
  CHECK(inventory.nodes(0).gpus(0).vgpu_type() == "");  // no device yet: any type may be made.

  const std::string out = (dir.path() / "seen").string();
  const std::string gate = (dir.path() / "gate").string();
  REQUIRE(
      host->Launch(VgpuTask(1, "A100-4C",
                            "echo $TESSERA_VGPU_DEVICE $TESSERA_VGPU_TYPE $TESSERA_VGPU_SYSFS > " +
                                out + "; while [ ! -e " + gate + " ]; do sleep 0.02; done"))
          .ok());
  const auto started = Await(*host, v1::BackendEvent::TASK_STARTED, 1);
  REQUIRE(started.has_value());
  REQUIRE(started->kind() == v1::BackendEvent::TASK_STARTED);
  const std::string uuid = vgpu::MdevUuidFor("1-1-0");
  CHECK(sysfs->Exists("/sys/bus/mdev/devices/" + uuid));
  for (int i = 0; i < 100 && ReadFile(out).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(ReadFile(out) == uuid + " A100-4C /sys/bus/mdev/devices/" + uuid + "\n");

  SUBCASE("another type on the same GPU is refused while the device is there") {
    REQUIRE(host->Launch(VgpuTask(2, "A100-8C", "true")).ok());
    const auto refused = Await(*host, v1::BackendEvent::TASK_STARTED, 2);
    REQUIRE(refused.has_value());
    CHECK(refused->kind() == v1::BackendEvent::LAUNCH_REJECTED);
    CHECK(refused->message().find("A100-4C") != std::string::npos);
    CHECK(refused->retryable());  // once the A100-4C devices are gone, it can be made.
  }
  SUBCASE("a restarted backend takes the running task's device back") {
    host.reset();
    host = Start(dir, sysfs);
    CHECK(sysfs->Exists("/sys/bus/mdev/devices/" + uuid));
    v1::Inventory again;
    REQUIRE(host->Inventory(&again).ok());
    CHECK(again.nodes(0).gpus(0).vgpu_type() == "A100-4C");  // the type in use stays.
  }
  std::ofstream(gate).put('\n');
  const auto exited = Await(*host, v1::BackendEvent::TASK_EXITED, 1);
  REQUIRE(exited.has_value());
  // The device goes once the task has ended (the same monitor pass that reports it).
  for (int i = 0; i < 100 && sysfs->Exists("/sys/bus/mdev/devices/" + uuid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK_FALSE(sysfs->Exists("/sys/bus/mdev/devices/" + uuid));
}

TEST_CASE("local vGPU: on SR-IOV VFs (vendor VFIO) a task gets a VF, kept across a restart") {
  FakeGpus gpus(R"({"gpus": [{"model": "H100-80GB"}]})");
  auto sysfs = std::make_shared<FakeVgpuSysfs>();
  sysfs->AddGpu(kPf, FakeGpuModel::H100_80GB(), FakeVgpuForm::kVendorVfio, 4);
  testing::TempDir dir("local-vgpu");
  std::unique_ptr<FakeHost> host = Start(dir, sysfs);
  const std::string out = (dir.path() / "seen").string();
  const std::string gate = (dir.path() / "gate").string();
  REQUIRE(host->Launch(VgpuTask(1, "H100-10C",
                                "echo $TESSERA_VGPU_DEVICE $TESSERA_VGPU_FORM > " + out +
                                    "; while [ ! -e " + gate + " ]; do sleep 0.02; done"))
              .ok());
  const auto started = Await(*host, v1::BackendEvent::TASK_STARTED, 1);
  REQUIRE(started.has_value());
  REQUIRE_MESSAGE(started->kind() == v1::BackendEvent::TASK_STARTED, started->message());
  for (int i = 0; i < 100 && ReadFile(out).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string vf = sysfs->VfsOf(kPf).at(0);
  CHECK(ReadFile(out) == vf + " vendor-vfio\n");
  std::string type;
  REQUIRE(sysfs->Read("/sys/bus/pci/devices/" + vf + "/nvidia/current_vgpu_type", &type) == 0);
  CHECK(type != "0\n");

  host.reset();  // a restart: the new instance takes the VF back for the task it adopts.
  host = Start(dir, sysfs);
  v1::Inventory inventory;  // as a host asks after a restart (it starts the monitor).
  REQUIRE(host->Inventory(&inventory).ok());
  std::ofstream(gate).put('\n');
  REQUIRE(Await(*host, v1::BackendEvent::TASK_EXITED, 1).has_value());
  for (int i = 0; i < 100; ++i) {
    REQUIRE(sysfs->Read("/sys/bus/pci/devices/" + vf + "/nvidia/current_vgpu_type", &type) == 0);
    if (type == "0\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(type == "0\n");  // given back once the task ended.
}

TEST_CASE("local vGPU: a GPU without vGPU support is offered whole, and the log says why") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-40GB"}]})");
  auto sysfs = std::make_shared<FakeVgpuSysfs>();  // no GPU laid out: no mdev or VFs.
  testing::TempDir dir("local-vgpu");
  std::unique_ptr<FakeHost> host = Start(dir, sysfs);
  v1::Inventory inventory;
  REQUIRE(host->Inventory(&inventory).ok());
  CHECK(inventory.nodes(0).gpus(0).sharing() == v1::GPU_SHARING_DEFAULT);
  bool said = false;
  for (const auto& entry : host->logs()) {
    said |= entry.message.find("vgpu_gpus: GPU 0 offered whole: ") != std::string::npos;
  }
  CHECK(said);
}

}  // namespace
}  // namespace tessera
