// A synthetic GPU workload with a daily peak, for the burst benchmark (burst_bench.cc).
//
// Jobs arrive as a Poisson process whose rate follows a day curve,
//   rate(t) = base * (1 + amplitude * cos(2 pi (hour_of_day(t) - peak_hour) / 24)),
// with `base` chosen so that the GPUs in use, if every job started the moment it arrived,
// average `mean_gpus` (each job's GPUs x its runtime, summed, over the arrival window). A job
// is one task of 1, 2, 4 or 8 GPUs (shares `gpu_mix`), 8 cores and 64 GiB per GPU, and runs for
// an exponential time of mean `mean_runtime_min`, clipped to [min_runtime_min, max_runtime_min].
// A share `checkpointing_share` of the jobs checkpoint (checkpoint_grace_s > 0: they may run on
// spot) and go to the queue "training"; the others to "interactive".
//
// Deterministic: the same options (seed included) give the same jobs. The openb trace is not
// used because it has no daily peak in GPU demand (docs/benchmarks.md, "burst").
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "trace_replay.h"

namespace tessera::bench {

struct DayPeakOptions {
  double days = 7;
  double mean_gpus = 110;
  double amplitude = 0.9;  // 0..1: peak = mean * (1 + amplitude), trough = mean * (1 - it).
  double peak_hour = 15;   // UTC.
  double mean_runtime_min = 60;
  double min_runtime_min = 2;
  double max_runtime_min = 480;
  std::array<double, 4> gpu_mix = {0.5, 0.2, 0.15, 0.15};  // 1, 2, 4, 8 GPUs.
  double checkpointing_share = 0.6;
  int64_t checkpoint_grace_s = 60;
  uint64_t seed = 1;
};

struct DayPeakWorkload {
  std::vector<replay::ReplayJob> jobs;
  // GPUs in use if every job started at its arrival: the mean over the arrival window, its
  // highest point, and the mean for each hour of the day (UTC).
  double mean_gpus = 0;
  double peak_gpus = 0;
  std::array<double, 24> gpus_by_hour{};
  double gpu_hours = 0;  // the work, all jobs together.
};

// Jobs at offsets from midnight UTC (the replay's epoch should be a midnight).
DayPeakWorkload MakeDayPeakWorkload(const DayPeakOptions& options);

}  // namespace tessera::bench
