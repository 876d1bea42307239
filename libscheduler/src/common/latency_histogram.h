// LatencyHistogram: counts durations in log-spaced buckets (about 4% wide) so that p50, p99
// and max can be reported from a fixed 2 KiB of memory however many samples arrive.
//
// Thread safety: Record and Summary may be called concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

#include "tessera/v1/stats.pb.h"

namespace tessera {

class LatencyHistogram {
 public:
  void Record(int64_t nanoseconds);
  v1::LatencySummary Summary() const;
  // Value below which `quantile` (0..1) of the samples fall, in microseconds.
  double PercentileUs(double quantile) const;
  int64_t count() const;

 private:
  static constexpr int kBuckets = 512;
  static int BucketOf(int64_t ns);
  static double BucketUpperNs(int bucket);
  double PercentileUsLocked(double quantile) const;

  mutable std::mutex mu_;
  std::array<int64_t, kBuckets> buckets_{};
  int64_t count_ = 0;
  int64_t max_ns_ = 0;
  int64_t total_ns_ = 0;
};

}  // namespace tessera
