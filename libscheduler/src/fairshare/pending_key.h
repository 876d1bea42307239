// PendingKey: the order of pending jobs inside one queue: higher priority first, then earlier
// submit time (kept across requeues), then lower job id.
#pragma once

#include <cstdint>

namespace tessera {

struct PendingKey {
  int32_t priority = 0;
  int64_t submit_time_us = 0;
  uint64_t job_id = 0;

  friend bool operator<(const PendingKey& a, const PendingKey& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.submit_time_us != b.submit_time_us) return a.submit_time_us < b.submit_time_us;
    return a.job_id < b.job_id;
  }
  friend bool operator==(const PendingKey& a, const PendingKey& b) {
    return a.priority == b.priority && a.submit_time_us == b.submit_time_us && a.job_id == b.job_id;
  }
};

}  // namespace tessera
