#include "nvml/mig_partitioner.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace tessera::nvml {
namespace {

std::string Where(const std::string& profile, int start) {
  return profile + " at memory slice " + std::to_string(start);
}

bool Contains(const std::vector<mig::Instance>& layout, const mig::Instance& instance) {
  return std::find(layout.begin(), layout.end(), instance) != layout.end();
}

}  // namespace

bool MigPartitioner::Describe(nvmlDevice_t device, const std::string& model,
                              v1::PartitionLayout* layout,
                              google::protobuf::RepeatedPtrField<v1::PartitionInstance>* instances,
                              std::string* error) {
  const mig::ModelProfiles* profiles = mig::FindModel(model);
  if (profiles == nullptr) {
    if (error) *error = "no MIG profiles are known for GPU model '" + model + "'";
    return false;
  }
  std::vector<MigInstanceState> states;
  if (!ReadMigInstances(nvml_, device, *profiles, &states, error)) return false;
  layout->Clear();
  layout->set_sharing(v1::GPU_SHARING_MIG);
  instances->Clear();
  for (const MigInstanceState& state : states) {
    v1::MigInstance* m = layout->add_mig_instances();
    m->set_profile(state.profile);
    m->set_start(state.instance.start);
    v1::PartitionInstance* device_out = instances->Add();
    *device_out->mutable_mig() = *m;
    device_out->set_uuid(state.uuid);
    device_out->set_gpu_instance_id(static_cast<int32_t>(state.gpu_instance_id));
    device_out->set_compute_instance_id(static_cast<int32_t>(state.compute_instance_id));
  }
  return true;
}

bool MigPartitioner::Apply(nvmlDevice_t device, const std::string& model,
                           const v1::PartitionLayout& target, v1::PartitionLayoutResult* result) {
  std::string read_error;
  auto describe = [&] {
    return Describe(device, model, result->mutable_applied(), result->mutable_instances(),
                    &read_error);
  };
  unsigned current_mode = 0, pending_mode = 0;
  if (nvml_.DeviceGetMigMode &&
      nvml_.DeviceGetMigMode(device, &current_mode, &pending_mode) == NVML_SUCCESS &&
      current_mode != NVML_DEVICE_MIG_ENABLE) {
    result->mutable_applied()->set_sharing(v1::GPU_SHARING_EXCLUSIVE);
    result->set_error(
        "MIG mode is off on this GPU; Tessera does not turn it on unless the "
        "backend's configuration says so for the GPU");
    return true;
  }
  if (!describe()) {
    result->set_error(read_error);
    return false;
  }
  if (target.sharing() != v1::GPU_SHARING_MIG) {
    result->set_error("the GPU is in MIG mode; a layout of " +
                      v1::GpuSharing_Name(target.sharing()) + " needs MIG turned off");
    return true;
  }
  const mig::ModelProfiles& profiles = *mig::FindModel(model);  // Describe found it.

  // The target, in the SDK's terms, checked as the scheduler checks it.
  std::vector<mig::Instance> wanted;
  for (int i = 0; i < target.mig_instances_size(); ++i) {
    const v1::MigInstance& m = target.mig_instances(i);
    const std::optional<mig::ProfileKind> kind = mig::FindProfile(profiles, m.profile());
    if (!kind) {
      result->set_error("layout.mig_instances[" + std::to_string(i) + "].profile: '" + m.profile() +
                        "' is no MIG profile of a " + model);
      return true;
    }
    if (m.start() < 0 || m.start() >= mig::kMemorySlices) {
      result->set_error("layout.mig_instances[" + std::to_string(i) +
                        "].start: must be 0..7, got " + std::to_string(m.start()));
      return true;
    }
    wanted.push_back({*kind, static_cast<uint8_t>(m.start())});
  }
  if (const std::string invalid = mig::LayoutError(wanted); !invalid.empty()) {
    result->set_error("layout: not a valid MIG layout of a " + model + ": " + invalid);
    return true;
  }

  std::vector<MigInstanceState> current;
  if (!ReadMigInstances(nvml_, device, profiles, &current, &read_error)) {
    result->set_error(read_error);
    return false;
  }
  // Instances kept are left alone; one without a compute instance gets one, so it can be used.
  std::vector<MigInstanceState> kept;
  std::vector<MigInstanceState> to_destroy;
  std::vector<mig::Instance> have;
  for (const MigInstanceState& state : current) {
    have.push_back(state.instance);
    (Contains(wanted, state.instance) ? kept : to_destroy).push_back(state);
  }
  std::string error;
  std::vector<mig::Instance> destroyed;
  std::vector<mig::Instance> created;
  bool ok = CompleteComputeInstances(nvml_, device, &kept, &error);
  for (size_t i = 0; ok && i < to_destroy.size(); ++i) {
    ok = Destroy(to_destroy[i], &error);
    if (ok) destroyed.push_back(to_destroy[i].instance);
  }
  for (size_t i = 0; ok && i < wanted.size(); ++i) {
    if (Contains(have, wanted[i])) continue;
    ok = Create(device, profiles, wanted[i], &error);
    if (ok) created.push_back(wanted[i]);
  }
  if (!ok) {
    // Undo this call's changes: what was created goes, what was destroyed comes back.
    std::string undo_error;
    std::vector<MigInstanceState> now;
    if (ReadMigInstances(nvml_, device, profiles, &now, &undo_error)) {
      for (const MigInstanceState& state : now) {
        if (Contains(created, state.instance) && !Destroy(state, &undo_error)) break;
      }
    }
    for (const mig::Instance& instance : destroyed) {
      if (!Create(device, profiles, instance, &undo_error)) break;
    }
    // An instance whose compute instances went before its GPU instance refused to go.
    if (undo_error.empty() && ReadMigInstances(nvml_, device, profiles, &now, &undo_error)) {
      CompleteComputeInstances(nvml_, device, &now, &undo_error);
    }
    error += undo_error.empty() ? "; rolled back" : "; rollback incomplete: " + undo_error;
  }
  if (!describe()) {
    result->set_error(error.empty() ? read_error : error + "; then " + read_error);
    return false;
  }
  if (!ok) result->set_error(error);
  return true;
}

