#include "model/task_shape.h"

namespace tessera {

TaskShape MakeTaskShape(const v1::JobSpec& spec, GpuModels& models) {
  const v1::TaskResources& t = spec.task();
  TaskShape shape;
  shape.cpu_milli = t.cpu_milli();
  shape.memory_mib = t.memory_mib();
  shape.gpu_count = t.gpu_count();
  shape.gpu_milli = t.gpu_count() == 0 ? 0 : (t.gpu_milli() == 0 ? 1000 : t.gpu_milli());
  shape.gpu_memory_mib = t.gpu_memory_mib();
  shape.same_nvlink = spec.topology().task_gpus_same_nvlink();
  for (const std::string& name : t.gpu_models()) {
    std::optional<int> id = models.Intern(name);
    if (!id) {
      shape.model_overflow = true;
      continue;
    }
    shape.models |= ModelMask{1} << *id;
  }
  return shape;
}

}  // namespace tessera
