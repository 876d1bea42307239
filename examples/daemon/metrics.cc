#include "metrics.h"

#include <cstdio>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace tesserad {
namespace {

// Label values escape backslash, double quote and newline (text format 0.0.4).
std::string EscapeLabel(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class MetricsWriter {
 public:
  void Header(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  void Sample(std::string_view name,
              std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
              double value) {
    out_ += name;
    if (labels.size() > 0) {
      out_ += '{';
      bool first = true;
      for (const auto& [key, label] : labels) {
        if (!first) out_ += ',';
        first = false;
        out_ += key;
        out_ += "=\"";
        out_ += EscapeLabel(label);
        out_ += '"';
      }
      out_ += '}';
    }
    char number[64];
    std::snprintf(number, sizeof(number), " %.17g\n", value);
    out_ += number;
  }

  void Summary(std::string_view name, std::string_view help,
               const tessera::v1::LatencySummary& latency) {
    Header(name, "summary", help);
    Sample(name, {{"quantile", "0.5"}}, latency.p50_us() / 1e6);
    Sample(name, {{"quantile", "0.99"}}, latency.p99_us() / 1e6);
    Sample(name, {{"quantile", "1"}}, latency.max_us() / 1e6);
    Sample(std::string(name) + "_sum", {}, latency.total_us() / 1e6);
    Sample(std::string(name) + "_count", {}, static_cast<double>(latency.count()));
  }

  // A Prometheus histogram from the summary's cumulative buckets.
  void Histogram(std::string_view name, std::string_view help,
                 const tessera::v1::LatencySummary& latency) {
    Header(name, "histogram", help);
    const std::string bucket = std::string(name) + "_bucket";
    for (const auto& b : latency.buckets()) {
      char le[32];
      std::snprintf(le, sizeof(le), "%g", b.le_us() / 1e6);
      Sample(bucket, {{"le", le}}, static_cast<double>(b.count()));
    }
    Sample(bucket, {{"le", "+Inf"}}, static_cast<double>(latency.count()));
    Sample(std::string(name) + "_sum", {}, latency.total_us() / 1e6);
    Sample(std::string(name) + "_count", {}, static_cast<double>(latency.count()));
  }

  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string RenderMetrics(tessera::Scheduler& scheduler, const tessera::v1::DaemonConfig& config,
                          const AlertMonitor* alerts, const Principal& viewer) {
  MetricsWriter w;
  const tessera::v1::SchedulerStats stats = scheduler.GetStats();

  w.Header("tessera_pending_jobs", "gauge", "Jobs waiting for resources.");
  w.Sample("tessera_pending_jobs", {}, static_cast<double>(stats.pending_jobs()));
  w.Header("tessera_running_jobs", "gauge", "Jobs admitted, starting or running.");
  w.Sample("tessera_running_jobs", {}, static_cast<double>(stats.running_jobs()));
  w.Header("tessera_finished_jobs_total", "counter", "Jobs finished since the daemon started.");
  w.Sample("tessera_finished_jobs_total", {}, static_cast<double>(stats.finished_jobs()));
  w.Header("tessera_decisions_total", "counter",
           "Placement attempts that ended in a decision (placed or not).");
  w.Sample("tessera_decisions_total", {}, static_cast<double>(stats.decisions()));
  w.Header("tessera_placements_total", "counter", "Jobs placed.");
  w.Sample("tessera_placements_total", {}, static_cast<double>(stats.placements()));
  w.Header("tessera_preemptions_total", "counter", "Jobs preempted (or shrunk).");
  w.Sample("tessera_preemptions_total", {}, static_cast<double>(stats.preemptions()));
  w.Header("tessera_lost_gpu_seconds_total", "counter",
           "GPU-seconds of work lost by preemptions since the last checkpoints.");
  w.Sample("tessera_lost_gpu_seconds_total", {}, static_cast<double>(stats.lost_gpu_seconds()));
  w.Header("tessera_idle_gpu_jobs", "gauge",
           "Running jobs whose GPUs stayed idle for their queue's idle_gpus window, now.");
  w.Sample("tessera_idle_gpu_jobs", {}, static_cast<double>(stats.idle_gpu_jobs()));
  w.Header("tessera_idle_gpu_flags_total", "counter", "Times a job was flagged for idle GPUs.");
  w.Sample("tessera_idle_gpu_flags_total", {}, static_cast<double>(stats.idle_gpu_flags()));
  w.Header("tessera_idle_gpu_preemptions_total", "counter",
           "Jobs preempted because their GPUs stayed idle.");
  w.Sample("tessera_idle_gpu_preemptions_total", {},
           static_cast<double>(stats.idle_gpu_preemptions()));
  w.Header("tessera_store_commits_total", "counter", "Store commits.");
  w.Sample("tessera_store_commits_total", {}, static_cast<double>(stats.commits()));
  w.Header("tessera_store_errors_total", "counter", "Store errors: I/O, disk full, corruption.");
  w.Sample("tessera_store_errors_total", {}, static_cast<double>(stats.store_errors()));
  w.Header("tessera_bugs_total", "counter", "Broken invariants the scheduler survived.");
  w.Sample("tessera_bugs_total", {}, static_cast<double>(stats.bugs()));
  w.Header("tessera_reservations", "gauge", "Pending jobs holding a reservation.");
  w.Sample("tessera_reservations", {}, static_cast<double>(stats.reservations()));
  w.Header("tessera_last_event_seq", "gauge", "Sequence number of the newest event.");
  w.Sample("tessera_last_event_seq", {}, static_cast<double>(stats.last_event_seq()));
  w.Histogram("tessera_decision_latency_seconds", "Time to decide one job's placement.",
              stats.decision_latency());
  w.Histogram("tessera_commit_latency_seconds", "Time of one store commit.",
              stats.commit_latency());
  w.Summary("tessera_preemption_latency_seconds", "Time to plan one preemption.",
            stats.preemption_latency());

  auto queues = scheduler.ListQueues();
  if (queues.ok() && !viewer.admin) {
    std::erase_if(*queues,
                  [&](const tessera::v1::Queue& q) { return !viewer.Owns(q.spec().name()); });
  }
  w.Header("tessera_queue_pending_jobs", "gauge", "Pending jobs of a queue's subtree.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      w.Sample("tessera_queue_pending_jobs", {{"queue", q.spec().name()}},
               static_cast<double>(q.status().pending_jobs()));
    }
  }
  w.Header("tessera_queue_running_jobs", "gauge", "Running jobs of a queue's subtree.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      w.Sample("tessera_queue_running_jobs", {{"queue", q.spec().name()}},
               static_cast<double>(q.status().running_jobs()));
    }
  }
  w.Header("tessera_queue_dominant_share", "gauge",
           "Weighted dominant share that orders a queue among its siblings.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      w.Sample("tessera_queue_dominant_share", {{"queue", q.spec().name()}},
               q.status().dominant_share());
    }
  }

  w.Header("tessera_queue_weighted_gpu_share", "gauge",
           "Price of the GPUs a queue's subtree holds over the price of every GPU "
           "(fair_share.gpu_model_weights).");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      w.Sample("tessera_queue_weighted_gpu_share", {{"queue", q.spec().name()}},
               q.status().weighted_gpu_share());
    }
  }
  w.Header("tessera_queue_gpu_model_allocated_milli", "gauge",
           "Milli-GPUs of one model held by a queue's subtree.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      for (const auto& m : q.status().gpu_models()) {
        w.Sample("tessera_queue_gpu_model_allocated_milli",
                 {{"queue", q.spec().name()}, {"model", m.model()}},
                 static_cast<double>(m.allocated_gpu_milli()));
      }
    }
  }
  w.Header("tessera_queue_gpu_model_share", "gauge",
           "Share of the cluster's GPUs of one model held by a queue's subtree.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      for (const auto& m : q.status().gpu_models()) {
        w.Sample("tessera_queue_gpu_model_share",
                 {{"queue", q.spec().name()}, {"model", m.model()}}, m.share());
      }
    }
  }

  // Spend on burst capacity, in the currency of the node groups' prices (docs/cloud-burst.md).
  w.Header("tessera_queue_burst_spend", "gauge",
           "Spent on burst capacity by a queue's subtree in the current UTC hour, day or month.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      const auto& spend = q.status().burst();
      for (const auto& [period, value] :
           {std::pair{"hour", spend.this_hour()}, std::pair{"day", spend.today()},
            std::pair{"month", spend.this_month()}}) {
        w.Sample("tessera_queue_burst_spend", {{"queue", q.spec().name()}, {"period", period}},
                 value);
      }
    }
  }
  w.Header("tessera_queue_burst_rate_per_hour", "gauge",
           "What a queue's subtree spends on burst capacity now, per hour.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      w.Sample("tessera_queue_burst_rate_per_hour", {{"queue", q.spec().name()}},
               q.status().burst().rate_per_hour());
    }
  }
  w.Header("tessera_queue_burst_month_forecast", "gauge",
           "What a queue's subtree's burst spend comes to this month at the present rate.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      w.Sample("tessera_queue_burst_month_forecast", {{"queue", q.spec().name()}},
               q.status().burst().month_forecast());
    }
  }
  w.Header("tessera_queue_burst_out_of_budget", "gauge",
           "1 while a budget (the queue's, an ancestor's or the global one) keeps the queue off "
           "burst capacity.");
  if (queues.ok()) {
    for (const auto& q : *queues) {
      w.Sample("tessera_queue_burst_out_of_budget", {{"queue", q.spec().name()}},
               q.status().burst().out_of_budget().empty() ? 0 : 1);
    }
  }

  auto backends = scheduler.ListBackends();
  w.Header("tessera_backend_healthy", "gauge",
           "1 while the backend answers; 0 once a call failed, hung or returned bad bytes.");
  if (backends.ok()) {
    for (const auto& b : *backends) {
      w.Sample("tessera_backend_healthy", {{"backend", b.name()}}, b.healthy() ? 1 : 0);
    }
  }
  w.Header("tessera_backend_restarts_total", "counter",
           "Restarts of an isolated backend plugin, failed starts included.");
  if (backends.ok()) {
    for (const auto& b : *backends) {
      w.Sample("tessera_backend_restarts_total", {{"backend", b.name()}}, b.restarts());
    }
  }
  w.Header("tessera_backend_operations_in_flight", "gauge",
           "Operations (launch, stop, resize, partition, provision, deprovision) asked of the "
           "backend and not ended yet.");
  if (backends.ok()) {
    for (const auto& b : *backends) {
      for (const auto& op : b.operations()) {
        w.Sample("tessera_backend_operations_in_flight",
                 {{"backend", b.name()}, {"kind", op.kind()}}, op.in_flight());
      }
    }
  }
  w.Header("tessera_backend_operations_total", "counter",
           "Operations the backend ended, by kind and result (succeeded, failed).");
  if (backends.ok()) {
    for (const auto& b : *backends) {
      for (const auto& op : b.operations()) {
        w.Sample("tessera_backend_operations_total",
                 {{"backend", b.name()}, {"kind", op.kind()}, {"result", "succeeded"}},
                 op.succeeded());
        w.Sample("tessera_backend_operations_total",
                 {{"backend", b.name()}, {"kind", op.kind()}, {"result", "failed"}}, op.failed());
      }
    }
  }

  auto nodes = scheduler.ListNodes();
  struct GpuMetric {
    const char* name;
    const char* help;
  };
  w.Header("tessera_node_cordoned", "gauge", "1 when no new work is placed on the node.");
  if (nodes.ok()) {
    for (const auto& n : *nodes) {
      w.Sample("tessera_node_cordoned", {{"node", n.spec().name()}}, n.status().cordoned() ? 1 : 0);
    }
  }
  // Per-GPU gauges: health always, readings once the GPU has reported telemetry.
  const GpuMetric kGpuMetrics[] = {
      {"tessera_gpu_failed", "1 when the GPU reported a fatal error."},
      {"tessera_gpu_too_hot", "1 while the GPU is above the temperature limit."},
      {"tessera_gpu_utilization_ratio", "Last reported GPU utilisation, 0..1."},
      {"tessera_gpu_memory_used_bytes", "Last reported GPU memory in use."},
      {"tessera_gpu_temperature_celsius", "Last reported GPU temperature."},
      {"tessera_gpu_power_watts", "Last reported GPU power draw."},
  };
  for (size_t m = 0; m < std::size(kGpuMetrics); ++m) {
    w.Header(kGpuMetrics[m].name, "gauge", kGpuMetrics[m].help);
    if (!nodes.ok()) continue;
    for (const auto& n : *nodes) {
      for (const auto& gpu : n.status().gpus()) {
        const std::string index = std::to_string(gpu.index());
        std::string model;
        for (const auto& device : n.spec().gpus()) {
          if (device.index() == gpu.index()) model = device.model();
        }
        const auto& last = gpu.last();
        const bool reported = gpu.has_last();
        double value = 0;
        switch (m) {
          case 0:
            value = gpu.failed() ? 1 : 0;
            break;
          case 1:
            value = gpu.too_hot() ? 1 : 0;
            break;
          case 2:
            value = last.utilization_pct() / 100.0;
            break;
          case 3:
            value = static_cast<double>(last.memory_used_mib()) * 1024 * 1024;
            break;
          case 4:
            value = last.temperature_c();
            break;
          case 5:
            value = last.power_w();
            break;
        }
        if (m >= 2 && !reported) continue;
        w.Sample(kGpuMetrics[m].name, {{"node", n.spec().name()}, {"gpu", index}, {"model", model}},
                 value);
      }
    }
  }

  // Alert thresholds from the configuration, so alert rules need not repeat them.
  w.Header("tessera_gpu_max_temperature_celsius", "gauge",
           "Configured temperature at which a GPU takes no new work.");
  w.Sample("tessera_gpu_max_temperature_celsius", {}, config.gpu_health().max_temperature_c());
  w.Header("tessera_gpu_resume_temperature_celsius", "gauge",
           "Configured temperature at which a hot GPU takes work again.");
  w.Sample("tessera_gpu_resume_temperature_celsius", {},
           config.gpu_health().resume_temperature_c());
  if (alerts != nullptr) {
    w.Header("tessera_alert_threshold", "gauge",
             "Configured alert thresholds (alerts section), in the unit of the metric compared.");
    for (const auto& [name, value] : alerts->Thresholds()) {
      w.Sample("tessera_alert_threshold", {{"alert", name}}, value);
    }
    w.Header("tessera_alert_firing", "gauge",
             "1 for each alert firing at the last check, by alert and subject.");
    for (const Alert& alert : alerts->Firing()) {
      if (!viewer.admin && alert.name == "queue_backlog" && !viewer.Owns(alert.subject)) continue;
      w.Sample("tessera_alert_firing", {{"alert", alert.name}, {"subject", alert.subject}}, 1);
    }
  }
  return w.Take();
}

}  // namespace tesserad
