// vGPU types (the SDK's tessera/gpu/vgpu_types.h): the type names the scheduler and a vGPU
// partitioner share, and how many of each fit a GPU.
#include <doctest/doctest.h>

#include <algorithm>

#include "tessera/gpu/vgpu_types.h"

namespace tessera::vgpu {
namespace {

TEST_CASE("vgpu types: a name is family, framebuffer GiB and series") {
  const std::optional<TypeName> a100 = ParseType("A100-4C");
  REQUIRE(a100.has_value());
  CHECK(a100->family == "A100");
  CHECK(a100->framebuffer_gib == 4);
  CHECK(a100->series == 'C');
  const std::optional<TypeName> h100 = ParseType("H100XM-80Q");
  REQUIRE(h100.has_value());
  CHECK(h100->family == "H100XM");
  CHECK(h100->framebuffer_gib == 80);
  CHECK(h100->series == 'Q');
  CHECK(TypeNameFor("A100", 40) == "A100-40C");
  CHECK(ParseType(TypeNameFor("H100", 10))->framebuffer_gib == 10);
}

TEST_CASE("vgpu types: names not of that form are refused") {
  for (const char* bad : {"", "A100", "A100-", "A100-C", "-4C", "A100-4", "A100-4X", "A100-0C",
                          "A100-4.5C", "A100-x4C"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseType(bad).has_value());
  }
}

TEST_CASE("vgpu types: a GPU fits its memory over the framebuffer, at most 32") {
  CHECK(Family("A100-80GB") == "A100");
  CHECK(Family("L40S") == "L40S");
  CHECK(MemoryGib(40960) == 40);
  CHECK(MemoryGib(81559) == 80);  // H100-80GB reports a little less than 80 GiB.
  CHECK(InstancesPerGpu(4, 40960) == 10);
  CHECK(InstancesPerGpu(5, 40960) == 8);
  CHECK(InstancesPerGpu(80, 81559) == 1);
  CHECK(InstancesPerGpu(81, 81559) == 0);
  CHECK(InstancesPerGpu(1, 81920) == kMaxPerGpu);
  CHECK(InstancesPerGpu(0, 81920) == 0);
  const auto sizes = StandardFramebuffers();
  REQUIRE_FALSE(sizes.empty());
  CHECK(std::is_sorted(sizes.begin(), sizes.end()));
  CHECK(sizes.front() == 4);
}

}  // namespace
}  // namespace tessera::vgpu
