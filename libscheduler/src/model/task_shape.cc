#include "model/task_shape.h"

#include <charconv>

#include "tessera/gpu/mig_profiles.h"
#include "tessera/gpu/vgpu_types.h"

namespace tessera {

TaskShape MakeTaskShape(const v1::JobSpec& spec, GpuModels& models) {
  const v1::TaskResources& t = spec.task();
  TaskShape shape;
  shape.cpu_milli = t.cpu_milli();
  shape.memory_mib = t.memory_mib();
  shape.gpu_count = t.gpu_count();
  shape.gpu_milli = t.gpu_count() == 0 ? 0 : (t.gpu_milli() == 0 ? 1000 : t.gpu_milli());
  shape.gpu_memory_mib = t.gpu_memory_mib();
  shape.form = static_cast<GpuForm>(t.gpu_form());
  if (!t.mig_profile().empty()) {
    // "3g.40gb": 3 of 7 compute slices, and the memory such an instance really has (40,192 MiB
    // on an A100-80GB or H100-80GB, not 40 GiB), whatever the model.
    shape.form = GpuForm::kMig;
    shape.mig_profile = t.mig_profile();
    const std::string& name = t.mig_profile();
    int slices = 0;
    std::from_chars(name.data(), name.data() + name.size(), slices);
    shape.gpu_milli = slices * 1000 / mig::kComputeSlices;
    shape.gpu_memory_mib = mig::LeastInstanceMemoryMib(name);
  } else if (!t.vgpu_type().empty()) {
    shape.form = GpuForm::kVgpu;
    if (std::optional<vgpu::TypeName> type = vgpu::ParseType(t.vgpu_type())) {
      shape.vgpu_family = type->family;
      shape.vgpu_framebuffer_gib = type->framebuffer_gib;
      shape.gpu_memory_mib = int64_t{type->framebuffer_gib} * 1024;
    }
    shape.gpu_milli = 0;  // depends on how many of the type the chosen GPU holds.
  } else if (shape.form != GpuForm::kAny && shape.form != GpuForm::kWhole && t.gpu_milli() == 0) {
    shape.gpu_milli = 0;  // any share of that form.
  }
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
