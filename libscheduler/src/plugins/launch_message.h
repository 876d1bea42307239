// LaunchMessage: the tessera.v1.LaunchTask a placed task becomes for its backend's plugin.
//
// The engine places a task by node and device index (LaunchRequest); a plugin of ABI 1.1 also
// gets the devices by name, so it need not map indices itself: the GPU UUID of each listed GPU
// from the inventory, and for a MIG share the instance's "MIG-" UUID with its GPU and compute
// instance ids from the partitioner's result (GpuDevice.instances). An MPS share carries its
// client limits, and every launch the job's queue, priority, labels, time limit, backend spec and
// the host's fencing epoch; a job the backend submitted itself, its external id. A device the
// backend reported no name for is left empty.
//
//   DeviceBook book;
//   book.Take(inventory);                  // at open and at every inventory change
//   book.TakeGpu("a-0", 3, applied_gpu);   // after a partition result
//   v1::LaunchTask launch = MakeLaunchTask(request, book, epoch, backend_name);
//
// Strand only, like the executor that keeps it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/executor.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera {

// The devices of a backend's nodes, by node name.
class DeviceBook {
 public:
  void Take(const std::vector<v1::NodeSpec>& nodes);
  // One GPU's description changed (a partition result): its instances and their devices.
  void TakeGpu(const std::string& node, int gpu, const v1::GpuDevice& device);

  // The GPU's UUID; empty when unknown.
  std::string GpuUuid(const std::string& node, int gpu) const;
  // The device of the MIG instance of `profile` at `start` on that GPU; null when unknown.
  const v1::PartitionInstance* MigDevice(const std::string& node, int gpu,
                                         const std::string& profile, int start) const;
  // The GPU as last described; null when unknown.
  const v1::GpuDevice* Find(const std::string& node, int gpu) const;

 private:
  std::unordered_map<std::string, std::vector<v1::GpuDevice>> gpus_;  // node -> its GPUs.
};

// `backend` is the name of the backend the launch goes to: a job it submitted itself
// (model/job_source.h) gets its external id, no other.
v1::LaunchTask MakeLaunchTask(const LaunchRequest& request, const DeviceBook& devices,
                              uint64_t epoch, const std::string& backend);

}  // namespace tessera
