// Implementation of Themis-style finish-time fairness (finish_time_fairness.h).
#include "finish_time_fairness.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "tessera/job.h"

namespace tessera::replay {

std::vector<double> FinishTimeFairness(const ReplayResult& result, int64_t capacity_gpu_milli) {
  const size_t n = result.jobs.size();
  std::vector<double> rho(n, -1.0);
  // (time, kind, job): kind 0 = an end, 1 = an arrival, so that a job ending at t no longer
  // counts as active for one arriving at t.
  struct Event {
    TimestampUs t;
    int kind;
    size_t job;
  };
  std::vector<Event> events;
  events.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const ReplayedJob& job = result.jobs[i];
    if (job.id == 0) continue;
    events.push_back({job.submit_us, 1, i});
    if (job.end_us > 0) events.push_back({job.end_us, 0, i});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.job < b.job;
  });
  auto weight_of = [&](const std::string& queue) {
    auto it = result.queue_weight.find(queue);
    return it == result.queue_weight.end() || it->second <= 0 ? 1.0 : it->second;
  };
  std::map<std::string, int64_t> active;  // per queue.
  double active_weight = 0;
  // All events of one instant at once: its ends, then its arrivals, then the arrivals' shares,
  // so that jobs arriving together all count for each other.
  size_t i = 0;
  std::vector<size_t> arrived;
  while (i < events.size()) {
    const TimestampUs t = events[i].t;
    arrived.clear();
    for (; i < events.size() && events[i].t == t; ++i) {
      const ReplayedJob& job = result.jobs[events[i].job];
      if (events[i].kind == 0) {
        if (--active[job.queue] == 0) active_weight -= weight_of(job.queue);
      } else {
        if (active[job.queue]++ == 0) active_weight += weight_of(job.queue);
        arrived.push_back(events[i].job);
      }
    }
    for (size_t index : arrived) {
      const ReplayedJob& job = result.jobs[index];
      if (!IsTerminal(job.state) || job.end_us <= 0 || job.duration_us <= 0) continue;
      const double fair_share = static_cast<double>(capacity_gpu_milli) * weight_of(job.queue) /
                                active_weight / static_cast<double>(active[job.queue]);
      const double demand = static_cast<double>(job.gpu_milli);
      const double slowdown = demand > fair_share && fair_share > 0 ? demand / fair_share : 1.0;
      const double t_fair = static_cast<double>(job.duration_us) * slowdown;
      rho[index] = static_cast<double>(job.end_us - job.submit_us) / t_fair;
    }
  }
  return rho;
}

}  // namespace tessera::replay
