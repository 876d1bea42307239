// MigPartitioner: carries a MIG layout the scheduler chose out on one GPU through NVML, and says
// what the GPU has afterwards.
//
// A layout is a set of GPU instances, each a profile of the GPU's model at a placement start
// ("3g.40gb" at 4). Apply compares the target with what the GPU has, by (profile, start):
//   1. instances in both are kept as they are (tasks may run in them: their GPU instance id,
//      compute instance and MIG UUID do not change);
//   2. instances only in the current layout are destroyed, compute instances first (NVML refuses
//      to destroy a GPU instance that has any), all of them before anything is created, since a
//      new instance may need the memory slices an old one holds;
//   3. instances only in the target are created at their placements, each with one compute
//      instance spanning it.
// Asking for the layout the GPU has changes nothing (idempotent). When a step fails (an instance
// still in use, room taken by someone else, a driver error), the partitioner undoes what this
// call did as far as the driver lets it: it destroys what it created and re-creates what it
// destroyed, at the same placements (they come back with new ids and UUIDs, as from the driver).
// Either way the result says exactly what the GPU has, read back from NVML, with an error
// naming the step that failed.
//
// MIG mode is never changed here: a GPU with MIG off refuses MIG layouts. Whether a GPU may be
// re-partitioned at all is the backend's decision (its configuration); this class does what it is
// asked. Not thread-safe: one caller at a time per GPU (the backend serialises its calls).
#pragma once

#include <string>

#include "nvml/mig_instances.h"
#include "nvml/nvml_library.h"
#include "tessera/v1/plugin.pb.h"

namespace tessera::nvml {

class MigPartitioner {
 public:
  explicit MigPartitioner(NvmlLibrary& nvml) : nvml_(nvml) {}

  // Shapes GPU `device` (of model `model`, "H100-80GB") to `target` (its mig_instances; sharing
  // must be GPU_SHARING_MIG). Always fills result->applied and result->instances with what the
  // GPU has afterwards; sets result->error when that is not the target, saying why (an unknown
  // profile, an invalid layout, MIG off, or the NVML step that failed). Returns false only when
  // the GPU could not be read at all.
  bool Apply(nvmlDevice_t device, const std::string& model, const v1::PartitionLayout& target,
             v1::PartitionLayoutResult* result);

  // What GPU `device` has now, as a layout and its devices. False with the reason when NVML
  // cannot say (or the model has no MIG table).
  bool Describe(nvmlDevice_t device, const std::string& model, v1::PartitionLayout* layout,
                google::protobuf::RepeatedPtrField<v1::PartitionInstance>* instances,
                std::string* error);

 private:
  // Creates a GPU instance of `instance` and its compute instance; false with the reason.
  bool Create(nvmlDevice_t device, const mig::ModelProfiles& model, const mig::Instance& instance,
              std::string* error);
  // Destroys `state`'s compute instances, then the GPU instance; false with the reason.
  bool Destroy(const MigInstanceState& state, std::string* error);

  NvmlLibrary& nvml_;
};

}  // namespace tessera::nvml
