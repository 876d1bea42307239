#include "day_peak_workload.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <utility>

namespace tessera::bench {
namespace {

constexpr double kHourS = 3600;
constexpr int kGpuSizes[4] = {1, 2, 4, 8};

// Mean of an exponential of mean `mean` clipped to [lo, hi]: lo + integral_lo^hi P(D > x) dx.
double ClippedExponentialMean(double mean, double lo, double hi) {
  return lo + mean * (std::exp(-lo / mean) - std::exp(-hi / mean));
}

}  // namespace

DayPeakWorkload MakeDayPeakWorkload(const DayPeakOptions& o) {
  DayPeakWorkload w;
  double mix_total = 0;
  double mean_job_gpus = 0;
  for (int i = 0; i < 4; ++i) {
    mix_total += o.gpu_mix[i];
    mean_job_gpus += o.gpu_mix[i] * kGpuSizes[i];
  }
  mean_job_gpus /= mix_total;
  const double mean_runtime_h =
      ClippedExponentialMean(o.mean_runtime_min, o.min_runtime_min, o.max_runtime_min) / 60;
  const double base_per_h = o.mean_gpus / (mean_job_gpus * mean_runtime_h);
  const double max_per_s = base_per_h * (1 + o.amplitude) / kHourS;
  const double window_s = o.days * 24 * kHourS;

  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::exponential_distribution<double> gap(max_per_s);
  std::exponential_distribution<double> runtime(1 / o.mean_runtime_min);
  std::discrete_distribution<int> size(o.gpu_mix.begin(), o.gpu_mix.end());

  std::vector<std::pair<double, int>> changes;  // (time s, GPUs +/-) for the demand curve.
  for (double t = gap(rng); t < window_s; t += gap(rng)) {
    const double hour = std::fmod(t / kHourS, 24);
    const double rate =
        1 + o.amplitude * std::cos(2 * std::numbers::pi * (hour - o.peak_hour) / 24);
    if (unit(rng) * (1 + o.amplitude) > rate) continue;  // thinning to the day curve.
    const int gpus = kGpuSizes[size(rng)];
    const double minutes = std::clamp(runtime(rng), o.min_runtime_min, o.max_runtime_min);
    const bool checkpoints = unit(rng) < o.checkpointing_share;

    replay::ReplayJob& job = w.jobs.emplace_back();
    job.submit_offset_us = static_cast<int64_t>(t * 1e6);
    v1::JobSpec& spec = job.spec;
    spec.set_name("day-peak-" + std::to_string(w.jobs.size()));
    spec.set_queue(checkpoints ? "training" : "interactive");
    spec.mutable_task()->set_gpu_count(gpus);
    spec.mutable_task()->set_cpu_milli(8000LL * gpus);
    spec.mutable_task()->set_memory_mib(65536LL * gpus);
    if (checkpoints) spec.set_checkpoint_grace_s(o.checkpoint_grace_s);
    const int64_t duration_ms = static_cast<int64_t>(minutes * 60'000);
    spec.mutable_simulation()->set_duration_ms(duration_ms);

    w.gpu_hours += gpus * minutes / 60;
    changes.emplace_back(t, gpus);
    changes.emplace_back(t + minutes * 60, -gpus);
  }

  // The demand curve, sampled each minute of the window (and its peak at every change).
  std::sort(changes.begin(), changes.end());
  double in_use = 0;
  size_t next = 0;
  double sum = 0;
  std::array<double, 24> by_hour_sum{};
  std::array<int64_t, 24> by_hour_n{};
  int64_t samples = 0;
  for (double t = 30; t < window_s; t += 60) {
    while (next < changes.size() && changes[next].first <= t) {
      in_use += changes[next++].second;
      w.peak_gpus = std::max(w.peak_gpus, in_use);
    }
    sum += in_use;
    ++samples;
    const int hour = static_cast<int>(std::fmod(t / kHourS, 24));
    by_hour_sum[hour] += in_use;
    ++by_hour_n[hour];
  }
  w.mean_gpus = samples > 0 ? sum / static_cast<double>(samples) : 0;
  for (int h = 0; h < 24; ++h) {
    w.gpus_by_hour[h] = by_hour_n[h] > 0 ? by_hour_sum[h] / static_cast<double>(by_hour_n[h]) : 0;
  }
  return w;
}

}  // namespace tessera::bench
