// The MIG instances of one GPU as NVML has them, in the scheduler's terms: each GPU instance as a
// profile name of the GPU's model and a placement start ("3g.40gb" at memory slice 4), with its
// GPU instance id, the id of its compute instance and the "MIG-" UUID that CUDA_VISIBLE_DEVICES
// takes.
//
// NVML knows a GPU instance profile by an enum index (NVML_GPU_INSTANCE_PROFILE_3_SLICE) that
// the caller asks with and an ID the driver answers (the 3-slice profile is ID 9 on an A100);
// the SDK's table (tessera/gpu/mig_profiles.h) knows it by kind and per-model name. This file is
// where the three meet: every name is resolved through the driver's own profile info, so the
// IDs are never assumed.
//
// The scheduler runs one task in one GPU instance, so a GPU instance is used through one compute
// instance that spans it (the partitioner creates exactly that). A GPU instance found split into
// several compute instances (made by hand) is reported with its first; one with none has no UUID
// and cannot take tasks until a compute instance is made (CompleteComputeInstances).
#pragma once

#include <string>
#include <vector>

#include "nvml/nvml_library.h"
#include "tessera/gpu/mig_profiles.h"

namespace tessera::nvml {

struct MigInstanceState {
  mig::Instance instance;  // kind and placement start.
  std::string profile;     // the kind's name on the GPU's model, "3g.40gb".
  unsigned gpu_instance_id = 0;
  nvmlGpuInstance_t handle = nullptr;
  bool has_compute_instance = false;
  unsigned compute_instance_id = 0;  // the first compute instance, when there is one.
  std::string uuid;                  // "MIG-..." of that compute instance; empty without one.
};

// NVML's enum index of the GPU instance profile of `kind` (NVML_GPU_INSTANCE_PROFILE_*).
unsigned GpuInstanceProfileEnum(mig::ProfileKind kind);
// NVML's enum index of the compute instance profile that spans `compute_slices` (1, 2, 3, 4, 7).
unsigned ComputeInstanceProfileEnum(int compute_slices);

struct ComputeInstanceRef {
  unsigned id = 0;
  nvmlComputeInstance_t handle = nullptr;
};
// The compute instances of GPU instance `gi`, lowest id first; false with the reason.
bool ListComputeInstances(NvmlLibrary& nvml, nvmlGpuInstance_t gi,
                          std::vector<ComputeInstanceRef>* out, std::string* error);

// NVML's profile ID for `kind` on `device` (nvmlDeviceGetGpuInstanceProfileInfo), or false with
// the driver's reason.
bool GpuInstanceProfileId(NvmlLibrary& nvml, nvmlDevice_t device, mig::ProfileKind kind,
                          unsigned* id, std::string* error);

// Every GPU instance on `device`, sorted by placement start, with profile names of `model`.
// False with the reason when NVML fails, or when an instance's profile is one the SDK's table
// does not have for the model.
bool ReadMigInstances(NvmlLibrary& nvml, nvmlDevice_t device, const mig::ModelProfiles& model,
                      std::vector<MigInstanceState>* out, std::string* error);

// Makes a compute instance spanning each GPU instance of `instances` that has none, and fills in
// its id and UUID. False with the reason at the first that fails (the rest are left as they are).
bool CompleteComputeInstances(NvmlLibrary& nvml, nvmlDevice_t device,
                              std::vector<MigInstanceState>* instances, std::string* error);

}  // namespace tessera::nvml
