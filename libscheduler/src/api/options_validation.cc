#include "api/options_validation.h"

#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "tessera/plugin/linked.h"

namespace tessera {
namespace {

Status Invalid(const std::string& field, const std::string& message) {
  return InvalidFieldError(field, message);
}

std::string Num(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

Status AtLeast(int64_t value, int64_t min, const std::string& field, const char* unit = "") {
  if (value >= min) return Status::Ok();
  return Invalid(field, "must be " + (min == 1 ? std::string("> 0") : ">= " + std::to_string(min)) +
                            unit + ", got " + std::to_string(value));
}

Status ValidateStore(const StoreOptions& s) {
  return AtLeast(s.busy_timeout.count(), 0, "store.busy_timeout", " ms");
}

Status ValidateRetention(const RetentionOptions& r) {
  TESSERA_RETURN_IF_ERROR(
      AtLeast(r.finished_job_ttl.count(), 0, "retention.finished_job_ttl", " s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(r.max_finished_jobs, 0, "retention.max_finished_jobs"));
  TESSERA_RETURN_IF_ERROR(AtLeast(r.sweep_interval.count(), 1, "retention.sweep_interval", " ms"));
  if (r.sweep_batch < 1 || r.sweep_batch > 100000) {
    return Invalid("retention.sweep_batch",
                   "must be in 1..100000, got " + std::to_string(r.sweep_batch));
  }
  return Status::Ok();
}

Status ValidatePlacement(const PlacementOptions& p) {
  for (size_t i = 0; i < p.expected_tasks.size(); ++i) {
    const ExpectedTask& t = p.expected_tasks[i];
    const std::string field = "placement.expected_tasks[" + std::to_string(i) + "].";
    TESSERA_RETURN_IF_ERROR(AtLeast(t.cpu_milli, 0, field + "cpu_milli"));
    TESSERA_RETURN_IF_ERROR(AtLeast(t.memory_mib, 0, field + "memory_mib"));
    TESSERA_RETURN_IF_ERROR(AtLeast(t.gpu_count, 0, field + "gpu_count"));
    if (t.gpu_milli < 1 || t.gpu_milli > 1000) {
      return Invalid(field + "gpu_milli", "must be in 1..1000, got " + std::to_string(t.gpu_milli));
    }
    if (!(t.count > 0) || !std::isfinite(t.count)) {
      return Invalid(field + "count", "must be a finite number > 0, got " + Num(t.count));
    }
  }
  if (!(p.expected_coverage > 0 && p.expected_coverage <= 1)) {
    return Invalid("placement.expected_coverage",
                   "must be in (0, 1], got " + Num(p.expected_coverage));
  }
  if (!(p.learn_half_life_tasks >= 0) || !std::isfinite(p.learn_half_life_tasks)) {
    return Invalid("placement.learn_half_life_tasks",
                   "must be a finite number >= 0, got " + Num(p.learn_half_life_tasks));
  }
  return AtLeast(p.max_candidates, 0, "placement.max_candidates");
}

Status ValidateEngine(const EngineOptions& e) {
  TESSERA_RETURN_IF_ERROR(AtLeast(e.max_reservations, 0, "engine.max_reservations"));
  return AtLeast(e.default_runtime_estimate.count(), 1, "engine.default_runtime_estimate", " s");
}

Status ValidatePreemption(const PreemptionOptions& p) {
  TESSERA_RETURN_IF_ERROR(AtLeast(p.min_runtime.count(), 0, "preemption.min_runtime", " s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.cooldown.count(), 0, "preemption.cooldown", " s"));
  return AtLeast(p.max_per_minute, 0, "preemption.max_per_minute");
}

Status ValidateGpuHealth(const GpuHealthOptions& g) {
  if (!std::isfinite(g.max_temperature_c)) {
    return Invalid("gpu_health.max_temperature_c", "must be a finite number");
  }
  if (!(g.resume_temperature_c <= g.max_temperature_c)) {
    return Invalid("gpu_health.resume_temperature_c", "must be <= gpu_health.max_temperature_c (" +
                                                          Num(g.max_temperature_c) + "), got " +
                                                          Num(g.resume_temperature_c));
  }
  return Status::Ok();
}

// A price or budget: unset is no limit; set, it must be a finite amount >= 0.
Status ValidateAmount(const std::optional<double>& amount, const std::string& field) {
  if (!amount || (std::isfinite(*amount) && *amount >= 0)) return Status::Ok();
  return Invalid(field, "must be a finite number >= 0, got " + Num(*amount));
}

Status ValidateElastic(const ElasticOptions& e) {
  TESSERA_RETURN_IF_ERROR(AtLeast(e.scale_out_after.count(), 0, "elastic.scale_out_after", " s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.scale_in_after.count(), 0, "elastic.scale_in_after", " s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.max_nodes, 1, "elastic.max_nodes"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.max_requests_per_minute, 1, "elastic.max_requests_per_minute"));
  TESSERA_RETURN_IF_ERROR(
      ValidateAmount(e.max_spot_price_per_hour, "elastic.max_spot_price_per_hour"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.group_backoff.count(), 0, "elastic.group_backoff", " s"));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(e.metering_interval.count(), 1, "elastic.metering_interval", " s"));
  TESSERA_RETURN_IF_ERROR(ValidateAmount(e.budget_per_hour, "elastic.budget_per_hour"));
  TESSERA_RETURN_IF_ERROR(ValidateAmount(e.budget_per_day, "elastic.budget_per_day"));
  return ValidateAmount(e.budget_per_month, "elastic.budget_per_month");
}

Status ValidatePlugin(const PluginOptions& p, const std::string& field) {
  if (p.linked) {
    if (!p.plugin.empty()) {
      return Invalid(field + "plugin", "set together with linked; keep one");
    }
    if (p.isolate) {
      return Invalid(field + "isolate",
                     "a linked plugin is code of this program; it cannot be isolated");
    }
    if (!p.linked->make) return Invalid(field + "linked.make", "must be set");
  } else if (p.plugin.empty()) {
    return Invalid(field + "plugin", "must not be empty (a path or a plugin name), or set linked");
  }
  TESSERA_RETURN_IF_ERROR(AtLeast(p.call_deadline.count(), 1, field + "call_deadline", " ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.poll_interval.count(), 1, field + "poll_interval", " ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.max_restarts_per_minute, 0, field + "max_restarts_per_minute"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.max_consecutive_errors, 1, field + "max_consecutive_errors"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.launch_deadline.count(), 0, field + "launch_deadline", " ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.stop_deadline.count(), 0, field + "stop_deadline", " ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.resize_deadline.count(), 0, field + "resize_deadline", " ms"));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(p.partition_deadline.count(), 0, field + "partition_deadline", " ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.read_deadline.count(), 0, field + "read_deadline", " ms"));
  return AtLeast(p.provision_deadline.count(), 1, field + "provision_deadline", " ms");
}

Status ValidateExecutor(const Options& o) {
  if (o.simulated_cluster && !o.simulated_cluster_file.empty()) {
    return Invalid("simulated_cluster_file", "set together with simulated_cluster; keep one");
  }
  if (o.executor_plugin) {
    if (!o.backends.empty()) {
      return Invalid("executor_plugin", "set together with backends; list it there instead");
    }
    TESSERA_RETURN_IF_ERROR(ValidatePlugin(*o.executor_plugin, "executor_plugin."));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < o.backends.size(); ++i) {
    const BackendOptions& b = o.backends[i];
    const std::string field = "backends[" + std::to_string(i) + "].";
    TESSERA_RETURN_IF_ERROR(ValidatePlugin(b.plugin, field + "plugin."));
    if (!b.name.empty() && !names.insert(b.name).second) {
      return Invalid(field + "name", "'" + b.name + "' names another backend too");
    }
  }
  // A backend named in `partitions` may be unnamed here (it takes its plugin's name once
  // loaded): the names are checked again then.
  for (size_t i = 0; i < o.backends.size(); ++i) {
    const BackendOptions& b = o.backends[i];
    for (size_t j = 0; j < b.partitions.size(); ++j) {
      if (b.partitions[j].empty()) {
        return Invalid("backends[" + std::to_string(i) + "].partitions[" + std::to_string(j) + "]",
                       "must not be empty");
      }
    }
  }
  for (size_t i = 0; i < o.plugin_dirs.size(); ++i) {
    if (o.plugin_dirs[i].empty()) {
      return Invalid("plugin_dirs[" + std::to_string(i) + "]", "must not be empty");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateOptionBounds(const Options& options) {
  TESSERA_RETURN_IF_ERROR(ValidateStore(options.store));
  TESSERA_RETURN_IF_ERROR(ValidateRetention(options.retention));
  TESSERA_RETURN_IF_ERROR(ValidatePlacement(options.placement));
  TESSERA_RETURN_IF_ERROR(ValidateEngine(options.engine));
  TESSERA_RETURN_IF_ERROR(ValidatePreemption(options.preemption));
  TESSERA_RETURN_IF_ERROR(ValidateGpuHealth(options.gpu_health));
  TESSERA_RETURN_IF_ERROR(ValidateElastic(options.elastic));
  return ValidateExecutor(options);
}

}  // namespace tessera
