// Prometheus metrics for tesserad: the scheduler's own statistics, its queues and the last GPU
// telemetry of its nodes, rendered in the Prometheus text exposition format 0.0.4
// (docs/daemon.md lists every metric).
//
// Thread safety: RenderMetrics only calls thread-safe Scheduler members.
#pragma once

#include <string>

#include "alerts.h"
#include "auth.h"
#include "tessera/scheduler.h"
#include "tessera/v1/config.pb.h"

namespace tesserad {

// The text served on GET /metrics. `config` supplies the GPU health limits and `alerts` (may be
// null) the alert thresholds and the alerts firing, exposed as gauges so that alert rules can
// compare against them. Per-queue series, and alerts about a queue, are shown only for the
// queues `viewer` owns (all of them for an admin), so that a tenant learns nothing of the others.
std::string RenderMetrics(tessera::Scheduler& scheduler, const tessera::v1::DaemonConfig& config,
                          const AlertMonitor* alerts, const Principal& viewer);

}  // namespace tesserad
