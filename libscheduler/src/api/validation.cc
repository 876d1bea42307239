#include "api/validation.h"

#include <cmath>
#include <set>
#include <utility>

#include "api/options_validation.h"
#include "model/elastic_sizes.h"
#include "model/node_labels.h"
#include "model/queue_path.h"
#include "model/resource_vector.h"
#include "tessera/gpu/mig_profiles.h"
#include "tessera/gpu/vgpu_types.h"

namespace tessera {
namespace {

std::string Num(int64_t v) { return std::to_string(v); }

Status Invalid(const std::string& field, const std::string& message) {
  return InvalidFieldError(field, message);
}

Status Between(int64_t value, int64_t low, int64_t high, const std::string& field) {
  if (value >= low && value <= high) return Status::Ok();
  return Invalid(field,
                 "must be between " + Num(low) + " and " + Num(high) + ", got " + Num(value));
}

// The bytes argv (or envp) would take: each string and its terminating NUL.
int64_t ArgvBytes(int64_t total, size_t length) { return total + static_cast<int64_t>(length) + 1; }

Status ValidateSize(const v1::JobSpec& spec, const JobSizeLimits& limits) {
  int64_t command = 0;
  for (const std::string& arg : spec.command()) command = ArgvBytes(command, arg.size());
  if (command > limits.max_command_bytes) {
    return Invalid("command", "at most " + Num(limits.max_command_bytes) + " bytes, got " +
                                  Num(command) + " (limits.max_command_bytes)");
  }
  int64_t env = 0;
  for (const auto& [key, value] : spec.env()) env = ArgvBytes(env, key.size() + 1 + value.size());
  if (env > limits.max_env_bytes) {
    return Invalid("env", "at most " + Num(limits.max_env_bytes) + " bytes, got " + Num(env) +
                              " (limits.max_env_bytes)");
  }
  const int64_t whole = static_cast<int64_t>(spec.ByteSizeLong());
  if (whole > limits.max_spec_bytes) {
    return Invalid("spec", "at most " + Num(limits.max_spec_bytes) + " bytes, got " + Num(whole) +
                               " (limits.max_spec_bytes)");
  }
  return Status::Ok();
}

Status ValidateResources(const v1::Resources& r, const std::string& field) {
  const ResourceVector v = ResourceVector::FromProto(r);
  for (int i = 0; i < kNumResources; ++i) {
    if (v[i] < 0) return Invalid(field + "." + ResourceName(i), "must be >= 0, got " + Num(v[i]));
  }
  return Status::Ok();
}

Status ValidateLimits(const v1::ResourceLimits& l, const std::string& field) {
  const ResourceVector v = ResourceVector::FromLimits(l);
  for (int i = 0; i < kNumResources; ++i) {
    if (v[i] != ResourceVector::kUnlimited && v[i] < 0) {
      return Invalid(field + "." + ResourceName(i), "must be >= 0, got " + Num(v[i]));
    }
  }
  return Status::Ok();
}

Status ValidateGpuForm(const v1::TaskResources& t);

// QueueSpec.gpu_models: one entry per model, amounts >= 0, a cap not below the guarantee, and no
// model guaranteed more than the cap on any model allows.
Status ValidateGpuModelQuotas(const v1::QueueSpec& spec) {
  std::set<std::string> seen;
  for (int i = 0; i < spec.gpu_models_size(); ++i) {
    const v1::GpuModelQuota& m = spec.gpu_models(i);
    const std::string field = "gpu_models[" + Num(i) + "].";
    if (m.model().empty()) return Invalid(field + "model", "must not be empty");
    if (!seen.insert(m.model()).second) {
      return Invalid(field + "model", "'" + m.model() + "' is listed twice");
    }
    if (m.guarantee_gpu_milli() < 0) {
      return Invalid(field + "guarantee_gpu_milli",
                     "must be >= 0, got " + Num(m.guarantee_gpu_milli()));
    }
    if (m.has_borrowing_limit_gpu_milli() && m.borrowing_limit_gpu_milli() < 0) {
      return Invalid(field + "borrowing_limit_gpu_milli",
                     "must be >= 0, got " + Num(m.borrowing_limit_gpu_milli()));
    }
    if (m.has_cap_gpu_milli() && m.cap_gpu_milli() < 0) {
      return Invalid(field + "cap_gpu_milli", "must be >= 0, got " + Num(m.cap_gpu_milli()));
    }
    if (m.has_cap_gpu_milli() && m.cap_gpu_milli() < m.guarantee_gpu_milli()) {
      return Invalid(field + "cap_gpu_milli", Num(m.cap_gpu_milli()) + " is below " + field +
                                                  "guarantee_gpu_milli (" +
                                                  Num(m.guarantee_gpu_milli()) + ")");
    }
    if (spec.cap().has_gpu_milli() && m.guarantee_gpu_milli() > spec.cap().gpu_milli()) {
      return Invalid(field + "guarantee_gpu_milli", Num(m.guarantee_gpu_milli()) +
                                                        " is above cap.gpu_milli (" +
                                                        Num(spec.cap().gpu_milli()) + ")");
    }
  }
  return Status::Ok();
}

Status ValidateTask(const v1::JobSpec& spec) {
  const v1::TaskResources& t = spec.task();
  TESSERA_RETURN_IF_ERROR(Between(t.cpu_milli(), 1, kMaxCpuMilli, "task.cpu_milli"));
  TESSERA_RETURN_IF_ERROR(Between(t.memory_mib(), 1, kMaxMemoryMib, "task.memory_mib"));
  if (t.gpu_count() < 0 || t.gpu_count() > kMaxGpusPerTask) {
    return Invalid("task.gpu_count",
                   "must be between 0 and " + Num(kMaxGpusPerTask) + ", got " + Num(t.gpu_count()));
  }
  if (t.gpu_milli() < 0 || t.gpu_milli() > 1000) {
    return Invalid("task.gpu_milli", "must be between 0 and 1000, got " + Num(t.gpu_milli()));
  }
  if (t.gpu_count() == 0) {
    if (t.gpu_milli() != 0) return Invalid("task.gpu_milli", "set, but task.gpu_count is 0");
    if (t.gpu_memory_mib() != 0) {
      return Invalid("task.gpu_memory_mib", "set, but task.gpu_count is 0");
    }
    if (t.gpu_models_size() > 0) return Invalid("task.gpu_models", "set, but task.gpu_count is 0");
    if (spec.topology().task_gpus_same_nvlink()) {
      return Invalid("topology.task_gpus_same_nvlink", "needs task.gpu_count >= 1");
    }
  }
  if (t.gpu_milli() > 0 && t.gpu_milli() < 1000 && t.gpu_count() != 1) {
    return Invalid(
        "task.gpu_milli",
        "a fraction of a GPU (1..999) needs task.gpu_count == 1, got " + Num(t.gpu_count()));
  }
  TESSERA_RETURN_IF_ERROR(Between(t.gpu_memory_mib(), 0, kMaxMemoryMib, "task.gpu_memory_mib"));
  for (int i = 0; i < t.gpu_models_size(); ++i) {
    if (t.gpu_models(i).empty()) {
      return Invalid("task.gpu_models[" + Num(i) + "]", "must not be empty");
    }
  }
  return ValidateGpuForm(t);
}

// The form of a share: a MIG profile, a vGPU type, or a sharing mode by name.
Status ValidateGpuForm(const v1::TaskResources& t) {
  if (!v1::GpuForm_IsValid(t.gpu_form())) {
    return Invalid("task.gpu_form", "unknown form " + Num(t.gpu_form()));
  }
  const bool share_form = t.gpu_form() != v1::GPU_FORM_ANY && t.gpu_form() != v1::GPU_FORM_WHOLE;
  if ((share_form || !t.mig_profile().empty() || !t.vgpu_type().empty()) && t.gpu_count() != 1) {
    return Invalid(!t.mig_profile().empty() ? "task.mig_profile"
                   : !t.vgpu_type().empty() ? "task.vgpu_type"
                                            : "task.gpu_form",
                   "a share of one GPU needs task.gpu_count == 1, got " + Num(t.gpu_count()));
  }
  if (t.gpu_form() == v1::GPU_FORM_WHOLE && t.gpu_milli() != 0 && t.gpu_milli() != 1000) {
    return Invalid("task.gpu_milli",
                   "GPU_FORM_WHOLE takes whole GPUs, got a fraction of " + Num(t.gpu_milli()));
  }
  if (t.gpu_form() == v1::GPU_FORM_MPS && t.gpu_milli() == 0) {
    return Invalid("task.gpu_milli", "an MPS share needs its thread percentage (1..1000)");
  }
  if (!t.mig_profile().empty()) {
    if (!t.vgpu_type().empty())
      return Invalid("task.vgpu_type", "set together with task.mig_profile");
    if (t.gpu_form() != v1::GPU_FORM_ANY && t.gpu_form() != v1::GPU_FORM_MIG) {
      return Invalid("task.mig_profile", "set, but task.gpu_form is not GPU_FORM_MIG");
    }
    if (!mig::IsKnownProfileName(t.mig_profile())) {
      return Invalid("task.mig_profile", "'" + t.mig_profile() +
                                             "' is not a MIG profile of A100-40GB, A100-80GB, "
                                             "H100-80GB or H200-141GB (e.g. 3g.40gb)");
    }
    if (t.gpu_milli() != 0 || t.gpu_memory_mib() != 0) {
      return Invalid(t.gpu_milli() != 0 ? "task.gpu_milli" : "task.gpu_memory_mib",
                     "set, but task.mig_profile already names the share");
    }
  }
  if (!t.vgpu_type().empty()) {
    if (t.gpu_form() != v1::GPU_FORM_ANY && t.gpu_form() != v1::GPU_FORM_VGPU) {
      return Invalid("task.vgpu_type", "set, but task.gpu_form is not GPU_FORM_VGPU");
    }
    if (!vgpu::ParseType(t.vgpu_type())) {
      return Invalid("task.vgpu_type",
                     "'" + t.vgpu_type() + "' is not a vGPU type name like A100-4C");
    }
    if (t.gpu_milli() != 0 || t.gpu_memory_mib() != 0) {
      return Invalid(t.gpu_milli() != 0 ? "task.gpu_milli" : "task.gpu_memory_mib",
                     "set, but task.vgpu_type already names the share");
    }
  }
  return Status::Ok();
}

Status ValidateCounts(const v1::JobSpec& spec) {
  if (spec.tasks() < 0 || spec.tasks() > kMaxTasksPerJob) {
    return Invalid("tasks",
                   "must be between 0 and " + Num(kMaxTasksPerJob) + ", got " + Num(spec.tasks()));
  }
  if (spec.has_elastic()) {
    const v1::ElasticBounds& e = spec.elastic();
    if (e.min_tasks() < 1) {
      return Invalid("elastic.min_tasks", "must be >= 1, got " + Num(e.min_tasks()));
    }
    if (e.max_tasks() < e.min_tasks() || e.max_tasks() > kMaxTasksPerJob) {
      return Invalid("elastic.max_tasks", "must be between elastic.min_tasks (" +
                                              Num(e.min_tasks()) + ") and " + Num(kMaxTasksPerJob) +
                                              ", got " + Num(e.max_tasks()));
    }
    if (Status sizes = ElasticSizes::Check(e); !sizes.ok()) return sizes;
    if (spec.tasks() != 0) {
      return Invalid("tasks", "leave unset for an elastic job; elastic.max_tasks sets the count");
    }
    if (spec.gang_min() != 0) {
      return Invalid("gang_min", "leave unset for an elastic job; elastic.min_tasks starts it");
    }
    return Status::Ok();
  }
  const int tasks = spec.tasks() == 0 ? 1 : spec.tasks();
  if (spec.gang_min() < 0 || spec.gang_min() > tasks) {
    return Invalid("gang_min",
                   "must be between 0 and tasks (" + Num(tasks) + "), got " + Num(spec.gang_min()));
  }
  return Status::Ok();
}

Status LabelKey(const std::string& key, const std::string& field) {
  if (key.empty() || key.size() > 253) return Invalid(field, "must be 1..253 bytes");
  return Status::Ok();
}

Status LabelValue(const std::string& value, const std::string& field) {
  if (value.size() > 1024) return Invalid(field, "at most 1024 bytes");
  return Status::Ok();
}

// node_selector, node_requirements and tolerations, as Kubernetes checks a pod's nodeSelector,
// required node affinity and tolerations.
Status ValidatePlacementTerms(const v1::JobSpec& spec) {
  for (const auto& [key, value] : spec.node_selector()) {
    TESSERA_RETURN_IF_ERROR(LabelKey(key, "node_selector"));
    TESSERA_RETURN_IF_ERROR(LabelValue(value, "node_selector[" + key + "]"));
  }
  using R = v1::NodeSelectorRequirement;
  for (int i = 0; i < spec.node_requirements_size(); ++i) {
    const R& r = spec.node_requirements(i);
    const std::string field = "node_requirements[" + Num(i) + "]";
    TESSERA_RETURN_IF_ERROR(LabelKey(r.key(), field + ".key"));
    for (int j = 0; j < r.values_size(); ++j) {
      TESSERA_RETURN_IF_ERROR(LabelValue(r.values(j), field + ".values[" + Num(j) + "]"));
    }
    switch (r.operator_()) {
      case R::IN:
      case R::NOT_IN:
        if (r.values_size() == 0) return Invalid(field + ".values", "IN and NOT_IN need values");
        break;
      case R::EXISTS:
      case R::DOES_NOT_EXIST:
        if (r.values_size() != 0) {
          return Invalid(field + ".values", "EXISTS and DOES_NOT_EXIST take no values");
        }
        break;
      case R::GT:
      case R::LT:
        if (r.values_size() != 1 || !ParseLabelNumber(r.values(0))) {
          return Invalid(field + ".values", "GT and LT take one integer value");
        }
        break;
      default:
        return Invalid(
            field + ".operator",
            "must be IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT or LT, got " + Num(r.operator_()));
    }
  }
  for (int i = 0; i < spec.tolerations_size(); ++i) {
    const v1::Toleration& t = spec.tolerations(i);
    const std::string field = "tolerations[" + Num(i) + "]";
    if (!v1::Toleration::Operator_IsValid(t.operator_())) {
      return Invalid(field + ".operator", "must be EQUAL or EXISTS, got " + Num(t.operator_()));
    }
    if (!v1::TaintEffect_IsValid(t.effect())) {
      return Invalid(field + ".effect", "unknown effect " + Num(t.effect()));
    }
    if (t.operator_() == v1::Toleration::EQUAL) {
      TESSERA_RETURN_IF_ERROR(LabelKey(t.key(), field + ".key"));
      TESSERA_RETURN_IF_ERROR(LabelValue(t.value(), field + ".value"));
    } else {
      if (t.key().size() > 253) return Invalid(field + ".key", "at most 253 bytes");
      if (!t.value().empty()) return Invalid(field + ".value", "EXISTS takes no value");
    }
  }
  return Status::Ok();
}

// Each limit set must be an amount of money: finite and >= 0 (0 is no burst at all).
Status ValidateBurstBudget(const v1::BurstBudget& budget) {
  struct Limit {
    const char* name;
    bool set;
    double amount;
  };
  for (const Limit& limit : {Limit{"per_hour", budget.has_per_hour(), budget.per_hour()},
                             Limit{"per_day", budget.has_per_day(), budget.per_day()},
                             Limit{"per_month", budget.has_per_month(), budget.per_month()}}) {
    if (limit.set && !(std::isfinite(limit.amount) && limit.amount >= 0)) {
      return Invalid(std::string("burst_budget.") + limit.name,
                     "must be a finite number >= 0, got " + std::to_string(limit.amount));
    }
  }
  return Status::Ok();
}

// A year of a 100,000-GPU cluster in GPU-seconds: a limit beyond says the unit was mistaken,
// and the microseconds it is kept in stay far from overflow.
constexpr int64_t kMaxServiceBandLimitGpuS = int64_t{100'000} * 365 * 24 * 3600;

Status ValidateAttainedServiceOrder(const v1::QueueSpec& spec) {
  if (!spec.has_attained_service()) return Status::Ok();
  const v1::AttainedServiceOrder& order = spec.attained_service();
  int64_t previous = 0;
  for (int i = 0; i < order.band_limits_gpu_s_size(); ++i) {
    const std::string field = "attained_service.band_limits_gpu_s[" + std::to_string(i) + "]";
    const int64_t limit = order.band_limits_gpu_s(i);
    TESSERA_RETURN_IF_ERROR(Between(limit, 1, kMaxServiceBandLimitGpuS, field));
    if (limit <= previous) {
      return Invalid(field, "limits must ascend: " + Num(limit) + " is not above " + Num(previous));
    }
    previous = limit;
  }
  const double factor = order.starvation_factor();
  if (!std::isfinite(factor) || factor < 0 || factor > 1e6) {
    return Invalid("attained_service.starvation_factor",
                   "must be a number in [0, 1000000], got " + std::to_string(factor));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateJobSpec(const v1::JobSpec& spec, const JobSizeLimits& limits) {
  TESSERA_RETURN_IF_ERROR(ValidateSize(spec, limits));
  if (spec.name().size() > 253) {
    return Invalid("name",
                   "at most 253 bytes, got " + Num(static_cast<int64_t>(spec.name().size())));
  }
  TESSERA_RETURN_IF_ERROR(ValidateQueueName(spec.queue(), "queue"));
  if (!spec.has_task()) return Invalid("task", "required (cpu_milli and memory_mib at least)");
  TESSERA_RETURN_IF_ERROR(ValidateTask(spec));
  TESSERA_RETURN_IF_ERROR(ValidateCounts(spec));
  TESSERA_RETURN_IF_ERROR(Between(spec.time_limit_s(), 0, kMaxTimeLimitSeconds, "time_limit_s"));
  if (spec.checkpoint_grace_s() < 0 || spec.checkpoint_grace_s() > kMaxGraceSeconds) {
    return Invalid("checkpoint_grace_s", "must be between 0 and " + Num(kMaxGraceSeconds) +
                                             ", got " + Num(spec.checkpoint_grace_s()));
  }
  for (const auto& [key, value] : spec.labels()) {
    if (key.empty() || key.size() > 253) return Invalid("labels", "keys must be 1..253 bytes");
    if (value.size() > 1024) return Invalid("labels[" + key + "]", "at most 1024 bytes");
  }
  for (const auto& [key, value] : spec.env()) {
    if (key.empty() || key.find('=') != std::string::npos) {
      return Invalid("env", "'" + key + "' is not a valid variable name");
    }
  }
  TESSERA_RETURN_IF_ERROR(ValidatePlacementTerms(spec));
  const v1::SimulationHints& sim = spec.simulation();
  TESSERA_RETURN_IF_ERROR(Between(sim.duration_ms(), 0, kMaxSimulatedMs, "simulation.duration_ms"));
  TESSERA_RETURN_IF_ERROR(Between(sim.exit_code(), 0, kMaxExitCode, "simulation.exit_code"));
  if (sim.has_gpu_utilization_pct() &&
      !(sim.gpu_utilization_pct() >= 0 && sim.gpu_utilization_pct() <= 100)) {
    return Invalid("simulation.gpu_utilization_pct", "must be a number in [0, 100], got " +
                                                         std::to_string(sim.gpu_utilization_pct()));
  }
  return Between(sim.checkpoint_every_ms(), 0, kMaxSimulatedMs, "simulation.checkpoint_every_ms");
}

Status ValidateQueueSpec(const v1::QueueSpec& spec) {
  TESSERA_RETURN_IF_ERROR(ValidateQueueName(spec.name(), "name"));
  if (!std::isfinite(spec.weight()) || spec.weight() < 0) {
    return Invalid("weight", "must be a finite number >= 0, got " + std::to_string(spec.weight()));
  }
  TESSERA_RETURN_IF_ERROR(ValidateResources(spec.guarantee(), "guarantee"));
  TESSERA_RETURN_IF_ERROR(ValidateLimits(spec.borrowing_limit(), "borrowing_limit"));
  TESSERA_RETURN_IF_ERROR(ValidateLimits(spec.cap(), "cap"));
  if (spec.max_pending_jobs() < 0) {
    return Invalid("max_pending_jobs", "must be >= 0, got " + Num(spec.max_pending_jobs()));
  }
  if (spec.has_idle_gpus()) {
    const v1::IdleGpuPolicy& idle = spec.idle_gpus();
    if (!std::isfinite(idle.below_pct()) || idle.below_pct() < 0 || idle.below_pct() > 100) {
      return Invalid("idle_gpus.below_pct",
                     "must be a number in [0, 100], got " + std::to_string(idle.below_pct()));
    }
    // A window is needed once a threshold is set (0 would flag every job at its first reading).
    TESSERA_RETURN_IF_ERROR(Between(idle.idle_for_s(), idle.below_pct() > 0 ? 1 : 0,
                                    kMaxIdleGpuSeconds, "idle_gpus.idle_for_s"));
    TESSERA_RETURN_IF_ERROR(
        Between(idle.warning_s(), 0, kMaxIdleGpuSeconds, "idle_gpus.warning_s"));
  }
  TESSERA_RETURN_IF_ERROR(ValidateGpuModelQuotas(spec));
  TESSERA_RETURN_IF_ERROR(ValidateAttainedServiceOrder(spec));
  TESSERA_RETURN_IF_ERROR(ValidateBurstBudget(spec.burst_budget()));
  const ResourceVector guarantee = ResourceVector::FromProto(spec.guarantee());
  const ResourceVector cap = ResourceVector::FromLimits(spec.cap());
  for (int r = 0; r < kNumResources; ++r) {
    if (cap[r] != ResourceVector::kUnlimited && cap[r] < guarantee[r]) {
      return Invalid(
          std::string("cap.") + ResourceName(r),
          Num(cap[r]) + " is below guarantee." + ResourceName(r) + " (" + Num(guarantee[r]) + ")");
    }
  }
  return Status::Ok();
}

Status ValidateOptions(const Options& options) {
  TESSERA_RETURN_IF_ERROR(ValidateOptionBounds(options));
  if (options.store.max_batch <= 0) {
    return Invalid("store.max_batch", "must be > 0, got " + Num(options.store.max_batch));
  }
  if (options.store.max_size_mib < 0) {
    return Invalid("store.max_size_mib", "must be >= 0, got " + Num(options.store.max_size_mib));
  }
  const JobSizeLimits& sizes = options.job_size_limits;
  for (const auto& [limit, field] : {std::pair{sizes.max_command_bytes, "max_command_bytes"},
                                     std::pair{sizes.max_env_bytes, "max_env_bytes"},
                                     std::pair{sizes.max_spec_bytes, "max_spec_bytes"}}) {
    if (limit <= 0) {
      return Invalid(std::string("limits.") + field, "must be > 0, got " + Num(limit));
    }
  }
  if (options.max_pending_jobs_per_queue < 0) {
    return Invalid("max_pending_jobs_per_queue",
                   "must be >= 0, got " + Num(options.max_pending_jobs_per_queue));
  }
  if (options.fair_share.usage_half_life.count() < 0) {
    return Invalid("fair_share.usage_half_life", "must be >= 0");
  }
  if (options.fair_share.usage_refresh.count() <= 0) {
    return Invalid("fair_share.usage_refresh", "must be > 0");
  }
  for (const auto& [model, weight] : options.fair_share.gpu_model_weights) {
    const std::string field = "fair_share.gpu_model_weights[" + model + "]";
    if (model.empty()) return Invalid("fair_share.gpu_model_weights", "a model name is empty");
    if (!std::isfinite(weight) || weight < 0.001 || weight > 1000) {
      return Invalid(field, "must be a number in [0.001, 1000], got " + std::to_string(weight));
    }
  }
  if (options.engine.decision_slice.count() <= 0) {
    return Invalid("engine.decision_slice", "must be > 0");
  }
  if (options.engine.max_attempts < 1) {
    return Invalid("engine.max_attempts", "must be >= 1, got " + Num(options.engine.max_attempts));
  }
  if (options.engine.store_retry.count() <= 0) {
    return Invalid("engine.store_retry", "must be > 0");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < options.priority_classes.size(); ++i) {
    const std::string& name = options.priority_classes[i].name;
    const std::string field = "priority_classes[" + Num(static_cast<int64_t>(i)) + "].name";
    if (name.empty()) return Invalid(field, "must not be empty");
    if (!names.insert(name).second) return Invalid(field, "duplicate class '" + name + "'");
  }
  if (!names.count(options.default_priority_class)) {
    return Invalid("default_priority_class",
                   "'" + options.default_priority_class + "' is not among priority_classes");
  }
  if (!options.default_queue.empty()) {
    TESSERA_RETURN_IF_ERROR(ValidateQueueName(options.default_queue, "default_queue"));
  }
  return Status::Ok();
}

StatusOr<PriorityClass> ResolvePriorityClass(const Options& options, const std::string& name) {
  const std::string& wanted = name.empty() ? options.default_priority_class : name;
  std::string known;
  for (const PriorityClass& c : options.priority_classes) {
    if (c.name == wanted) return c;
    known += (known.empty() ? "" : ", ") + c.name;
  }
  return Invalid("priority_class", "unknown class '" + wanted + "' (known: " + known + ")");
}

std::map<std::string, double> DefaultGpuModelWeights() {
  return {
      {"A100-40GB", 0.75},
      {"A100-80GB", 1.0},
      {"H100-80GB", 2.1},
      {"H100-94GB", 1.95},
      {"H200-141GB", 2.45},
      {"L40S", 0.9},
      {"L40", 0.6},
      {"A10", 0.35},
      {"L4", 0.35},
      {"V100-32GB", 0.4},
      {"Tesla-V100-SXM2-32GB", 0.4},
      {"V100-16GB", 0.3},
      {"Tesla-V100-SXM2-16GB", 0.3},
      {"T4", 0.2},
      {"Tesla-T4", 0.2},
  };
}

std::vector<PriorityClass> DefaultPriorityClasses() {
  return {
      {"low", 0, true},
      {"normal", 100, true},
      {"high", 1000, false},
  };
}

}  // namespace tessera
