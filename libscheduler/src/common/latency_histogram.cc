#include "common/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace tessera {

// Bucket b covers [base^b, base^(b+1)) nanoseconds with base 1.04: 512 buckets reach past
// 10^8 s, far beyond any latency we measure.
namespace {
constexpr double kBase = 1.04;
// The bounds of LatencySummary.buckets, in microseconds: 1-2.5-5 steps from 1 us to 10 s.
constexpr double kSummaryBoundsUs[] = {1,     2.5, 5,     10,    25,  50,    100, 250,
                                       500,   1e3, 2.5e3, 5e3,   1e4, 2.5e4, 5e4, 1e5,
                                       2.5e5, 5e5, 1e6,   2.5e6, 5e6, 1e7};
}  // namespace

int LatencyHistogram::BucketOf(int64_t ns) {
  if (ns <= 1) return 0;
  const int b = static_cast<int>(std::log(static_cast<double>(ns)) / std::log(kBase));
  return std::clamp(b, 0, kBuckets - 1);
}

double LatencyHistogram::BucketUpperNs(int bucket) { return std::pow(kBase, bucket + 1); }

void LatencyHistogram::Record(int64_t nanoseconds) {
  const int b = BucketOf(nanoseconds);
  std::lock_guard<std::mutex> lock(mu_);
  ++buckets_[b];
  ++count_;
  max_ns_ = std::max(max_ns_, nanoseconds);
  total_ns_ += nanoseconds;
}

int64_t LatencyHistogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

double LatencyHistogram::PercentileUs(double quantile) const {
  std::lock_guard<std::mutex> lock(mu_);
  return PercentileUsLocked(quantile);
}

double LatencyHistogram::PercentileUsLocked(double quantile) const {
  if (count_ == 0) return 0.0;
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(quantile * count_)));
  int64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      return std::min(BucketUpperNs(b), static_cast<double>(max_ns_)) / 1000.0;
    }
  }
  return static_cast<double>(max_ns_) / 1000.0;
}

v1::LatencySummary LatencyHistogram::Summary() const {
  std::lock_guard<std::mutex> lock(mu_);
  v1::LatencySummary s;
  s.set_count(count_);
  s.set_p50_us(PercentileUsLocked(0.50));
  s.set_p99_us(PercentileUsLocked(0.99));
  s.set_max_us(static_cast<double>(max_ns_) / 1000.0);
  s.set_total_us(static_cast<double>(total_ns_) / 1000.0);
  int b = 0;
  int64_t below = 0;
  for (double bound_us : kSummaryBoundsUs) {
    while (b < kBuckets && BucketUpperNs(b) <= bound_us * 1000.0) below += buckets_[b++];
    v1::LatencyBucket* bucket = s.add_buckets();
    bucket->set_le_us(bound_us);
    bucket->set_count(below);
  }
  return s;
}

}  // namespace tessera
