// Alerts: the thresholds of the configuration's `alerts` section (tessera.v1.AlertsConfig)
// checked against what the scheduler reports, so that an operator sees trouble in the log even
// without Prometheus alert rules. Every check compares a fresh snapshot (stats, queues, nodes)
// with the thresholds; the AlertMonitor logs one line when an alert starts firing and one when it
// resolves, and /metrics shows the firing set (tessera_alert_firing) and the thresholds
// (tessera_alert_threshold).
//
//   gpu_failed        a GPU reported a fatal error (always on)
//   gpu_hot           a GPU at or above alerts.gpu_temperature_c
//   gpu_memory_full   a GPU using more than alerts.gpu_memory_used_pct of its memory
//   queue_backlog     a leaf queue with more than alerts.queue_pending_jobs pending jobs
//   decision_latency  p99 decision time since the previous check above the threshold
//   commit_latency    p99 store commit time since the previous check above the threshold
//
// Thread safety: AlertEvaluator is single-threaded; AlertMonitor's methods may be called from
// any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tessera/scheduler.h"
#include "tessera/v1/config.pb.h"

namespace tesserad {

struct Alert {
  std::string name;     // "gpu_hot".
  std::string subject;  // what it is about: "node-0/gpu3", a queue name, "scheduler".
  std::string detail;   // the reading against the threshold: "91 C >= 87 C".
};

class AlertEvaluator {
 public:
  // `config` as completed by ApplyDaemonConfigDefaults.
  explicit AlertEvaluator(tessera::v1::AlertsConfig config) : config_(std::move(config)) {}

  // The alerts firing in this snapshot, ordered by name then subject. Latency alerts look at the
  // samples recorded since the previous call, with the resolution of the stats' histogram
  // buckets (1-2.5-5 steps).
  std::vector<Alert> Evaluate(const tessera::v1::SchedulerStats& stats,
                              const std::vector<tessera::v1::Queue>& queues,
                              const std::vector<tessera::v1::Node>& nodes,
                              const std::vector<tessera::v1::Backend>& backends = {});

  // The configured thresholds that are on, as (alert name, value in the metric's unit).
  std::vector<std::pair<std::string, double>> Thresholds() const;

 private:
  tessera::v1::AlertsConfig config_;
  tessera::v1::SchedulerStats previous_;
};

class AlertMonitor {
 public:
  // Logs through `log` (one line per call, without a trailing newline).
  AlertMonitor(tessera::Scheduler& scheduler, tessera::v1::AlertsConfig config,
               std::function<void(const std::string&)> log);
  ~AlertMonitor();

  // Checks every alerts.check_interval_ms on a thread of its own until Stop.
  void Start();
  void Stop();
  // One check now: logs the alerts that started or resolved since the previous check.
  void CheckNow();

  std::vector<Alert> Firing() const;
  std::vector<std::pair<std::string, double>> Thresholds() const;

 private:
  tessera::Scheduler& scheduler_;
  const tessera::v1::AlertsConfig config_;
  const std::function<void(const std::string&)> log_;
  mutable std::mutex mu_;
  AlertEvaluator evaluator_;   // guarded by mu_.
  std::vector<Alert> firing_;  // guarded by mu_.
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_.
  std::thread thread_;
};

}  // namespace tesserad
