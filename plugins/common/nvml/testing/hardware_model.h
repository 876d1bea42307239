// The fake NVML's hardware: the GPU models it can be (A100-40GB, A100-80GB, H100-80GB,
// H200-141GB) and, for each, NVML's GPU instance profiles: the enum index a caller asks with,
// the profile ID NVML answers (1_SLICE is 19, 7_SLICE is 0), compute and memory slices, the
// instance limit, the start positions of `nvidia-smi mig -lgipp` (8 memory slices per GPU), the
// profile names and the memory sizes NVML reports; and the compute instance profiles a GPU
// instance offers.
//
// These tables are written from NVIDIA's figures (backends-reference.md section 1), on purpose
// independently of the SDK's MIG profile table (tessera/gpu/mig_profiles.h) that the scheduler
// places with: a fake that read that table could not catch a wrong entry in it.
// tests/unit/plugins_common/mig_tables_crosscheck_test.cc compares the two through NVML's calls.
//
// Where it differs from the real driver (each a guess where no public figure exists):
//   - H100-80GB reports the A100-80GB memory sizes, the H200-141GB sizes are derived from its
//     memory (141 GiB x memory slices / 8), and the H100/H200 multiprocessor counts are those of
//     `nvidia-smi mig -lgip` on H100 (4g: 64, not published); engine counts are 0;
//   - only the compute instance profiles of 1, 2, 3, 4 and 7 slices exist (3 slices only in a 3-
//     or 7-slice GPU instance).
#pragma once

#include <string>

namespace tessera::fake_nvml {

inline constexpr int kMemorySlices = 8;
inline constexpr int kComputeSlices = 7;

// One GPU instance profile; the IDs, sizes and placements are the same on every model.
struct ProfileRow {
  unsigned enum_index;  // NVML_GPU_INSTANCE_PROFILE_*
  unsigned id;
  unsigned compute_slices;  // sliceCount
  unsigned memory_slices;   // placement size
  unsigned instance_count;
  unsigned starts;  // bit s: may start at memory slice s
  const char* suffix;
};

inline constexpr int kNumRows = 7;
// By NVML enum: 1_SLICE, 1_SLICE_REV1, 1_SLICE_REV2, 2_SLICE, 3_SLICE, 4_SLICE, 7_SLICE.
extern const ProfileRow kRows[kNumRows];

// What a GPU model says of itself and of each profile.
struct Model {
  const char* key;   // as the state file names it
  const char* name;  // nvmlDeviceGetName
  unsigned long long memory_mib;
  unsigned pci_device_id;
  // By row of kRows.
  const char* profile_names[kNumRows];
  unsigned long long memory_mb[kNumRows];
  unsigned sms[kNumRows];
};

// The model the state file calls `key`, or null.
const Model* FindModel(const std::string& key);
// The profile of an NVML enum index, or null when the fake has none.
const ProfileRow* RowByEnum(unsigned index);
// The row of kRows with profile ID `id`, or -1.
int RowOfId(unsigned id);

// The compute slices of NVML_COMPUTE_INSTANCE_PROFILE_* `profile`, or 0 when the fake has none.
unsigned CiSlicesOfProfile(unsigned profile);
// Whether a GPU instance with `gi_slices` compute slices offers compute instances of
// `ci_slices`.
bool CiProfileAllowed(unsigned ci_slices, unsigned gi_slices);

// The slices [start, start + size) as a bit mask.
inline unsigned SliceMask(unsigned start, unsigned size) { return ((1u << size) - 1) << start; }

}  // namespace tessera::fake_nvml
