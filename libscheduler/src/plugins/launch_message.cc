#include "plugins/launch_message.h"

#include <algorithm>

namespace tessera {

void DeviceBook::Take(const std::vector<v1::NodeSpec>& nodes) {
  gpus_.clear();
  for (const v1::NodeSpec& node : nodes) {
    gpus_[node.name()].assign(node.gpus().begin(), node.gpus().end());
  }
}

void DeviceBook::TakeGpu(const std::string& node, int gpu, const v1::GpuDevice& device) {
  auto found = gpus_.find(node);
  if (found == gpus_.end() || gpu < 0 || gpu >= static_cast<int>(found->second.size())) return;
  found->second[gpu] = device;
}

const v1::GpuDevice* DeviceBook::Find(const std::string& node, int gpu) const {
  auto found = gpus_.find(node);
  if (found == gpus_.end() || gpu < 0 || gpu >= static_cast<int>(found->second.size())) {
    return nullptr;
  }
  return &found->second[gpu];
}

std::string DeviceBook::GpuUuid(const std::string& node, int gpu) const {
  const v1::GpuDevice* device = Find(node, gpu);
  return device ? device->uuid() : std::string();
}

const v1::PartitionInstance* DeviceBook::MigDevice(const std::string& node, int gpu,
                                                   const std::string& profile, int start) const {
  const v1::GpuDevice* device = Find(node, gpu);
  if (device == nullptr) return nullptr;
  for (const v1::PartitionInstance& instance : device->instances()) {
    if (instance.mig().profile() == profile && instance.mig().start() == start) return &instance;
  }
  return nullptr;
}

v1::LaunchTask MakeLaunchTask(const LaunchRequest& request, const DeviceBook& devices,
                              uint64_t epoch, const std::string& backend) {
  v1::LaunchTask launch;
  v1::TaskRef* ref = launch.mutable_ref();
  ref->set_job(request.ref.job);
  ref->set_attempt(request.ref.attempt);
  ref->set_task(request.ref.task);
  launch.set_node(request.node);
  launch.set_gpu_milli(request.gpu_milli);
  launch.set_gpu_memory_mib(request.gpu_memory_mib);
  if (request.partition) *launch.mutable_partition() = *request.partition;
  const bool mig_share = request.partition && request.partition->sharing() == v1::GPU_SHARING_MIG;
  const v1::PartitionInstance* mig = nullptr;
  if (mig_share && request.gpus.size() == 1) {
    mig = devices.MigDevice(request.node, request.gpus[0], request.partition->mig_profile(),
                            request.partition->mig_start());
  }
  for (int gpu : request.gpus) {
    launch.add_gpus(gpu);
    // A MIG share runs in its instance, never on the whole GPU: unnamed when unknown.
    if (mig_share) {
      launch.add_device_uuids(mig ? mig->uuid() : "");
    } else {
      launch.add_device_uuids(devices.GpuUuid(request.node, gpu));
    }
  }
  if (mig != nullptr) {
    launch.mutable_mig()->set_uuid(mig->uuid());
    launch.mutable_mig()->set_gpu_instance_id(mig->gpu_instance_id());
    launch.mutable_mig()->set_compute_instance_id(mig->compute_instance_id());
  }
  if (request.partition && request.partition->sharing() == v1::GPU_SHARING_MPS) {
    // The share's compute fraction as MPS's active-thread percentage, and its memory as the
    // pinned limit (LaunchRequest::partition says how the engine accounts an MPS share).
    launch.mutable_mps()->set_active_thread_pct(std::max(1, request.gpu_milli / 10));
    launch.mutable_mps()->set_pinned_memory_mib(request.gpu_memory_mib);
  }
  launch.set_cpu_milli(request.cpu_milli);
  launch.set_memory_mib(request.memory_mib);
  if (request.details) {
    launch.set_job_name(request.details->job_name);
    for (const std::string& arg : request.details->command) launch.add_command(arg);
    launch.mutable_env()->insert(request.details->env.begin(), request.details->env.end());
    launch.mutable_labels()->insert(request.details->labels.begin(), request.details->labels.end());
    launch.set_backend_spec(request.details->backend_spec);
    if (!request.details->external_id.empty() && request.details->submitted_by_backend == backend) {
      launch.set_external_id(request.details->external_id);
    }
  }
  launch.set_queue(request.queue);
  launch.set_priority(request.priority);
  launch.set_time_limit_s(request.time_limit_s);
  launch.mutable_simulation()->set_duration_ms(request.sim_duration_ms);
  launch.mutable_simulation()->set_exit_code(request.sim_exit_code);
  if (request.sim_gpu_utilization_pct) {
    launch.mutable_simulation()->set_gpu_utilization_pct(*request.sim_gpu_utilization_pct);
  }
  launch.set_epoch(epoch);
  return launch;
}

}  // namespace tessera
