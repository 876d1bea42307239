// PendingKey: the order of pending jobs inside one queue: higher priority first, then (in a
// queue ordered by attained service) the lower service band, then earlier submit time (kept
// across requeues), then lower job id.
#pragma once

#include <cstdint>

namespace tessera {

struct PendingKey {
  int32_t priority = 0;
  int64_t submit_time_us = 0;
  uint64_t job_id = 0;
  // The job's band in a queue ordered by attained service (fairshare/service_bands.h); 0 in
  // every other queue. Last, so that {priority, submit time, id} still means what it says.
  int32_t band = 0;

  friend bool operator<(const PendingKey& a, const PendingKey& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.band != b.band) return a.band < b.band;
    if (a.submit_time_us != b.submit_time_us) return a.submit_time_us < b.submit_time_us;
    return a.job_id < b.job_id;
  }
  friend bool operator==(const PendingKey& a, const PendingKey& b) {
    return a.priority == b.priority && a.band == b.band && a.submit_time_us == b.submit_time_us &&
           a.job_id == b.job_id;
  }
};

}  // namespace tessera
