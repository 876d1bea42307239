#include "alerts.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

namespace tesserad {
namespace {

namespace v1 = tessera::v1;

std::string Format(const char* format, double a, double b) {
  char text[96];
  std::snprintf(text, sizeof(text), format, a, b);
  return text;
}

// The p99 of the samples recorded between two cumulative summaries, as the smallest bucket bound
// that holds 99 % of them; 0 when there were none.
double IntervalP99Us(const v1::LatencySummary& now, const v1::LatencySummary& before) {
  const int64_t samples = now.count() - before.count();
  if (samples <= 0) return 0;
  const double needed = 0.99 * static_cast<double>(samples);
  for (int i = 0; i < now.buckets_size(); ++i) {
    const int64_t earlier = i < before.buckets_size() ? before.buckets(i).count() : 0;
    if (static_cast<double>(now.buckets(i).count() - earlier) >= needed) {
      return now.buckets(i).le_us();
    }
  }
  return now.max_us();  // beyond the last bound.
}

bool IsLeaf(const v1::Queue& queue, const std::vector<v1::Queue>& queues) {
  const std::string prefix = queue.spec().name() + "/";
  for (const v1::Queue& other : queues) {
    if (other.spec().name().compare(0, prefix.size(), prefix) == 0) return false;
  }
  return true;
}

}  // namespace

std::vector<Alert> AlertEvaluator::Evaluate(const v1::SchedulerStats& stats,
                                            const std::vector<v1::Queue>& queues,
                                            const std::vector<v1::Node>& nodes,
                                            const std::vector<v1::Backend>& backends) {
  std::vector<Alert> alerts;
  for (const v1::Backend& backend : backends) {
    if (!backend.healthy()) {
      alerts.push_back({"backend_unhealthy", backend.name(), backend.unhealthy_reason()});
    }
  }
  for (const v1::Node& node : nodes) {
    for (const v1::GpuState& gpu : node.status().gpus()) {
      const std::string subject = node.spec().name() + "/gpu" + std::to_string(gpu.index());
      if (gpu.failed()) alerts.push_back({"gpu_failed", subject, gpu.reason()});
      if (!gpu.has_last()) continue;
      const v1::GpuTelemetry& last = gpu.last();
      if (last.temperature_c() >= config_.gpu_temperature_c()) {
        alerts.push_back(
            {"gpu_hot", subject,
             Format("%.0f C >= %.0f C", last.temperature_c(), config_.gpu_temperature_c())});
      }
      for (const v1::GpuDevice& device : node.spec().gpus()) {
        if (device.index() != gpu.index() || device.memory_mib() <= 0) continue;
        const double used_pct = 100.0 * static_cast<double>(last.memory_used_mib()) /
                                static_cast<double>(device.memory_mib());
        if (used_pct > config_.gpu_memory_used_pct()) {
          alerts.push_back(
              {"gpu_memory_full", subject,
               Format("%.1f%% > %.1f%% of memory", used_pct, config_.gpu_memory_used_pct())});
        }
      }
    }
  }
  if (config_.queue_pending_jobs() > 0) {
    for (const v1::Queue& queue : queues) {
      if (queue.status().pending_jobs() > config_.queue_pending_jobs() && IsLeaf(queue, queues)) {
        alerts.push_back(
            {"queue_backlog", queue.spec().name(),
             Format("%.0f pending > %.0f", static_cast<double>(queue.status().pending_jobs()),
                    static_cast<double>(config_.queue_pending_jobs()))});
      }
    }
  }
  const struct {
    const char* name;
    int64_t threshold_us;
    const v1::LatencySummary& now;
    const v1::LatencySummary& before;
  } latencies[] = {
      {"decision_latency", config_.decision_latency_p99_us(), stats.decision_latency(),
       previous_.decision_latency()},
      {"commit_latency", config_.commit_latency_p99_us(), stats.commit_latency(),
       previous_.commit_latency()},
  };
  for (const auto& latency : latencies) {
    if (latency.threshold_us <= 0) continue;
    const double p99 = IntervalP99Us(latency.now, latency.before);
    if (p99 > static_cast<double>(latency.threshold_us)) {
      alerts.push_back(
          {latency.name, "scheduler",
           Format("p99 %.0f us > %.0f us", p99, static_cast<double>(latency.threshold_us))});
    }
  }
  previous_ = stats;
  std::sort(alerts.begin(), alerts.end(), [](const Alert& a, const Alert& b) {
    return std::tie(a.name, a.subject) < std::tie(b.name, b.subject);
  });
  return alerts;
}

std::vector<std::pair<std::string, double>> AlertEvaluator::Thresholds() const {
  std::vector<std::pair<std::string, double>> thresholds = {
      {"gpu_hot", config_.gpu_temperature_c()},
      {"gpu_memory_full", config_.gpu_memory_used_pct() / 100.0},
  };
  if (config_.queue_pending_jobs() > 0) {
    thresholds.emplace_back("queue_backlog", static_cast<double>(config_.queue_pending_jobs()));
  }
  if (config_.decision_latency_p99_us() > 0) {
    thresholds.emplace_back("decision_latency", config_.decision_latency_p99_us() / 1e6);
  }
  if (config_.commit_latency_p99_us() > 0) {
    thresholds.emplace_back("commit_latency", config_.commit_latency_p99_us() / 1e6);
  }
  return thresholds;
}

AlertMonitor::AlertMonitor(tessera::Scheduler& scheduler, v1::AlertsConfig config,
                           std::function<void(const std::string&)> log)
    : scheduler_(scheduler), config_(config), log_(std::move(log)), evaluator_(std::move(config)) {}

AlertMonitor::~AlertMonitor() { Stop(); }

void AlertMonitor::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(config_.check_interval_ms()),
                     [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      CheckNow();
      lock.lock();
    }
  });
}

void AlertMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AlertMonitor::CheckNow() {
  const v1::SchedulerStats stats = scheduler_.GetStats();
  auto queues = scheduler_.ListQueues();
  auto nodes = scheduler_.ListNodes();
  auto backends = scheduler_.ListBackends();
  if (!queues.ok() || !nodes.ok() || !backends.ok()) return;  // the next check tries again.

  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Alert> now = evaluator_.Evaluate(stats, *queues, *nodes, *backends);
  auto key = [](const Alert& a) { return a.name + "\t" + a.subject; };
  std::set<std::string> before, after;
  for (const Alert& a : firing_) before.insert(key(a));
  for (const Alert& a : now) after.insert(key(a));
  for (const Alert& a : now) {
    if (!before.count(key(a))) log_("alert " + a.name + " firing: " + a.subject + ": " + a.detail);
  }
  for (const Alert& a : firing_) {
    if (!after.count(key(a))) log_("alert " + a.name + " resolved: " + a.subject);
  }
  firing_ = std::move(now);
}

std::vector<Alert> AlertMonitor::Firing() const {
  std::lock_guard<std::mutex> lock(mu_);
  return firing_;
}

std::vector<std::pair<std::string, double>> AlertMonitor::Thresholds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evaluator_.Thresholds();
}

}  // namespace tesserad
