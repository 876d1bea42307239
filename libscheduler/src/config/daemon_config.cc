#include "config/daemon_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "api/validation.h"
#include "config/elastic_config.h"
#include "config/yaml_proto.h"
#include "engine/simulated_executor.h"
#include "plugins/plugin_library.h"

namespace tessera {
namespace {

std::string Num(int64_t v) { return std::to_string(v); }

Status Invalid(const std::string& field, const std::string& message) {
  return InvalidFieldError(field, message);
}

Status AtLeast(int64_t value, int64_t min, const std::string& field) {
  if (value >= min) return Status::Ok();
  return Invalid(field, "must be " + (min == 1 ? "> 0" : ">= " + Num(min)) + ", got " + Num(value));
}

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Status ValidateStore(const v1::StoreConfig& s) {
  if (s.path().empty()) return Invalid("store.path", "must not be empty");
  TESSERA_RETURN_IF_ERROR(AtLeast(s.max_batch(), 1, "store.max_batch"));
  TESSERA_RETURN_IF_ERROR(AtLeast(s.max_size_mib(), 0, "store.max_size_mib"));
  TESSERA_RETURN_IF_ERROR(AtLeast(s.busy_timeout_ms(), 0, "store.busy_timeout_ms"));
  const v1::RetentionConfig& r = s.retention();
  TESSERA_RETURN_IF_ERROR(AtLeast(r.finished_job_ttl_s(), 0, "store.retention.finished_job_ttl_s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(r.max_finished_jobs(), 0, "store.retention.max_finished_jobs"));
  TESSERA_RETURN_IF_ERROR(AtLeast(r.sweep_interval_ms(), 1, "store.retention.sweep_interval_ms"));
  if (r.sweep_batch() < 1 || r.sweep_batch() > 100000) {
    return Invalid("store.retention.sweep_batch",
                   "must be in 1..100000, got " + Num(r.sweep_batch()));
  }
  return Status::Ok();
}

Status ValidateEngine(const v1::EngineConfig& e) {
  TESSERA_RETURN_IF_ERROR(AtLeast(e.decision_slice_us(), 1, "engine.decision_slice_us"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.max_attempts(), 1, "engine.max_attempts"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.store_retry_ms(), 1, "engine.store_retry_ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(e.max_reservations(), 0, "engine.max_reservations"));
  return AtLeast(e.default_runtime_estimate_s(), 1, "engine.default_runtime_estimate_s");
}

Status ValidateGpuModelWeights(const v1::FairShareConfig& f) {
  for (const auto& [model, weight] : f.gpu_model_weights()) {
    if (model.empty()) return Invalid("fair_share.gpu_model_weights", "a model name is empty");
    if (!std::isfinite(weight) || weight < 0.001 || weight > 1000) {
      return Invalid("fair_share.gpu_model_weights[" + model + "]",
                     "must be a number in [0.001, 1000], got " + std::to_string(weight));
    }
  }
  return Status::Ok();
}

Status ValidatePlacement(const v1::PlacementConfig& p) {
  for (int i = 0; i < p.expected_tasks_size(); ++i) {
    const v1::ExpectedTaskConfig& t = p.expected_tasks(i);
    const std::string field = "placement.expected_tasks[" + Num(i) + "].";
    TESSERA_RETURN_IF_ERROR(AtLeast(t.cpu_milli(), 0, field + "cpu_milli"));
    TESSERA_RETURN_IF_ERROR(AtLeast(t.memory_mib(), 0, field + "memory_mib"));
    TESSERA_RETURN_IF_ERROR(AtLeast(t.gpu_count(), 0, field + "gpu_count"));
    if (t.gpu_milli() < 1 || t.gpu_milli() > 1000) {
      return Invalid(field + "gpu_milli", "must be in 1..1000, got " + Num(t.gpu_milli()));
    }
    if (!(t.count() > 0)) return Invalid(field + "count", "must be > 0");
  }
  if (!(p.expected_coverage() > 0 && p.expected_coverage() <= 1)) {
    return Invalid("placement.expected_coverage", "must be in (0, 1]");
  }
  return AtLeast(p.max_candidates(), 0, "placement.max_candidates");
}

Status ValidatePreemption(const v1::PreemptionConfig& p) {
  TESSERA_RETURN_IF_ERROR(AtLeast(p.min_runtime_s(), 0, "preemption.min_runtime_s"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.cooldown_s(), 0, "preemption.cooldown_s"));
  return AtLeast(p.max_per_minute(), 0, "preemption.max_per_minute");
}

Status ValidateGpuHealth(const v1::GpuHealthConfig& g) {
  if (g.resume_temperature_c() > g.max_temperature_c()) {
    return Invalid(
        "gpu_health.resume_temperature_c",
        "must be <= gpu_health.max_temperature_c (" + std::to_string(g.max_temperature_c()) + ")");
  }
  return Status::Ok();
}

Status ValidateBackend(const v1::BackendConfig& p, const std::string& field) {
  if (p.plugin().empty()) return Invalid(field + "plugin", "must not be empty");
  TESSERA_RETURN_IF_ERROR(AtLeast(p.call_deadline_ms(), 1, field + "call_deadline_ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.poll_interval_ms(), 1, field + "poll_interval_ms"));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(p.max_restarts_per_minute(), 0, field + "max_restarts_per_minute"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.max_consecutive_errors(), 1, field + "max_consecutive_errors"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.launch_deadline_ms(), 0, field + "launch_deadline_ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.stop_deadline_ms(), 0, field + "stop_deadline_ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.resize_deadline_ms(), 0, field + "resize_deadline_ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.partition_deadline_ms(), 0, field + "partition_deadline_ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.read_deadline_ms(), 0, field + "read_deadline_ms"));
  TESSERA_RETURN_IF_ERROR(AtLeast(p.provision_deadline_ms(), 1, field + "provision_deadline_ms"));
  for (int j = 0; j < p.partitions_size(); ++j) {
    if (p.partitions(j).empty()) {
      return Invalid(field + "partitions[" + Num(j) + "]", "must not be empty");
    }
  }
  return Status::Ok();
}

Status ValidateExecutor(const v1::DaemonConfig& c) {
  if (c.has_simulated_cluster() && !c.simulated_cluster_file().empty()) {
    return Invalid("simulated_cluster_file", "set together with simulated_cluster; keep one");
  }
  if (c.has_executor_plugin()) {
    if (c.backends_size() > 0) {
      return Invalid("executor_plugin", "set together with backends; list it there instead");
    }
    TESSERA_RETURN_IF_ERROR(ValidateBackend(c.executor_plugin(), "executor_plugin."));
    if (!c.executor_plugin().partitions().empty()) {
      return Invalid("executor_plugin.partitions", "needs other backends: list them in backends");
    }
  }
  std::set<std::string> names;
  for (int i = 0; i < c.backends_size(); ++i) {
    const v1::BackendConfig& b = c.backends(i);
    const std::string field = "backends[" + Num(i) + "].";
    TESSERA_RETURN_IF_ERROR(ValidateBackend(b, field));
    if (!b.name().empty() && !names.insert(b.name()).second) {
      return Invalid(field + "name", "'" + b.name() + "' names another backend too");
    }
  }
  if (c.has_executor_plugin() || c.backends_size() > 0) {
    // Backends report their own nodes; a simulated cluster set beside them would be ignored.
    if (c.has_simulated_cluster() || !c.simulated_cluster_file().empty()) {
      return Invalid(c.has_simulated_cluster() ? "simulated_cluster" : "simulated_cluster_file",
                     std::string("not used when ") +
                         (c.has_executor_plugin() ? "executor_plugin" : "backends") +
                         " is set; remove one");
    }
  }
  for (int i = 0; i < c.plugin_dirs_size(); ++i) {
    if (c.plugin_dirs(i).empty()) {
      return Invalid("plugin_dirs[" + Num(i) + "]", "must not be empty");
    }
  }
  return Status::Ok();
}

Status ValidateServer(const v1::ServerConfig& s) {
  TESSERA_RETURN_IF_ERROR(ParseListenAddress(s.listen()).status());
  if (s.tls_cert_file().empty() != s.tls_key_file().empty()) {
    return Invalid(s.tls_cert_file().empty() ? "server.tls_cert_file" : "server.tls_key_file",
                   "must be set together with server.tls_" +
                       std::string(s.tls_cert_file().empty() ? "key_file" : "cert_file"));
  }
  TESSERA_RETURN_IF_ERROR(AtLeast(s.max_request_bytes(), 1, "server.max_request_bytes"));
  TESSERA_RETURN_IF_ERROR(AtLeast(s.max_connections(), 1, "server.max_connections"));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(s.max_long_polls_per_token(), 1, "server.max_long_polls_per_token"));
  TESSERA_RETURN_IF_ERROR(AtLeast(s.max_header_bytes(), 1, "server.max_header_bytes"));
  TESSERA_RETURN_IF_ERROR(AtLeast(s.answer_timeout_ms(), 1, "server.answer_timeout_ms"));
  return AtLeast(s.request_timeout_ms(), 1, "server.request_timeout_ms");
}

Status ValidateAlerts(const v1::AlertsConfig& a) {
  TESSERA_RETURN_IF_ERROR(AtLeast(a.check_interval_ms(), 1, "alerts.check_interval_ms"));
  if (!(a.gpu_temperature_c() > 0)) return Invalid("alerts.gpu_temperature_c", "must be > 0");
  if (!(a.gpu_memory_used_pct() > 0 && a.gpu_memory_used_pct() <= 100)) {
    return Invalid("alerts.gpu_memory_used_pct", "must be in (0, 100]");
  }
  TESSERA_RETURN_IF_ERROR(AtLeast(a.queue_pending_jobs(), 0, "alerts.queue_pending_jobs"));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(a.decision_latency_p99_us(), 0, "alerts.decision_latency_p99_us"));
  return AtLeast(a.commit_latency_p99_us(), 0, "alerts.commit_latency_p99_us");
}

Status ValidateLimits(const v1::TenantLimits& l) {
  if (!(l.submits_per_second() >= 0) || !std::isfinite(l.submits_per_second())) {
    return Invalid("limits.submits_per_second", "must be a finite number >= 0");
  }
  TESSERA_RETURN_IF_ERROR(
      AtLeast(l.max_pending_jobs_per_queue(), 0, "limits.max_pending_jobs_per_queue"));
  return AtLeast(l.submit_burst(), 1, "limits.submit_burst");
}

Status ValidateAuth(const v1::DaemonConfig& c) {
  const v1::AuthConfig& a = c.auth();
  const v1::ServerConfig& server = c.server();
  std::set<std::string> classes;
  for (const auto& pc : c.priority_classes()) classes.insert(pc.name());
  std::set<std::string> hashes;
  for (int i = 0; i < a.tokens_size(); ++i) {
    const v1::TokenConfig& t = a.tokens(i);
    const std::string field = "auth.tokens[" + Num(i) + "].";
    if (!IsHex64(t.sha256())) return Invalid(field + "sha256", "must be 64 hex digits");
    std::string lower = t.sha256();
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (!hashes.insert(lower).second) return Invalid(field + "sha256", "duplicate token hash");
    if (t.admin() == !t.queue_prefix().empty()) {
      return Invalid(field + "queue_prefix", "set exactly one of queue_prefix and admin");
    }
    if (!t.admin()) {
      TESSERA_RETURN_IF_ERROR(ValidateQueueName(t.queue_prefix(), field + "queue_prefix"));
    }
    if (t.admin() && t.priority_classes_size() > 0) {
      return Invalid(field + "priority_classes", "not allowed with admin (it may use every class)");
    }
    for (int k = 0; k < t.priority_classes_size(); ++k) {
      if (!classes.count(t.priority_classes(k))) {
        return Invalid(field + "priority_classes[" + Num(k) + "]",
                       "'" + t.priority_classes(k) + "' is not among priority_classes");
      }
    }
  }
  if (a.tokens_size() == 0) {
    StatusOr<ListenAddress> listen = ParseListenAddress(server.listen());
    if (listen.ok() && !IsLoopbackHost(listen->host)) {
      return Invalid("auth.tokens",
                     "required when server.listen (" + server.listen() + ") is not loopback");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ListenAddress> ParseListenAddress(const std::string& text) {
  const Status bad = Invalid("server.listen", "'" + text + "' is not host:port");
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad;
  ListenAddress address;
  address.host = text.substr(0, colon);
  if (address.host.front() == '[') {
    if (address.host.size() < 3 || address.host.back() != ']') return bad;
    address.host = address.host.substr(1, address.host.size() - 2);
  } else if (address.host.find(':') != std::string::npos) {
    return bad;  // IPv6 needs brackets, or the port is ambiguous.
  }
  const std::string port = text.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return Invalid("server.listen", "'" + text + "': port must be 0..65535");
  }
  address.port = static_cast<uint16_t>(value);
  return address;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  if (host.rfind("127.", 0) != 0) return false;
  for (char c : host) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

namespace {

void ApplyBackendDefaults(v1::BackendConfig* p) {
  const PluginOptions plugin;
  if (!p->has_call_deadline_ms())
    p->set_call_deadline_ms(static_cast<int64_t>(plugin.call_deadline.count()));
  if (!p->has_poll_interval_ms())
    p->set_poll_interval_ms(static_cast<int64_t>(plugin.poll_interval.count()));
  if (!p->has_max_restarts_per_minute())
    p->set_max_restarts_per_minute(static_cast<int32_t>(plugin.max_restarts_per_minute));
  if (!p->has_max_consecutive_errors())
    p->set_max_consecutive_errors(static_cast<int32_t>(plugin.max_consecutive_errors));
  if (!p->has_provision_deadline_ms())
    p->set_provision_deadline_ms(static_cast<int64_t>(plugin.provision_deadline.count()));
}

}  // namespace

void ApplyDaemonConfigDefaults(v1::DaemonConfig* c) {
  const Options defaults;

  // Plugins installed beside libtessera are found by name without configuring anything.
  if (c->plugin_dirs_size() == 0) {
    if (std::string installed = InstalledPluginDir(); !installed.empty()) {
      c->add_plugin_dirs(std::move(installed));
    }
  }

  v1::StoreConfig* store = c->mutable_store();
  if (!store->has_path()) store->set_path(std::string(kDefaultDaemonStorePath));
  if (!store->has_durable()) store->set_durable(defaults.store.durable);
  if (!store->has_max_batch()) store->set_max_batch(static_cast<int32_t>(defaults.store.max_batch));
  if (!store->has_busy_timeout_ms())
    store->set_busy_timeout_ms(static_cast<int64_t>(defaults.store.busy_timeout.count()));
  if (store->check_at_open() == v1::STORE_CHECK_UNSPECIFIED) {
    store->set_check_at_open(v1::STORE_CHECK_QUICK);
  }
  v1::RetentionConfig* retention = store->mutable_retention();
  if (!retention->has_sweep_interval_ms())
    retention->set_sweep_interval_ms(
        static_cast<int64_t>(defaults.retention.sweep_interval.count()));
  if (!retention->has_sweep_batch()) retention->set_sweep_batch(defaults.retention.sweep_batch);

  v1::EngineConfig* engine = c->mutable_engine();
  if (!engine->has_decision_slice_us())
    engine->set_decision_slice_us(static_cast<int64_t>(defaults.engine.decision_slice.count()));
  if (!engine->has_max_attempts())
    engine->set_max_attempts(static_cast<int32_t>(defaults.engine.max_attempts));
  if (!engine->has_store_retry_ms())
    engine->set_store_retry_ms(static_cast<int64_t>(defaults.engine.store_retry.count()));
  if (!engine->has_max_reservations())
    engine->set_max_reservations(static_cast<int32_t>(defaults.engine.max_reservations));
  if (!engine->has_default_runtime_estimate_s())
    engine->set_default_runtime_estimate_s(
        static_cast<int64_t>(defaults.engine.default_runtime_estimate.count()));

  v1::FairShareConfig* fair = c->mutable_fair_share();
  if (!fair->has_usage_refresh_ms())
    fair->set_usage_refresh_ms(static_cast<int64_t>(defaults.fair_share.usage_refresh.count()));
  if (!fair->has_builtin_gpu_model_weights()) fair->set_builtin_gpu_model_weights(true);

  v1::PlacementConfig* placement = c->mutable_placement();
  if (placement->strategy() == v1::PLACEMENT_STRATEGY_UNSPECIFIED) {
    placement->set_strategy(v1::FRAGMENTATION_AWARE);
  }
  for (v1::ExpectedTaskConfig& t : *placement->mutable_expected_tasks()) {
    if (!t.has_gpu_milli()) t.set_gpu_milli(int32_t{1000});
    if (!t.has_count()) t.set_count(1.0);
  }
  if (!placement->has_expected_coverage())
    placement->set_expected_coverage(defaults.placement.expected_coverage);
  if (!placement->has_learn_workload())
    placement->set_learn_workload(defaults.placement.learn_workload);
  if (!placement->has_max_candidates())
    placement->set_max_candidates(static_cast<int32_t>(defaults.placement.max_candidates));

  v1::PreemptionConfig* preemption = c->mutable_preemption();
  if (!preemption->has_enabled()) preemption->set_enabled(defaults.preemption.enabled);
  if (!preemption->has_reclaim()) preemption->set_reclaim(defaults.preemption.reclaim);
  if (!preemption->has_min_runtime_s())
    preemption->set_min_runtime_s(static_cast<int64_t>(defaults.preemption.min_runtime.count()));
  if (!preemption->has_cooldown_s())
    preemption->set_cooldown_s(static_cast<int64_t>(defaults.preemption.cooldown.count()));
  if (!preemption->has_max_per_minute())
    preemption->set_max_per_minute(static_cast<int32_t>(defaults.preemption.max_per_minute));

  v1::GpuHealthConfig* health = c->mutable_gpu_health();
  if (!health->has_max_temperature_c())
    health->set_max_temperature_c(defaults.gpu_health.max_temperature_c);
  if (!health->has_resume_temperature_c())
    health->set_resume_temperature_c(defaults.gpu_health.resume_temperature_c);
  if (health->fatal_xids_size() == 0) {
    for (int xid : defaults.gpu_health.fatal_xids) health->add_fatal_xids(xid);
  }
  if (!health->has_requeue_on_failure())
    health->set_requeue_on_failure(defaults.gpu_health.requeue_on_failure);

  ApplyElasticConfigDefaults(c->mutable_elastic());

  if (c->priority_classes_size() == 0) {
    for (const PriorityClass& p : defaults.priority_classes) {
      v1::PriorityClassConfig* added = c->add_priority_classes();
      added->set_name(p.name);
      added->set_value(p.value);
      added->set_preemptible(p.preemptible);
    }
  }
  for (v1::PriorityClassConfig& p : *c->mutable_priority_classes()) {
    if (!p.has_preemptible()) p.set_preemptible(true);
  }
  if (!c->has_default_priority_class())
    c->set_default_priority_class(defaults.default_priority_class);
  if (!c->has_default_queue()) c->set_default_queue(defaults.default_queue);

  if (!c->has_simulated_cluster() && c->simulated_cluster_file().empty() &&
      !c->has_executor_plugin() && c->backends_size() == 0) {
    *c->mutable_simulated_cluster() = DefaultSimulatedCluster();
  }
  if (c->has_executor_plugin()) ApplyBackendDefaults(c->mutable_executor_plugin());
  for (v1::BackendConfig& b : *c->mutable_backends()) ApplyBackendDefaults(&b);

  v1::ServerConfig* server = c->mutable_server();
  if (!server->has_listen()) server->set_listen(std::string(kDefaultListenAddress));
  if (!server->has_max_request_bytes()) server->set_max_request_bytes(kDefaultMaxRequestBytes);
  if (!server->has_request_timeout_ms()) server->set_request_timeout_ms(kDefaultRequestTimeoutMs);
  if (!server->has_max_connections()) server->set_max_connections(kDefaultMaxConnections);
  if (!server->has_max_long_polls_per_token()) {
    server->set_max_long_polls_per_token(kDefaultMaxLongPollsPerToken);
  }
  if (!server->has_max_header_bytes()) server->set_max_header_bytes(kDefaultMaxHeaderBytes);
  if (!server->has_answer_timeout_ms()) server->set_answer_timeout_ms(kDefaultAnswerTimeoutMs);
  c->mutable_auth();

  v1::AlertsConfig* alerts = c->mutable_alerts();
  if (!alerts->has_check_interval_ms()) alerts->set_check_interval_ms(10000);
  if (!alerts->has_gpu_temperature_c()) {
    alerts->set_gpu_temperature_c(c->gpu_health().max_temperature_c());
  }
  if (!alerts->has_gpu_memory_used_pct()) alerts->set_gpu_memory_used_pct(95);

  const JobSizeLimits sizes;
  v1::TenantLimits* limits = c->mutable_limits();
  if (!limits->has_max_command_bytes()) limits->set_max_command_bytes(sizes.max_command_bytes);
  if (!limits->has_max_env_bytes()) limits->set_max_env_bytes(sizes.max_env_bytes);
  if (!limits->has_max_spec_bytes()) limits->set_max_spec_bytes(sizes.max_spec_bytes);
  if (!limits->has_submit_burst()) {
    limits->set_submit_burst(
        static_cast<int32_t>(std::clamp(std::ceil(limits->submits_per_second()), 1.0, 1e9)));
  }
}

namespace {

PlacementOptions::Strategy ToStrategy(v1::PlacementStrategy s) {
  switch (s) {
    case v1::SPREAD:
      return PlacementOptions::Strategy::kSpread;
    case v1::BEST_FIT:
      return PlacementOptions::Strategy::kBestFit;
    case v1::FGD:
      return PlacementOptions::Strategy::kFgd;
    case v1::BINPACK:
      return PlacementOptions::Strategy::kBinpack;
    default:
      return PlacementOptions::Strategy::kFragmentationAware;
  }
}

// `c` is complete (ApplyDaemonConfigDefaults).
BackendOptions BackendOptionsOf(const v1::BackendConfig& p) {
  BackendOptions b;
  b.name = p.name();
  b.plugin.plugin = p.plugin();
  b.plugin.config = p.config();
  b.plugin.call_deadline = std::chrono::milliseconds(p.call_deadline_ms());
  b.plugin.poll_interval = std::chrono::milliseconds(p.poll_interval_ms());
  b.plugin.isolate = p.isolate();
  b.plugin.host_executable = p.host_executable();
  b.plugin.max_restarts_per_minute = p.max_restarts_per_minute();
  b.plugin.max_consecutive_errors = p.max_consecutive_errors();
  b.plugin.launch_deadline = std::chrono::milliseconds(p.launch_deadline_ms());
  b.plugin.stop_deadline = std::chrono::milliseconds(p.stop_deadline_ms());
  b.plugin.resize_deadline = std::chrono::milliseconds(p.resize_deadline_ms());
  b.plugin.partition_deadline = std::chrono::milliseconds(p.partition_deadline_ms());
  b.plugin.read_deadline = std::chrono::milliseconds(p.read_deadline_ms());
  b.plugin.provision_deadline = std::chrono::milliseconds(p.provision_deadline_ms());
  b.partitions.assign(p.partitions().begin(), p.partitions().end());
  return b;
}

Options MapOptions(const v1::DaemonConfig& c) {
  Options o;
  o.job_size_limits.max_command_bytes = c.limits().max_command_bytes();
  o.job_size_limits.max_env_bytes = c.limits().max_env_bytes();
  o.job_size_limits.max_spec_bytes = c.limits().max_spec_bytes();
  o.max_pending_jobs_per_queue = c.limits().max_pending_jobs_per_queue();

  o.store.path = c.store().path();
  o.store.durable = c.store().durable();
  o.store.max_batch = c.store().max_batch();
  o.store.max_size_mib = c.store().max_size_mib();
  o.store.busy_timeout = std::chrono::milliseconds(c.store().busy_timeout_ms());
  const v1::RetentionConfig& retention = c.store().retention();
  o.retention.finished_job_ttl = std::chrono::seconds(retention.finished_job_ttl_s());
  o.retention.max_finished_jobs = retention.max_finished_jobs();
  o.retention.sweep_interval = std::chrono::milliseconds(retention.sweep_interval_ms());
  o.retention.sweep_batch = retention.sweep_batch();
  o.store.check_at_open = c.store().check_at_open() == v1::STORE_CHECK_NONE   ? StoreCheck::kNone
                          : c.store().check_at_open() == v1::STORE_CHECK_FULL ? StoreCheck::kFull
                                                                              : StoreCheck::kQuick;

  o.engine.decision_slice = std::chrono::microseconds(c.engine().decision_slice_us());
  o.engine.start_paused = c.engine().start_paused();
  o.engine.max_attempts = c.engine().max_attempts();
  o.engine.store_retry = std::chrono::milliseconds(c.engine().store_retry_ms());
  o.engine.max_reservations = c.engine().max_reservations();
  o.engine.default_runtime_estimate = std::chrono::seconds(c.engine().default_runtime_estimate_s());

  o.fair_share.usage_half_life = std::chrono::seconds(c.fair_share().usage_half_life_s());
  o.fair_share.usage_refresh = std::chrono::milliseconds(c.fair_share().usage_refresh_ms());
  if (!c.fair_share().builtin_gpu_model_weights()) o.fair_share.gpu_model_weights.clear();
  for (const auto& [model, weight] : c.fair_share().gpu_model_weights()) {
    o.fair_share.gpu_model_weights[model] = weight;
  }

  o.placement.strategy = ToStrategy(c.placement().strategy());
  for (const v1::ExpectedTaskConfig& t : c.placement().expected_tasks()) {
    ExpectedTask task;
    task.cpu_milli = t.cpu_milli();
    task.memory_mib = t.memory_mib();
    task.gpu_count = t.gpu_count();
    task.gpu_milli = t.gpu_milli();
    task.gpu_models.assign(t.gpu_models().begin(), t.gpu_models().end());
    task.count = t.count();
    o.placement.expected_tasks.push_back(std::move(task));
  }
  o.placement.expected_coverage = c.placement().expected_coverage();
  o.placement.learn_workload = c.placement().learn_workload();
  o.placement.max_candidates = c.placement().max_candidates();

  o.preemption.enabled = c.preemption().enabled();
  o.preemption.reclaim = c.preemption().reclaim();
  o.preemption.min_runtime = std::chrono::seconds(c.preemption().min_runtime_s());
  o.preemption.cooldown = std::chrono::seconds(c.preemption().cooldown_s());
  o.preemption.max_per_minute = c.preemption().max_per_minute();

  o.gpu_health.max_temperature_c = c.gpu_health().max_temperature_c();
  o.gpu_health.resume_temperature_c = c.gpu_health().resume_temperature_c();
  o.gpu_health.fatal_xids.assign(c.gpu_health().fatal_xids().begin(),
                                 c.gpu_health().fatal_xids().end());
  o.gpu_health.requeue_on_failure = c.gpu_health().requeue_on_failure();
  o.elastic = ElasticOptionsOf(c.elastic());

  o.priority_classes.clear();
  for (const v1::PriorityClassConfig& p : c.priority_classes()) {
    o.priority_classes.push_back({p.name(), p.value(), p.preemptible()});
  }
  o.default_priority_class = c.default_priority_class();
  o.default_queue = c.default_queue();

  if (c.has_simulated_cluster()) o.simulated_cluster = c.simulated_cluster();
  o.simulated_cluster_file = c.simulated_cluster_file();
  if (c.has_executor_plugin()) {
    BackendOptions only = BackendOptionsOf(c.executor_plugin());
    if (only.name.empty()) {
      o.executor_plugin = std::move(only.plugin);
    } else {
      o.backends.push_back(std::move(only));
    }
  }
  for (const v1::BackendConfig& b : c.backends()) o.backends.push_back(BackendOptionsOf(b));
  o.plugin_dirs.assign(c.plugin_dirs().begin(), c.plugin_dirs().end());
  return o;
}

}  // namespace

Status ValidateDaemonConfig(const v1::DaemonConfig& config) {
  v1::DaemonConfig c = config;
  ApplyDaemonConfigDefaults(&c);
  TESSERA_RETURN_IF_ERROR(ValidateStore(c.store()));
  TESSERA_RETURN_IF_ERROR(ValidateEngine(c.engine()));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(c.fair_share().usage_half_life_s(), 0, "fair_share.usage_half_life_s"));
  TESSERA_RETURN_IF_ERROR(
      AtLeast(c.fair_share().usage_refresh_ms(), 1, "fair_share.usage_refresh_ms"));
  TESSERA_RETURN_IF_ERROR(ValidateGpuModelWeights(c.fair_share()));
  TESSERA_RETURN_IF_ERROR(ValidatePlacement(c.placement()));
  TESSERA_RETURN_IF_ERROR(ValidatePreemption(c.preemption()));
  TESSERA_RETURN_IF_ERROR(ValidateGpuHealth(c.gpu_health()));
  TESSERA_RETURN_IF_ERROR(ValidateElasticConfig(c.elastic()));
  TESSERA_RETURN_IF_ERROR(ValidateExecutor(c));
  TESSERA_RETURN_IF_ERROR(ValidateServer(c.server()));
  TESSERA_RETURN_IF_ERROR(ValidateAuth(c));
  TESSERA_RETURN_IF_ERROR(ValidateLimits(c.limits()));
  TESSERA_RETURN_IF_ERROR(ValidateAlerts(c.alerts()));
  TESSERA_RETURN_IF_ERROR(ValidateQueueDeclaration(c.queues()));
  if (c.has_simulated_cluster()) {
    TESSERA_RETURN_IF_ERROR(
        ExpandSimulatedCluster(c.simulated_cluster()).status().WithContext("simulated_cluster"));
  }
  // The library's own checks name priority_classes, default_priority_class and default_queue.
  return ValidateOptions(MapOptions(c));
}

StatusOr<v1::DaemonConfig> LoadDaemonConfig(const std::string& path) {
  v1::DaemonConfig config;
  if (!path.empty()) TESSERA_RETURN_IF_ERROR(YamlFileToMessage(path, &config));
  ApplyDaemonConfigDefaults(&config);
  TESSERA_RETURN_IF_ERROR(ValidateDaemonConfig(config));
  return config;
}

StatusOr<Options> ToOptions(const v1::DaemonConfig& config) {
  v1::DaemonConfig c = config;
  ApplyDaemonConfigDefaults(&c);
  TESSERA_RETURN_IF_ERROR(ValidateDaemonConfig(c));
  return MapOptions(c);
}

}  // namespace tessera
