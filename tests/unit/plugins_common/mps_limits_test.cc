// The lower-wins rule of MPS limits and the reading of the control daemon's answers
// (plugins/common/mps/mps_limits.h).
#include <doctest/doctest.h>

#include "mps/mps_limits.h"

namespace tessera::mps {
namespace {

TEST_CASE("mps limits: the lower of the client's and the daemon's value wins") {
  const MpsLimits ceiling{50, 4096};
  MpsLimits effective = EffectiveLimits({25, 8192}, ceiling);
  CHECK(effective.active_thread_pct == 25);
  CHECK(effective.pinned_memory_mib == 4096);
  effective = EffectiveLimits({75, 2048}, ceiling);
  CHECK(effective.active_thread_pct == 50);
  CHECK(effective.pinned_memory_mib == 2048);
  // No limit (0) on one side: the other side's limit holds.
  effective = EffectiveLimits({100, 0}, ceiling);
  CHECK(effective.active_thread_pct == 50);
  CHECK(effective.pinned_memory_mib == 4096);
  effective = EffectiveLimits({30, 1024}, MpsLimits{});
  CHECK(effective.active_thread_pct == 30);
  CHECK(effective.pinned_memory_mib == 1024);
  effective = EffectiveLimits({100, 0}, MpsLimits{});
  CHECK(effective.active_thread_pct == 100);
  CHECK(effective.pinned_memory_mib == 0);
}

TEST_CASE("mps limits: out-of-range values are refused by name") {
  CHECK(CheckLimits({1, 0}, "mps").ok());
  CHECK(CheckLimits({100, 81920}, "mps").ok());
  plugin::PluginStatus status = CheckLimits({0, 0}, "mps");
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message == "mps.active_thread_pct: must be 1..100, got 0");
  status = CheckLimits({101, 0}, "mps");
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  status = CheckLimits({50, -1}, "defaults");
  CHECK(status.code == TESSERA_INVALID_ARGUMENT);
  CHECK(status.message.find("defaults.pinned_memory_mib") == 0);
}

TEST_CASE("mps limits: the control daemon's answers are read in the units it writes") {
  CHECK(PinnedMemoryValue(8192) == "8192M");
  CHECK(ParseThreadPercentage("100.0\n") == doctest::Approx(100.0));
  CHECK(ParseThreadPercentage(" 25\n") == doctest::Approx(25.0));
  CHECK_FALSE(ParseThreadPercentage("Invalid percentage: x\n").has_value());
  CHECK_FALSE(ParseThreadPercentage("").has_value());
  CHECK(ParsePinnedMemoryMib("8192M\n") == 8192);
  CHECK(ParsePinnedMemoryMib("2G") == 2048);
  CHECK(ParsePinnedMemoryMib("512MB") == 512);
  CHECK(ParsePinnedMemoryMib("0\n") == 0);
  CHECK(ParsePinnedMemoryMib("5368709120") == 5120);  // bytes.
  CHECK_FALSE(ParsePinnedMemoryMib("N/A").has_value());
  CHECK_FALSE(ParsePinnedMemoryMib("-1M").has_value());
}

}  // namespace
}  // namespace tessera::mps
