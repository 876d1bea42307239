// GpuHealthBook: fatal readings fail a GPU until an operator clears it; heat takes it out of
// service with hysteresis; only a change of usability is reported as one.
#include "engine/gpu_health_book.h"

#include <doctest/doctest.h>

namespace tessera {
namespace {

v1::GpuTelemetry Reading(double temperature_c) {
  v1::GpuTelemetry r;
  r.set_temperature_c(temperature_c);
  return r;
}

TEST_CASE("gpu health book: heat takes a GPU out until it cools below the lower mark") {
  GpuHealthBook book{GpuHealthOptions()};  // 87 C out, 80 C back.
  CHECK_FALSE(book.Record(0, 1, Reading(70), 5).changed);
  CHECK(book.Find(0, 1)->last().time_us() == 5);  // a reading without a time gets now.
  const GpuHealthBook::Verdict hot = book.Record(0, 1, Reading(90), 6);
  CHECK(hot.changed);
  CHECK_FALSE(hot.usable);
  CHECK_FALSE(hot.failed);
  CHECK(hot.reason.rfind("too hot: 90", 0) == 0);
  CHECK_FALSE(book.Record(0, 1, Reading(84), 7).changed);  // between the marks: still out.
  const GpuHealthBook::Verdict cool = book.Record(0, 1, Reading(80), 8);
  CHECK(cool.changed);
  CHECK(cool.usable);
  CHECK(cool.reason.empty());
  CHECK(book.Find(0, 0) == nullptr);  // never reported.
}

TEST_CASE("gpu health book: a fatal XID or ECC error fails a GPU until it is cleared") {
  GpuHealthBook book{GpuHealthOptions()};
  v1::GpuTelemetry xid = Reading(60);
  xid.add_xid_errors(13);  // not fatal.
  CHECK_FALSE(book.Record(2, 0, xid, 1).changed);
  xid.add_xid_errors(79);  // fallen off the bus.
  const GpuHealthBook::Verdict failed = book.Record(2, 0, xid, 2);
  CHECK(failed.changed);
  CHECK(failed.failed);
  CHECK(failed.reason == "XID 79");
  // Healthy readings do not bring it back...
  CHECK_FALSE(book.Record(2, 0, Reading(60), 3).changed);
  CHECK(book.Find(2, 0)->failed());
  // ...an operator does.
  const auto cleared = book.ClearFailed(2, 4);
  REQUIRE(cleared.size() == 1);
  CHECK(cleared[0] == std::pair<int, bool>{0, true});
  CHECK_FALSE(book.Find(2, 0)->failed());
  CHECK(book.ClearFailed(2, 4).empty());

  v1::GpuTelemetry ecc = Reading(95);
  ecc.set_ecc_uncorrectable_errors(2);
  const GpuHealthBook::Verdict both = book.Record(2, 1, ecc, 4);
  CHECK(both.failed);
  CHECK(both.reason == "2 uncorrectable ECC error(s)");  // the failure names it, not the heat.
  const auto still_hot = book.ClearFailed(2, 4);
  REQUIRE(still_hot.size() == 1);
  CHECK(still_hot[0] == std::pair<int, bool>{1, false});  // cleared, but too hot to use.
}

}  // namespace
}  // namespace tessera
