#include "tessera/job.h"

namespace tessera {

std::string_view JobStateName(v1::JobState state) {
  switch (state) {
    case v1::PENDING:
      return "PENDING";
    case v1::ADMITTED:
      return "ADMITTED";
    case v1::STARTING:
      return "STARTING";
    case v1::RUNNING:
      return "RUNNING";
    case v1::PREEMPTING:
      return "PREEMPTING";
    case v1::SUCCEEDED:
      return "SUCCEEDED";
    case v1::FAILED:
      return "FAILED";
    case v1::CANCELLED:
      return "CANCELLED";
    case v1::LOST:
      return "LOST";
    default:
      return "UNSPECIFIED";
  }
}

bool IsTerminal(v1::JobState state) {
  return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED;
}

JobSpecBuilder::JobSpecBuilder(std::string queue) {
  spec_.set_queue(std::move(queue));
  spec_.mutable_task()->set_cpu_milli(1000);
  spec_.mutable_task()->set_memory_mib(1024);
}

JobSpecBuilder& JobSpecBuilder::Name(std::string name) {
  spec_.set_name(std::move(name));
  return *this;
}
JobSpecBuilder& JobSpecBuilder::PriorityClass(std::string name) {
  spec_.set_priority_class(std::move(name));
  return *this;
}
JobSpecBuilder& JobSpecBuilder::Tasks(int tasks) {
  spec_.set_tasks(tasks);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::GangMin(int tasks) {
  spec_.set_gang_min(tasks);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::Elastic(int min_tasks, int max_tasks) {
  spec_.clear_tasks();  // an elastic job's count comes from its bounds.
  spec_.mutable_elastic()->set_min_tasks(min_tasks);
  spec_.mutable_elastic()->set_max_tasks(max_tasks);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::CpuMilli(int64_t cpu_milli) {
  spec_.mutable_task()->set_cpu_milli(cpu_milli);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::MemoryMib(int64_t memory_mib) {
  spec_.mutable_task()->set_memory_mib(memory_mib);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::Gpus(int count) {
  spec_.mutable_task()->set_gpu_count(count);
  spec_.mutable_task()->set_gpu_milli(0);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::GpuFraction(int gpu_milli) {
  spec_.mutable_task()->set_gpu_count(1);
  spec_.mutable_task()->set_gpu_milli(gpu_milli);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::GpuMemoryMib(int64_t mib) {
  spec_.mutable_task()->set_gpu_memory_mib(mib);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::GpuModel(std::string model) {
  spec_.mutable_task()->add_gpu_models(std::move(model));
  return *this;
}
JobSpecBuilder& JobSpecBuilder::MigProfile(std::string profile) {
  spec_.mutable_task()->set_gpu_count(1);
  spec_.mutable_task()->set_mig_profile(std::move(profile));
  return *this;
}
JobSpecBuilder& JobSpecBuilder::VgpuType(std::string type) {
  spec_.mutable_task()->set_gpu_count(1);
  spec_.mutable_task()->set_vgpu_type(std::move(type));
  return *this;
}
JobSpecBuilder& JobSpecBuilder::GpuForm(v1::GpuForm form) {
  if (spec_.task().gpu_count() == 0) spec_.mutable_task()->set_gpu_count(1);
  spec_.mutable_task()->set_gpu_form(form);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::TimeLimitSeconds(int64_t seconds) {
  spec_.set_time_limit_s(seconds);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::Label(std::string key, std::string value) {
  (*spec_.mutable_labels())[std::move(key)] = std::move(value);
  return *this;
}
JobSpecBuilder& JobSpecBuilder::Command(std::vector<std::string> argv) {
  spec_.clear_command();
  for (std::string& arg : argv) spec_.add_command(std::move(arg));
  return *this;
}
JobSpecBuilder& JobSpecBuilder::SimulatedDurationMs(int64_t ms, int exit_code) {
  spec_.mutable_simulation()->set_duration_ms(ms);
  spec_.mutable_simulation()->set_exit_code(exit_code);
  return *this;
}

}  // namespace tessera