bool MigPartitioner::Create(nvmlDevice_t device, const mig::ModelProfiles& model,
                            const mig::Instance& instance, std::string* error) {
  const mig::ProfileShape& shape = mig::Shape(instance.kind);
  const std::string where =
      Where(std::string(model.names[static_cast<int>(instance.kind)]), instance.start);
  unsigned profile_id = 0;
  if (!GpuInstanceProfileId(nvml_, device, instance.kind, &profile_id, error)) {
    *error = "creating " + where + ": " + *error;
    return false;
  }
  const nvmlGpuInstancePlacement_t placement{instance.start,
                                             static_cast<unsigned>(shape.memory_slices)};
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t r = nvml_.DeviceCreateGpuInstanceWithPlacement(device, profile_id, &placement, &gi);
  if (r != NVML_SUCCESS) {
    *error = "creating the GPU instance " + where + ": " + nvml_.ErrorString(r);
    return false;
  }
  nvmlComputeInstanceProfileInfo_t info{};
  r = nvml_.GpuInstanceGetComputeInstanceProfileInfo(
      gi, ComputeInstanceProfileEnum(shape.compute_slices),
      NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
  nvmlComputeInstance_t ci = nullptr;
  if (r == NVML_SUCCESS) r = nvml_.GpuInstanceCreateComputeInstance(gi, info.id, &ci);
  if (r != NVML_SUCCESS) {
    *error = "creating the compute instance of " + where + ": " + nvml_.ErrorString(r);
    nvml_.GpuInstanceDestroy(gi);  // not left half made; if this fails too, the read says so.
    return false;
  }
  return true;
}

bool MigPartitioner::Destroy(const MigInstanceState& state, std::string* error) {
  const std::string where = Where(state.profile, state.instance.start);
  std::vector<ComputeInstanceRef> cis;
  if (!ListComputeInstances(nvml_, state.handle, &cis, error)) {
    *error = "destroying " + where + ": " + *error;
    return false;
  }
  for (const ComputeInstanceRef& ci : cis) {
    const nvmlReturn_t r = nvml_.ComputeInstanceDestroy(ci.handle);
    if (r != NVML_SUCCESS) {
      *error = "destroying compute instance " + std::to_string(ci.id) + " of " + where + ": " +
               nvml_.ErrorString(r);
      return false;
    }
  }
  const nvmlReturn_t r = nvml_.GpuInstanceDestroy(state.handle);
  if (r != NVML_SUCCESS) {
    *error = "destroying the GPU instance " + where + ": " + nvml_.ErrorString(r);
    return false;
  }
  return true;
}

}  // namespace tessera::nvml
