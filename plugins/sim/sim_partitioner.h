// SimPartitioner: how the sim plugin shapes its simulated GPUs (ABI 1.1 partition layouts).
//
// A layout takes effect at once, in the form of sharing the GPU already has (MIG instances, a
// vGPU type, time-slice replicas; MPS has nothing to shape), and the result is the layout the
// GPU has afterwards with a device for each MIG instance. Devices are named as the driver names
// them in shape, not in value: a "MIG-" UUID derived from the node, the GPU and the GPU instance
// id (the driver's are random), GPU instance ids counting up per GPU from 1 and compute instance
// 0. Instances kept from the previous layout keep their ids and UUIDs, as NVML's do. Whether a
// MIG layout is valid for the GPU's model is the scheduler's check; this one needs the GPU to
// exist, be in the layout's form and name well-formed instances.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "tessera/plugin/plugin.h"
#include "tessera/v1/node.pb.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::sim {

class SimPartitioner {
 public:
  // Shapes GPU request.gpu() of `node`. No such GPU, a GPU in another form, or `failing` leaves
  // it as it is and sets result->error. Errors: INVALID_ARGUMENT naming a malformed instance
  // (layout.mig_instances[1].start: must be 0..7, got 9).
  plugin::PluginStatus Apply(const v1::PartitionLayoutRequest& request, bool failing,
                             v1::NodeSpec* node, v1::PartitionLayoutResult* result);
  // Sets GpuDevice.instances of every MIG GPU of `node` from its layout.
  void DescribeDevices(v1::NodeSpec* node);

  static v1::PartitionLayout LayoutOf(const v1::GpuDevice& gpu);

 private:
  std::map<std::pair<std::string, int>, int> last_gpu_instance_id_;  // per (node, GPU).
};

}  // namespace tessera::sim
