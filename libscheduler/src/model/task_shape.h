// TaskShape: what one task of a job needs, in the scheduler's integer units, with its allowed
// GPU models interned. Built once per job from its spec; placement only ever reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/gpu_models.h"
#include "model/resource_vector.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

// The form of GPU share a task accepts (mirrors v1::GpuForm).
enum class GpuForm : uint8_t { kAny, kWhole, kMig, kTimeSlice, kMps, kVgpu };

class PlacementTerms;  // model/placement_terms.h

struct TaskShape {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_count = 0;       // GPUs per task; 0 for a CPU-only task.
  int32_t gpu_milli = 0;       // share of each GPU: 1000 for whole GPUs, 1..999 for a fraction.
  int64_t gpu_memory_mib = 0;  // asked per GPU; 0 = no explicit ask.
  ModelMask models = 0;        // allowed models; 0 = any.
  bool same_nvlink = false;    // all GPUs of the task on one NVLink domain.
  // Set when a listed model could not be interned (more than GpuModels::kMaxModels distinct
  // names): such a job is reported infeasible rather than widened to "any model".
  bool model_overflow = false;
  GpuForm form = GpuForm::kAny;
  // An exact MIG profile by name ("3g.40gb"); empty = the smallest instance that meets the asks.
  std::string mig_profile;
  // An exact vGPU type ("A100-4C" is family "A100", 4 GiB); 0 = the smallest that meets the asks.
  std::string vgpu_family;
  int32_t vgpu_framebuffer_gib = 0;
  // Where the job may run (node selectors, requirements, tolerations); nullptr = any node
  // without a NO_SCHEDULE or NO_EXECUTE taint. Shapes with terms are equal only when they
  // share the compiled object (PlacementTerms::Compile makes one per job).
  std::shared_ptr<const PlacementTerms> terms;

  bool needs_gpu() const { return gpu_count > 0; }
  // A share of one GPU: a fraction, or any form other than whole GPUs (a MIG 7g instance is a
  // share even though it counts as the whole GPU's compute).
  bool fractional_gpu() const {
    return gpu_count == 1 &&
           (gpu_milli < 1000 || (form != GpuForm::kAny && form != GpuForm::kWhole));
  }
  bool whole_gpus() const { return gpu_count > 0 && !fractional_gpu(); }

  friend bool operator==(const TaskShape&, const TaskShape&) = default;
  bool AllowsModel(int model) const {
    return models == 0 || (model >= 0 && (models >> model) & 1u);
  }

  // The least one task holds wherever it is placed, which quotas are checked against before a
  // placement is tried. A task is charged what its allocation holds (TaskAllocation::Vector):
  // a time slice is 1/replicas of its GPU and a vGPU 1/instances, known only once the GPU is
  // chosen, so for them the request counts no compute (and a vGPU no memory, since a type's
  // framebuffer can be less than its name says on a GPU whose memory is not whole GiB), and the
  // engine checks the placed allocation against the quotas again (KeepWithinQuota).
  ResourceVector RequestVector() const {
    const bool vgpu = form == GpuForm::kVgpu;
    return {cpu_milli, memory_mib, int64_t{gpu_count} * gpu_milli,
            vgpu ? 0 : int64_t{gpu_count} * gpu_memory_mib};
  }
};

// Builds a shape from a validated spec, without its terms (the caller compiles those against
// its cluster's labels). Unknown model names are interned so a node that reports
// them later can run the job.
TaskShape MakeTaskShape(const v1::JobSpec& spec, GpuModels& models);

}  // namespace tessera
