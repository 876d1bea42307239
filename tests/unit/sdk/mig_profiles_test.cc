// MIG profiles (the SDK's tessera/gpu/mig_profiles.h): the per-model names and sizes, the
// accounting of an instance, and each reason LayoutError gives for a layout NVIDIA would refuse.
#include <doctest/doctest.h>

#include <vector>

#include "tessera/gpu/mig_profiles.h"

namespace tessera::mig {
namespace {

TEST_CASE("mig profiles: the same name is a different kind on different models") {
  const ModelProfiles* a100_40 = FindModel("A100-40GB");
  const ModelProfiles* a100_80 = FindModel("A100-80GB");
  const ModelProfiles* h200 = FindModel("H200-141GB");
  REQUIRE(a100_40 != nullptr);
  REQUIRE(a100_80 != nullptr);
  REQUIRE(h200 != nullptr);
  CHECK(FindModel("V100-32GB") == nullptr);

  CHECK(FindProfile(*a100_40, "1g.10gb") == ProfileKind::k1SliceDoubleMem);
  CHECK(FindProfile(*a100_80, "1g.10gb") == ProfileKind::k1Slice);
  CHECK(FindProfile(*a100_80, "1g.10gb+me") == ProfileKind::k1SliceMedia);
  CHECK(FindProfile(*a100_40, "3g.20gb") == ProfileKind::k3Slice);
  CHECK(FindProfile(*h200, "3g.71gb") == ProfileKind::k3Slice);
  CHECK(FindProfile(*h200, "7g.141gb") == ProfileKind::k7Slice);
  // A name of another model is not a profile of this one.
  CHECK_FALSE(FindProfile(*a100_40, "3g.40gb").has_value());
  CHECK_FALSE(FindProfile(*a100_80, "").has_value());

  CHECK(IsKnownProfileName("3g.71gb"));
  CHECK(IsKnownProfileName("1g.5gb+me"));
  CHECK_FALSE(IsKnownProfileName("5g.40gb"));
  CHECK_FALSE(IsKnownProfileName("3g.40GB"));
}

TEST_CASE("mig profiles: an instance counts as its share of the 7 compute slices, rounded down") {
  CHECK(ComputeMilli(ProfileKind::k1Slice) == 142);
  CHECK(ComputeMilli(ProfileKind::k1SliceDoubleMem) == 142);
  CHECK(ComputeMilli(ProfileKind::k2Slice) == 285);
  CHECK(ComputeMilli(ProfileKind::k3Slice) == 428);
  CHECK(ComputeMilli(ProfileKind::k4Slice) == 571);
  CHECK(ComputeMilli(ProfileKind::k7Slice) == 1000);
}

TEST_CASE("mig profiles: instance memory is the published figure, or derived from the GPU's") {
  const ModelProfiles& a100_80 = *FindModel("A100-80GB");
  // Published: the GPU's own memory does not matter.
  CHECK(InstanceMemoryMib(a100_80, ProfileKind::k3Slice, 81920) == 40192);
  CHECK(InstanceMemoryMib(a100_80, ProfileKind::k3Slice, 1) == 40192);
  CHECK(InstanceMemoryMib(*FindModel("A100-40GB"), ProfileKind::k1Slice, 40960) == 4864);
  // H200: memory_slices/8 of the GPU's memory.
  const ModelProfiles& h200 = *FindModel("H200-141GB");
  const int64_t gpu = 144384;
  CHECK(InstanceMemoryMib(h200, ProfileKind::k1Slice, gpu) == 18048);
  CHECK(InstanceMemoryMib(h200, ProfileKind::k1SliceDoubleMem, gpu) == 36096);
  CHECK(InstanceMemoryMib(h200, ProfileKind::k3Slice, gpu) == 72192);
  CHECK(InstanceMemoryMib(h200, ProfileKind::k4Slice, gpu) == 72192);
  CHECK(InstanceMemoryMib(h200, ProfileKind::k7Slice, gpu) == gpu);
}

TEST_CASE("mig profiles: shapes follow NVIDIA's placements") {
  CHECK(Shape(ProfileKind::k3Slice).compute_slices == 3);
  CHECK(Shape(ProfileKind::k3Slice).memory_slices == 4);
  CHECK(Shape(ProfileKind::k7Slice).memory_slices == kMemorySlices);
  // Every allowed placement lies within the 8 memory slices.
  for (int k = 0; k < kNumProfileKinds; ++k) {
    const ProfileShape& shape = Shape(static_cast<ProfileKind>(k));
    for (int start = 0; start < kMemorySlices; ++start) {
      if ((shape.allowed_starts >> start) & 1) CHECK(start + shape.memory_slices <= kMemorySlices);
    }
  }
}

TEST_CASE("mig profiles: valid layouts") {
  CHECK(LayoutError({}).empty());
  const std::vector<Instance> full_gpu = {{ProfileKind::k7Slice, 0}};
  CHECK(IsValidLayout(full_gpu));
  const std::vector<Instance> four_three = {{ProfileKind::k4Slice, 0}, {ProfileKind::k3Slice, 4}};
  CHECK(IsValidLayout(four_three));
  const std::vector<Instance> sevenths = {{ProfileKind::k1Slice, 0},     {ProfileKind::k1Slice, 1},
                                          {ProfileKind::k1Slice, 2},     {ProfileKind::k1Slice, 3},
                                          {ProfileKind::k1Slice, 4},     {ProfileKind::k1Slice, 5},
                                          {ProfileKind::k1SliceMedia, 6}};
  CHECK(IsValidLayout(sevenths));
}

TEST_CASE("mig profiles: each reason a layout is refused") {
  SUBCASE("overlap") {
    const std::vector<Instance> layout = {{ProfileKind::k3Slice, 0}, {ProfileKind::k1Slice, 2}};
    CHECK(LayoutError(layout) == "instances overlap at memory slice 2");
  }
  SUBCASE("a start the profile does not allow") {
    const std::vector<Instance> layout = {{ProfileKind::k3Slice, 2}};
    CHECK(LayoutError(layout) == "an instance of kind 4 cannot start at memory slice 2");
    // The last memory slice can only be reached by instances 2 or more slices wide.
    const std::vector<Instance> last = {{ProfileKind::k1Slice, 7}};
    CHECK(LayoutError(last) == "an instance of kind 0 cannot start at memory slice 7");
    const std::vector<Instance> beyond = {{ProfileKind::k1Slice, 8}};
    CHECK(LayoutError(beyond) == "an instance of kind 0 cannot start at memory slice 8");
  }
  SUBCASE("more of a kind than the GPU allows") {
    const std::vector<Instance> layout = {{ProfileKind::k1SliceMedia, 0},
                                          {ProfileKind::k1SliceMedia, 1}};
    CHECK(LayoutError(layout) == "more than 1 instances of kind 1");
  }
  SUBCASE("more than 7 instances") {
    std::vector<Instance> layout;
    for (int i = 0; i < 8; ++i) layout.push_back({ProfileKind::k1Slice, static_cast<uint8_t>(i)});
    CHECK(LayoutError(layout) == "more than 7 instances");
  }
}

// The most compute slices of placements that are allowed and do not overlap, from `next` on.
int MostComputeFrom(const std::vector<Instance>& placements, size_t next, uint32_t used_slices) {
  int most = 0;
  for (size_t i = next; i < placements.size(); ++i) {
    const ProfileShape& shape = Shape(placements[i].kind);
    const uint32_t span = ((1u << shape.memory_slices) - 1) << placements[i].start;
    if (used_slices & span) continue;
    const int with = shape.compute_slices + MostComputeFrom(placements, i + 1, used_slices | span);
    if (with > most) most = with;
  }
  return most;
}

// LayoutError's compute-slice limit ("the instances need N compute slices, the GPU has 7") has
// no test that provokes it, because no layout reaches it without overlapping first: no kind has
// more than one compute slice per memory slice, and those with one cannot start at slice 7.
TEST_CASE("mig profiles: placements that do not overlap never need more than 7 compute slices") {
  std::vector<Instance> placements;
  for (int k = 0; k < kNumProfileKinds; ++k) {
    for (int start = 0; start < kMemorySlices; ++start) {
      if ((Shape(static_cast<ProfileKind>(k)).allowed_starts >> start) & 1) {
        placements.push_back({static_cast<ProfileKind>(k), static_cast<uint8_t>(start)});
      }
    }
  }
  CHECK(placements.size() == 25);
  CHECK(MostComputeFrom(placements, 0, 0) == kComputeSlices);
}

}  // namespace
}  // namespace tessera::mig
