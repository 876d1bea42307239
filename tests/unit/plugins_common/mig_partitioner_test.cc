// The NVML pieces a backend builds on (plugins/common/nvml): the MIG partitioner carrying layouts
// out, the inventory adopting what a GPU has, and telemetry with XID and ECC errors, all against
// the fake libnvidia-ml.so.1, whose state file the tests read back to see what the "driver" has.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nvml/gpu_inventory.h"
#include "nvml/gpu_telemetry.h"
#include "nvml/mig_partitioner.h"
#include "unit/plugins_common/fake_nvml_fixture.h"

namespace tessera::nvml {
namespace {

using fake::FakeGpus;
using fake::Gpu;
using fake::LoadFake;
using json = nlohmann::json;

const std::string kSevenSmall = R"({"gpus": [)" + fake::H100InSevenSmall() + "]}";

v1::PartitionLayout Mig(std::vector<std::pair<std::string, int>> instances) {
  v1::PartitionLayout layout;
  layout.set_sharing(v1::GPU_SHARING_MIG);
  for (const auto& [profile, start] : instances) {
    v1::MigInstance* m = layout.add_mig_instances();
    m->set_profile(profile);
    m->set_start(start);
  }
  return layout;
}

std::string Text(const v1::PartitionLayout& layout) {
  std::string text;
  for (const v1::MigInstance& m : layout.mig_instances()) {
    text += (text.empty() ? "" : " ") + m.profile() + "@" + std::to_string(m.start());
  }
  return text;
}

// (start, profile id, compute instances) of each GPU instance the fake has on GPU 0.
std::string DriverState(const FakeGpus& gpus) {
  const json state = json::parse(gpus.Read());
  std::string text;
  for (const json& gi : state["gpus"][0]["gpu_instances"]) {
    text += (text.empty() ? "" : " ") + std::to_string(gi["start"].get<int>()) + ":" +
            std::to_string(gi["profile_id"].get<int>()) + "/" +
            std::to_string(gi["compute_instances"].size());
  }
  return text;
}

TEST_CASE("mig partitioner: 7 x 1g.10gb becomes 3g.40gb + 4 x 1g.10gb, the kept keep their UUIDs") {
  FakeGpus gpus(kSevenSmall);
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  MigPartitioner partitioner(*lib);
  v1::PartitionLayoutResult before;
  REQUIRE(partitioner.Apply(Gpu(*lib, 0), "H100-80GB",
                            Mig({{"1g.10gb", 0},
                                 {"1g.10gb", 1},
                                 {"1g.10gb", 2},
                                 {"1g.10gb", 3},
                                 {"1g.10gb", 4},
                                 {"1g.10gb", 5},
                                 {"1g.10gb", 6}}),
                            &before));
  CHECK(before.error() == "");
  REQUIRE(before.instances_size() == 7);

  v1::PartitionLayoutResult after;
  REQUIRE(partitioner.Apply(
      Gpu(*lib, 0), "H100-80GB",
      Mig({{"1g.10gb", 0}, {"1g.10gb", 1}, {"1g.10gb", 2}, {"1g.10gb", 3}, {"3g.40gb", 4}}),
      &after));
  CHECK(after.error() == "");
  CHECK(Text(after.applied()) == "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
  REQUIRE(after.instances_size() == 5);
  for (int i = 0; i < 4; ++i) {
    CHECK(after.instances(i).uuid() == before.instances(i).uuid());
    CHECK(after.instances(i).gpu_instance_id() == before.instances(i).gpu_instance_id());
  }
  const v1::PartitionInstance& big = after.instances(4);
  CHECK(big.mig().profile() == "3g.40gb");
  CHECK(big.uuid().rfind("MIG-", 0) == 0);
  // A new instance is a new device, with a UUID no instance had before.
  for (const v1::PartitionInstance& old : before.instances()) CHECK(big.uuid() != old.uuid());
  // The driver has it too: a 3-slice GPU instance (profile ID 9) with one compute instance.
  CHECK(DriverState(gpus) == "0:19/1 1:19/1 2:19/1 3:19/1 4:9/1");

  SUBCASE("asking again changes nothing") {
    const std::string driver = gpus.Read();
    v1::PartitionLayoutResult again;
    REQUIRE(partitioner.Apply(Gpu(*lib, 0), "H100-80GB", after.applied(), &again));
    CHECK(again.error() == "");
    CHECK(gpus.Read() == driver);
    CHECK(again.instances(4).uuid() == big.uuid());
  }
}

TEST_CASE("mig partitioner: a failure midway is rolled back and the result says what the GPU has") {
  FakeGpus gpus(kSevenSmall);
  json state = json::parse(gpus.Read());
  // The second GPU instance creation fails, as when something else took the room.
  state["faults"] = json::array(
      {{{"call", "nvmlDeviceCreateGpuInstanceWithPlacement"}, {"after", 1}, {"error", 23}}});
  gpus.Write(state.dump());
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  MigPartitioner partitioner(*lib);
  v1::PartitionLayoutResult result;
  REQUIRE(partitioner.Apply(Gpu(*lib, 0), "H100-80GB",
                            Mig({{"1g.10gb", 0}, {"1g.10gb", 1}, {"2g.20gb", 2}, {"3g.40gb", 4}}),
                            &result));
  CHECK(result.error() ==
        "creating the GPU instance 3g.40gb at memory slice 4: Insufficient resources; rolled back");
  // Back to seven 1g instances, each with its compute instance and a UUID.
  CHECK(Text(result.applied()) ==
        "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 1g.10gb@6");
  REQUIRE(result.instances_size() == 7);
  for (const v1::PartitionInstance& device : result.instances()) CHECK(!device.uuid().empty());
  CHECK(DriverState(gpus) == "0:19/1 1:19/1 2:19/1 3:19/1 4:19/1 5:19/1 6:19/1");
}

TEST_CASE("mig partitioner: an instance in use stays, and the result reports exactly that") {
  FakeGpus gpus(kSevenSmall);
  json state = json::parse(gpus.Read());
  state["gpus"][0]["gpu_instances"][5]["processes"] = 1;  // 1g.10gb at 5 runs something.
  gpus.Write(state.dump());
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  MigPartitioner partitioner(*lib);
  v1::PartitionLayoutResult result;
  REQUIRE(partitioner.Apply(
      Gpu(*lib, 0), "H100-80GB",
      Mig({{"1g.10gb", 0}, {"1g.10gb", 1}, {"1g.10gb", 2}, {"1g.10gb", 3}, {"3g.40gb", 4}}),
      &result));
  CHECK(result.error().find("destroying compute instance 0 of 1g.10gb at memory slice 5: In use "
                            "by another client") == 0);
  CHECK(Text(result.applied()) ==
        "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 1g.10gb@6");
  CHECK(DriverState(gpus) == "0:19/1 1:19/1 2:19/1 3:19/1 5:19/1 6:19/1 4:19/1");
}

TEST_CASE("mig partitioner: what it refuses, naming the field, with the GPU unchanged") {
  FakeGpus gpus(kSevenSmall);
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  MigPartitioner partitioner(*lib);
  const std::string driver = gpus.Read();
  v1::PartitionLayoutResult result;
  REQUIRE(partitioner.Apply(Gpu(*lib, 0), "H100-80GB", Mig({{"3g.20gb", 0}}), &result));
  CHECK(result.error() ==
        "layout.mig_instances[0].profile: '3g.20gb' is no MIG profile of a H100-80GB");
  result.Clear();
  REQUIRE(
      partitioner.Apply(Gpu(*lib, 0), "H100-80GB", Mig({{"3g.40gb", 0}, {"4g.40gb", 0}}), &result));
  CHECK(result.error().find("layout: not a valid MIG layout of a H100-80GB: ") == 0);
  CHECK(result.applied().mig_instances_size() == 7);
  CHECK(gpus.Read() == driver);

  SUBCASE("MIG off: no MIG layout, and MIG mode is not touched") {
    gpus.Write(R"({"gpus": [{"model": "H100-80GB"}]})");
    result.Clear();
    REQUIRE(partitioner.Apply(Gpu(*lib, 0), "H100-80GB", Mig({{"7g.80gb", 0}}), &result));
    CHECK(result.error().find("MIG mode is off on this GPU") == 0);
    CHECK(result.applied().sharing() == v1::GPU_SHARING_EXCLUSIVE);
    CHECK(json::parse(gpus.Read())["gpus"][0].value("mig_current", 0) == 0);
  }
}

TEST_CASE("nvml inventory: models, UUIDs, MIG mode and adopted instances, NVLink domains") {
  FakeGpus gpus(R"({"gpus": [
    {"model": "H100-80GB", "mig_current": 1, "mig_pending": 1, "nvlink": [1, 1],
     "gpu_instances": [{"id": 3, "profile_id": 9, "start": 4, "processes": 1,
                        "compute_instances": [{"id": 0, "profile_id": 2}]},
                       {"id": 5, "profile_id": 19, "start": 0}]},
    {"model": "H100-80GB", "mig_pending": 1, "nvlink": [0, 0]},
    {"model": "A100-40GB"},
    {"model": "H200-141GB", "nvlink": ["switch"]},
    {"model": "H200-141GB", "nvlink": ["switch"]}]})");
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  NvmlInventory inventory;
  std::vector<std::string> warnings;
  std::string error;
  REQUIRE_MESSAGE(ReadNvmlInventory(*lib, &inventory, &warnings, &error), error);
  CHECK(warnings.empty());
  REQUIRE(inventory.gpus.size() == 5);
  const v1::GpuDevice& mig = inventory.gpus[0].device;
  CHECK(mig.model() == "H100-80GB");
  CHECK(mig.memory_mib() == 81559);  // what an H100 80GB reports.
  CHECK(mig.uuid().rfind("GPU-", 0) == 0);
  CHECK(mig.sharing() == v1::GPU_SHARING_MIG);
  CHECK(Text([&] {
          v1::PartitionLayout l;
          *l.mutable_mig_instances() = mig.mig_instances();
          return l;
        }()) == "1g.10gb@0 3g.40gb@4");
  REQUIRE(mig.instances_size() == 2);
  CHECK(mig.instances(0).uuid() == "");  // a GPU instance without a compute instance.
  CHECK(mig.instances(1).uuid().rfind("MIG-", 0) == 0);
  CHECK(mig.instances(1).gpu_instance_id() == 3);
  // MIG pending on GPU 1 (it waits for a reset): not a MIG GPU yet, and the pending mode shows.
  CHECK(inventory.gpus[1].device.sharing() == v1::GPU_SHARING_DEFAULT);
  CHECK(inventory.gpus[1].mig_pending == NVML_DEVICE_MIG_ENABLE);
  CHECK(inventory.gpus[1].pci_bus_id == "00000000:11:00.0");
  CHECK(inventory.gpus[2].device.model() == "A100-40GB");
  CHECK(inventory.gpus[3].device.model() == "H200-141GB");
  std::vector<int> domains;
  for (const NvmlGpu& gpu : inventory.gpus) domains.push_back(gpu.device.nvlink_domain());
  CHECK(domains == std::vector<int>{0, 0, 2, 3, 3});
}

TEST_CASE("nvml telemetry: readings, new ECC errors only, each XID once") {
  FakeGpus gpus(R"({"gpus": [{"model": "A100-80GB", "utilization": 40, "temperature_c": 66,
                              "power_mw": 250000, "ecc_uncorrectable": 2, "memory_used_mib": 1024},
                             {"model": "A100-80GB"}]})");
  auto lib = LoadFake();
  REQUIRE(lib->Init() == NVML_SUCCESS);
  GpuTelemetrySource source(*lib, {Gpu(*lib, 0), Gpu(*lib, 1)});
  CHECK(source.note() == "GPU 0 had 2 uncorrectable ECC errors before this start; ");
  std::vector<v1::GpuTelemetry> first = source.Read("n1", 5);
  REQUIRE(first.size() == 2);
  CHECK(first[0].node() == "n1");
  CHECK(first[0].time_us() == 5);
  CHECK(first[0].utilization_pct() == 40);
  CHECK(first[0].temperature_c() == 66);
  CHECK(first[0].power_w() == 250);
  CHECK(first[0].memory_used_mib() == 1024);
  CHECK(first[0].ecc_uncorrectable_errors() == 0);
  CHECK(first[0].xid_errors_size() == 0);

  json state = json::parse(gpus.Read());
  state["gpus"][0]["ecc_uncorrectable"] = 3;
  state["gpus"][1]["xid_events"] = json::array({79, 31});
  gpus.Write(state.dump());
  std::vector<v1::GpuTelemetry> second = source.Read("n1", 6);
  CHECK(second[0].ecc_uncorrectable_errors() == 1);
  REQUIRE(second[1].xid_errors_size() == 2);
  CHECK(second[1].xid_errors(0) == 79);
  CHECK(second[1].xid_errors(1) == 31);
  std::vector<v1::GpuTelemetry> third = source.Read("n1", 7);
  CHECK(third[0].ecc_uncorrectable_errors() == 0);
  CHECK(third[1].xid_errors_size() == 0);
}

}  // namespace
}  // namespace tessera::nvml
