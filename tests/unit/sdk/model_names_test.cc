// GPU model names (the SDK's tessera/gpu/model_names.h): the device names NVML and the CUDA
// driver report, turned into the model names jobs and the MIG tables use.
#include <doctest/doctest.h>

#include "tessera/gpu/mig_profiles.h"
#include "tessera/gpu/model_names.h"

namespace tessera::model_names {
namespace {

TEST_CASE("model names: the MIG models from their device names") {
  CHECK(FromDeviceName("NVIDIA A100-SXM4-40GB", 40960) == "A100-40GB");
  CHECK(FromDeviceName("NVIDIA A100-SXM4-80GB", 81920) == "A100-80GB");
  CHECK(FromDeviceName("NVIDIA A100 80GB PCIe", 81920) == "A100-80GB");
  CHECK(FromDeviceName("NVIDIA H100 80GB HBM3", 81559) == "H100-80GB");
  CHECK(FromDeviceName("NVIDIA H200", 144384) == "H200-141GB");
  for (const char* name : {"NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200"}) {
    CAPTURE(name);
    CHECK(mig::FindModel(FromDeviceName(name, 0)) != nullptr);
  }
}

TEST_CASE("model names: without marketed memory in the name, the memory decides") {
  CHECK(FromDeviceName("NVIDIA A100-PCIE", 40960) == "A100-40GB");
  CHECK(FromDeviceName("NVIDIA A100-PCIE", 81920) == "A100-80GB");
  CHECK(FromDeviceName("NVIDIA H100 PCIe", 81559) == "H100-80GB");
  CHECK(FromDeviceName("NVIDIA H100 NVL", 95830) == "H100-94GB");
  // The first run of digits followed by GB counts, not a digit before it ("SXM4").
  CHECK(FromDeviceName("NVIDIA A100-SXM4-80GB", 0) == "A100-80GB");
}

TEST_CASE("model names: other GPUs keep their name, without the vendor and spaces") {
  CHECK(FromDeviceName("NVIDIA L40S", 46068) == "L40S");
  CHECK(FromDeviceName("NVIDIA RTX A6000", 49140) == "RTX-A6000");
  CHECK(FromDeviceName("Tesla V100-SXM2-32GB", 32768) == "Tesla-V100-SXM2-32GB");
  CHECK(FromDeviceName("", 81920).empty());
}

}  // namespace
}  // namespace tessera::model_names
