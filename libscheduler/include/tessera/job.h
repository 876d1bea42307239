// Job helpers: state names, terminal states, and JobSpecBuilder, a short way to write a spec.
//
//   v1::JobSpec spec = JobSpecBuilder("research/vision").Name("resnet").Tasks(4).Gpus(2)
//                          .CpuMilli(16000).MemoryMib(65536).Build();
//
// Thread safety: plain values and free functions.
#pragma once

#include <string>
#include <string_view>

#include "tessera/export.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

// "PENDING", "RUNNING", ...
TESSERA_EXPORT std::string_view JobStateName(v1::JobState state);

// SUCCEEDED, FAILED or CANCELLED.
TESSERA_EXPORT bool IsTerminal(v1::JobState state);

class TESSERA_EXPORT JobSpecBuilder {
 public:
  // A one-task job in `queue` asking for 1 CPU and 1 GiB of memory.
  explicit JobSpecBuilder(std::string queue);

  JobSpecBuilder& Name(std::string name);
  JobSpecBuilder& PriorityClass(std::string name);
  JobSpecBuilder& Tasks(int tasks);
  JobSpecBuilder& GangMin(int tasks);
  JobSpecBuilder& Elastic(int min_tasks, int max_tasks);
  JobSpecBuilder& CpuMilli(int64_t cpu_milli);
  JobSpecBuilder& MemoryMib(int64_t memory_mib);
  // Whole GPUs per task.
  JobSpecBuilder& Gpus(int count);
  // A fraction of one GPU per task, in milli-GPUs (1..999).
  JobSpecBuilder& GpuFraction(int gpu_milli);
  JobSpecBuilder& GpuMemoryMib(int64_t mib);
  JobSpecBuilder& GpuModel(std::string model);
  // One MIG instance of this profile per task, e.g. "3g.40gb".
  JobSpecBuilder& MigProfile(std::string profile);
  // One vGPU of this type per task, e.g. "A100-4C".
  JobSpecBuilder& VgpuType(std::string type);
  // Only this form of GPU share (with GpuFraction / GpuMemoryMib as the minimums).
  JobSpecBuilder& GpuForm(v1::GpuForm form);
  JobSpecBuilder& TimeLimitSeconds(int64_t seconds);
  JobSpecBuilder& Label(std::string key, std::string value);
  JobSpecBuilder& Command(std::vector<std::string> argv);
  // Simulated executor: how long each task runs and the exit code it reports.
  JobSpecBuilder& SimulatedDurationMs(int64_t ms, int exit_code = 0);

  v1::JobSpec Build() const { return spec_; }

 private:
  v1::JobSpec spec_;
};

}  // namespace tessera
