// Prometheus metrics for tesserad: the scheduler's own statistics, its queues and the last GPU
// telemetry of its nodes, rendered in the Prometheus text exposition format 0.0.4
// (docs/daemon.md lists every metric).
//
// Thread safety: RenderMetrics only calls thread-safe Scheduler members.
#pragma once

#include <string>

#include "alerts.h"
#include "tessera/scheduler.h"
#include "tessera/v1/config.pb.h"

namespace tesserad {

// The text served on GET /metrics. `config` supplies the GPU health limits and `alerts` (may be
// null) the alert thresholds and the alerts firing, exposed as gauges so that alert rules can
// compare against them.
std::string RenderMetrics(tessera::Scheduler& scheduler, const tessera::v1::DaemonConfig& config,
                          const AlertMonitor* alerts);

}  // namespace tesserad
