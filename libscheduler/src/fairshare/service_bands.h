// Service bands: the least-attained-service order of a queue (QueueSpec.attained_service), as
// Tiresias's discretised two-dimensional LAS defines it. A job's service is the GPUs it held
// times how long it held them, summed over its attempts; its band is how many of the queue's
// band limits that service has reached. Pending jobs wait in band order within a priority class
// (PendingKey.band), so a job that has had little service goes before one that has had much,
// and within a band in submit order. A job back in line after a run returns to band 0 once it
// has waited starvation_factor times that run, so long jobs are not starved by short ones.
//
// Plain functions of the queue's spec and a job's figures: the engine keeps the figures
// (JobRecord) and the timers. Thread safety: none needed (no state).
#pragma once

#include <cstdint>
#include <optional>

#include "tessera/clock.h"
#include "tessera/v1/queue.pb.h"

namespace tessera {

// The band limit used when a queue's order names none: one GPU-hour.
inline constexpr int64_t kDefaultServiceBandLimitGpuS = 3600;

// The band of a job with `gpu_us` GPU-microseconds of service: 0 below the first limit.
int32_t ServiceBand(const v1::AttainedServiceOrder& order, int64_t gpu_us);

// The service at which a job of `gpu_us` leaves its band, in GPU-microseconds; nullopt in the
// last band.
std::optional<int64_t> NextBandLimitGpuUs(const v1::AttainedServiceOrder& order, int64_t gpu_us);

// When a job back in line since `requeued_us`, after a run of `run_us`, returns to band 0;
// nullopt when it never does (no starvation factor, or no run).
std::optional<TimestampUs> BandPromotionAt(const v1::AttainedServiceOrder& order,
                                           TimestampUs requeued_us, int64_t run_us);

}  // namespace tessera
