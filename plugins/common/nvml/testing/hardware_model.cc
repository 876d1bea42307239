// The fake NVML's tables (hardware_model.h says what they model and where they differ from the
// driver) and the lookups into them.
#include "nvml/testing/hardware_model.h"

#include "nvml/nvml_api.h"

namespace tessera::fake_nvml {

const ProfileRow kRows[kNumRows] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, 0b0111'1111, ""},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 0b0111'1111, "+me"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 0b0101'0101, ""},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, 0b0001'0101, ""},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, 0b0001'0001, ""},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, 0b0000'0001, ""},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, 0b0000'0001, ""},
};

namespace {

const Model kModels[] = {
    {"A100-40GB",
     "NVIDIA A100-SXM4-40GB",
     40960,
     0x20B010DE,
     {"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
     {4864, 4864, 9856, 9856, 19968, 19968, 40192},
     {14, 14, 14, 28, 42, 56, 98}},
    {"A100-80GB",
     "NVIDIA A100-SXM4-80GB",
     81920,
     0x20B210DE,
     {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
     {9856, 9856, 19968, 19968, 40192, 40192, 80384},
     {14, 14, 14, 28, 42, 56, 98}},
    {"H100-80GB",
     "NVIDIA H100 80GB HBM3",
     81559,
     0x233010DE,
     {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
     {9856, 9856, 19968, 19968, 40192, 40192, 80384},
     {16, 16, 26, 32, 60, 64, 132}},
    {"H200-141GB",
     "NVIDIA H200",
     144384,
     0x233510DE,
     {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
     {18048, 18048, 36096, 36096, 72192, 72192, 144384},
     {16, 16, 26, 32, 60, 64, 132}},
};

}  // namespace

const Model* FindModel(const std::string& key) {
  for (const Model& m : kModels) {
    if (key == m.key) return &m;
  }
  return nullptr;
}

const ProfileRow* RowByEnum(unsigned index) {
  for (const ProfileRow& r : kRows) {
    if (r.enum_index == index) return &r;
  }
  return nullptr;
}

int RowOfId(unsigned id) {
  for (int i = 0; i < kNumRows; ++i) {
    if (kRows[i].id == id) return i;
  }
  return -1;
}

unsigned CiSlicesOfProfile(unsigned profile) {
  switch (profile) {
    case NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE:
      return 1;
    case NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE:
      return 2;
    case NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE:
      return 3;
    case NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE:
      return 4;
    case NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE:
      return 7;
    default:
      return 0;
  }
}

bool CiProfileAllowed(unsigned ci_slices, unsigned gi_slices) {
  if (ci_slices > gi_slices) return false;
  switch (ci_slices) {
    case 1:
    case 2:
    case 4:
      return true;
    case 3:
      return gi_slices == 3 || gi_slices == 7;
    case 7:
      return gi_slices == 7;
    default:
      return false;
  }
}

}  // namespace tessera::fake_nvml
