// MakeLaunchTask: the LaunchTask a plugin of ABI 1.1 gets names devices by UUID (from the
// inventory and partition results), carries MPS limits and the job's details, and the epoch.
#include <doctest/doctest.h>

#include "plugins/launch_message.h"

namespace tessera {
namespace {

v1::NodeSpec MigNode() {
  v1::NodeSpec node;
  node.set_name("a-0");
  for (int g = 0; g < 2; ++g) {
    v1::GpuDevice* gpu = node.add_gpus();
    gpu->set_index(g);
    gpu->set_uuid("GPU-" + std::to_string(g));
  }
  v1::GpuDevice* mig = node.mutable_gpus(1);
  mig->set_sharing(v1::GPU_SHARING_MIG);
  v1::PartitionInstance* instance = mig->add_instances();
  instance->mutable_mig()->set_profile("3g.40gb");
  instance->mutable_mig()->set_start(4);
  instance->set_uuid("MIG-aaaa");
  instance->set_gpu_instance_id(2);
  instance->set_compute_instance_id(0);
  return node;
}

TEST_CASE("launch message: whole GPUs are named by their UUIDs, unknown ones left empty") {
  DeviceBook book;
  book.Take({MigNode()});
  LaunchRequest request;
  request.ref = TaskRef{7, 2, 1};
  request.node = "a-0";
  request.gpus = {0, 5};
  request.gpu_milli = 1000;
  const v1::LaunchTask launch = MakeLaunchTask(request, book, 9, "b");
  REQUIRE(launch.device_uuids_size() == 2);
  CHECK(launch.device_uuids(0) == "GPU-0");
  CHECK(launch.device_uuids(1) == "");  // GPU 5 is not in the inventory.
  CHECK_FALSE(launch.has_mig());
  CHECK_FALSE(launch.has_mps());
  CHECK(launch.ref().job() == 7);
  CHECK(launch.ref().attempt() == 2);
  CHECK(launch.ref().task() == 1);
  CHECK(launch.epoch() == 9);
}

TEST_CASE("launch message: a MIG share names its instance, as the partitioner last reported") {
  DeviceBook book;
  book.Take({MigNode()});
  LaunchRequest request;
  request.node = "a-0";
  request.gpus = {1};
  v1::GpuPartition partition;
  partition.set_sharing(v1::GPU_SHARING_MIG);
  partition.set_mig_profile("3g.40gb");
  partition.set_mig_start(4);
  request.partition = partition;
  v1::LaunchTask launch = MakeLaunchTask(request, book, 0, "b");
  REQUIRE(launch.device_uuids_size() == 1);
  CHECK(launch.device_uuids(0) == "MIG-aaaa");
  CHECK(launch.mig().uuid() == "MIG-aaaa");
  CHECK(launch.mig().gpu_instance_id() == 2);

  // A partition result replaces the GPU's devices.
  v1::GpuDevice relaid = MigNode().gpus(1);
  relaid.mutable_instances(0)->set_uuid("MIG-bbbb");
  relaid.mutable_instances(0)->set_gpu_instance_id(5);
  book.TakeGpu("a-0", 1, relaid);
  launch = MakeLaunchTask(request, book, 0, "b");
  CHECK(launch.mig().uuid() == "MIG-bbbb");
  CHECK(launch.mig().gpu_instance_id() == 5);

  // An instance the partitioner never named: no MIG device, and not the whole GPU either.
  request.partition->set_mig_start(0);
  launch = MakeLaunchTask(request, book, 0, "b");
  CHECK_FALSE(launch.has_mig());
  CHECK(launch.device_uuids(0) == "");
}

TEST_CASE("launch message: an MPS share carries its thread percentage and memory limit") {
  DeviceBook book;
  LaunchRequest request;
  request.node = "a-0";
  request.gpus = {0};
  request.gpu_milli = 250;
  request.gpu_memory_mib = 8192;
  v1::GpuPartition partition;
  partition.set_sharing(v1::GPU_SHARING_MPS);
  request.partition = partition;
  const v1::LaunchTask launch = MakeLaunchTask(request, book, 0, "b");
  CHECK(launch.mps().active_thread_pct() == 25);
  CHECK(launch.mps().pinned_memory_mib() == 8192);
}

TEST_CASE("launch message: the job's queue, priority, labels, time limit and backend spec") {
  auto details = std::make_shared<JobDetails>();
  details->job_name = "train";
  details->command = {"python", "train.py"};
  details->env = {{"A", "1"}};
  details->labels = {{"team", "vision"}};
  details->backend_spec = R"({"image": "pytorch:2.4"})";
  LaunchRequest request;
  request.node = "a-0";
  request.queue = "research/vision";
  request.priority = 100;
  request.time_limit_s = 3600;
  request.details = details;
  const v1::LaunchTask launch = MakeLaunchTask(request, DeviceBook(), 0, "b");
  CHECK(launch.job_name() == "train");
  CHECK(launch.command_size() == 2);
  CHECK(launch.env().at("A") == "1");
  CHECK(launch.labels().at("team") == "vision");
  CHECK(launch.backend_spec() == R"({"image": "pytorch:2.4"})");
  CHECK(launch.queue() == "research/vision");
  CHECK(launch.priority() == 100);
  CHECK(launch.time_limit_s() == 3600);
}

}  // namespace
}  // namespace tessera
