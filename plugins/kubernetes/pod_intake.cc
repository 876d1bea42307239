#include "pod_intake.h"

#include <charconv>

#include "json_fields.h"
#include "pod_manifest.h"
#include "quantity.h"

namespace tessera::kubernetes {
namespace {

using nlohmann::json;

std::string LabelOf(const json& pod, const std::string& key) {
  if (key.empty()) return "";
  const json& labels = FieldAt(MetadataOf(pod), "labels");
  const json& v = FieldAt(labels, key.c_str());
  return v.is_string() ? v.get<std::string>() : std::string();
}

bool Fail(std::string* error, std::string message) {
  *error = std::move(message);
  return false;
}

std::optional<std::string> QuantityText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return std::nullopt;
}

// One pod's request as a task.
bool TaskOfPod(const json& pod, const KubeBackendConfig& config, v1::TaskResources* task,
               std::string* error) {
  const std::string who = StringAt(FieldAt(pod, "metadata"), "namespace") + "/" +
                          StringAt(FieldAt(pod, "metadata"), "name");
  int64_t cpu = 0, memory = 0, gpus = 0;
  std::string mig;
  const json& containers = FieldAt(FieldAt(pod, "spec"), "containers");
  if (!containers.is_array() || containers.empty()) {
    return Fail(error, "pod " + who + ": spec.containers: none");
  }
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string field = "pod " + who + ": spec.containers[" + std::to_string(i) + "]";
    const json& resources = FieldAt(containers[i], "resources");
    const json& requests = FieldAt(resources, "requests");
    const json& limits = FieldAt(resources, "limits");
    if (std::optional<std::string> q = QuantityText(FieldAt(requests, "cpu"))) {
      const std::optional<int64_t> v = QuantityMilli(*q);
      if (!v) return Fail(error, field + ".resources.requests.cpu: not a quantity");
      cpu += *v;
    }
    if (std::optional<std::string> q = QuantityText(FieldAt(requests, "memory"))) {
      const std::optional<int64_t> v = QuantityMib(*q);
      if (!v) return Fail(error, field + ".resources.requests.memory: not a quantity");
      memory += *v;
    }
    if (!limits.is_object()) continue;
    for (const auto& [name, value] : limits.items()) {
      const bool gpu = name == "nvidia.com/gpu";
      const bool is_mig = name.rfind("nvidia.com/mig-", 0) == 0;
      if (!gpu && !is_mig) continue;
      const std::optional<std::string> q = QuantityText(value);
      const std::optional<int64_t> n = q ? QuantityCount(*q) : std::nullopt;
      if (!n || *n < 0) return Fail(error, field + ".resources.limits." + name + ": not a count");
      if (*n == 0) continue;
      if (gpu) {
        gpus += *n;
      } else {
        if (*n != 1 || !mig.empty()) {
          return Fail(error,
                      field + ".resources.limits." + name + ": a pod may ask for one MIG instance");
        }
        mig = name.substr(std::string("nvidia.com/mig-").size());
      }
    }
  }
  if (!mig.empty() && gpus > 0) {
    return Fail(error, "pod " + who + ": asks for whole GPUs and a MIG instance");
  }
  task->set_cpu_milli(cpu > 0 ? cpu : config.default_cpu_milli);
  task->set_memory_mib(memory > 0 ? memory : config.default_memory_mib);
  if (!mig.empty()) {
    task->set_gpu_count(1);
    task->set_mig_profile(mig);
  } else {
    task->set_gpu_count(static_cast<int32_t>(gpus));
  }
  return true;
}

// nodeSelector, the first required node-affinity term, and tolerations.
bool PlacementOfPod(const json& pod, v1::JobSpec* job, std::string* error) {
  const json& spec = FieldAt(pod, "spec");
  const json& selector = FieldAt(spec, "nodeSelector");
  if (selector.is_object()) {
    for (const auto& [key, value] : selector.items()) {
      if (value.is_string()) (*job->mutable_node_selector())[key] = value.get<std::string>();
    }
  }
  const json& terms = FieldAt(FieldAt(FieldAt(FieldAt(spec, "affinity"), "nodeAffinity"),
                                      "requiredDuringSchedulingIgnoredDuringExecution"),
                              "nodeSelectorTerms");
  if (terms.is_array() && !terms.empty()) {
    if (terms.size() > 1) {
      return Fail(error,
                  "spec.affinity.nodeAffinity: more than one nodeSelectorTerm (ORed "
                  "terms) is not supported");
    }
    const json& expressions = FieldAt(terms[0], "matchExpressions");
    for (const json& e : expressions.is_array() ? expressions : json::array()) {
      v1::NodeSelectorRequirement* r = job->add_node_requirements();
      r->set_key(StringAt(e, "key"));
      const std::string op = StringAt(e, "operator");
      if (op == "In") {
        r->set_operator_(v1::NodeSelectorRequirement::IN);
      } else if (op == "NotIn") {
        r->set_operator_(v1::NodeSelectorRequirement::NOT_IN);
      } else if (op == "Exists") {
        r->set_operator_(v1::NodeSelectorRequirement::EXISTS);
      } else if (op == "DoesNotExist") {
        r->set_operator_(v1::NodeSelectorRequirement::DOES_NOT_EXIST);
      } else if (op == "Gt") {
        r->set_operator_(v1::NodeSelectorRequirement::GT);
      } else if (op == "Lt") {
        r->set_operator_(v1::NodeSelectorRequirement::LT);
      } else {
        return Fail(error, "spec.affinity.nodeAffinity: operator '" + op + "'");
      }
      const json& values = FieldAt(e, "values");
      for (const json& v : values.is_array() ? values : json::array()) {
        if (v.is_string()) r->add_values(v.get<std::string>());
      }
    }
  }
  const json& tolerations = FieldAt(spec, "tolerations");
  for (const json& t : tolerations.is_array() ? tolerations : json::array()) {
    v1::Toleration* out = job->add_tolerations();
    out->set_key(StringAt(t, "key"));
    out->set_value(StringAt(t, "value"));
    out->set_operator_(StringAt(t, "operator") == "Exists" ? v1::Toleration::EXISTS
                                                           : v1::Toleration::EQUAL);
    const std::string effect = StringAt(t, "effect");
    out->set_effect(effect == "NoSchedule"         ? v1::NO_SCHEDULE
                    : effect == "PreferNoSchedule" ? v1::PREFER_NO_SCHEDULE
                    : effect == "NoExecute"        ? v1::NO_EXECUTE
                                                   : v1::TAINT_EFFECT_UNSPECIFIED);
  }
  return true;
}

}  // namespace

bool ReadIntakePod(const json& pod, const KubeBackendConfig& config, IntakePod* out) {
  if (config.scheduler_name.empty()) return false;
  const json& metadata = FieldAt(pod, "metadata");
  const json& spec = FieldAt(pod, "spec");
  if (StringAt(spec, "schedulerName") != config.scheduler_name) return false;
  out->uid = StringAt(metadata, "uid");
  out->namespace_name = StringAt(metadata, "namespace");
  out->name = StringAt(metadata, "name");
  const std::string phase = StringAt(FieldAt(pod, "status"), "phase");
  out->waiting = StringAt(spec, "nodeName").empty() && (phase.empty() || phase == "Pending") &&
                 FieldAt(metadata, "deletionTimestamp").is_null();
  out->group = LabelOf(pod, config.pod_group_label);
  out->group_size = 0;
  if (!out->group.empty()) {
    const std::string size = LabelOf(pod, config.pod_group_size_label);
    int n = 0;
    const auto [end, ec] = std::from_chars(size.data(), size.data() + size.size(), n);
    if (ec == std::errc() && end == size.data() + size.size() && n > 0) out->group_size = n;
  }
  return !out->uid.empty() && !out->name.empty();
}

bool JobForPods(const std::vector<json>& pods, const KubeBackendConfig& config, v1::JobSpec* job,
                std::string* error) {
  if (pods.empty()) return Fail(error, "no pods");
  const json& first = pods[0];
  const std::string ns = StringAt(FieldAt(first, "metadata"), "namespace");
  const std::string name = StringAt(FieldAt(first, "metadata"), "name");
  std::string queue = LabelOf(first, config.queue_label);
  if (queue.empty()) {
    if (auto mapped = config.queue_for_namespace.find(ns);
        mapped != config.queue_for_namespace.end()) {
      queue = mapped->second;
    } else {
      queue = config.default_queue;
    }
  }
  if (queue.empty()) {
    return Fail(error, "namespace '" + ns +
                           "' maps to no queue (queue_for_namespace, default_queue) and the pod "
                           "has no " +
                           config.queue_label + " label");
  }
  job->set_queue(queue);
  const std::string group = LabelOf(first, config.pod_group_label);
  job->set_name(ns + "/" + (group.empty() ? name : group));
  const std::string k8s_class = StringAt(FieldAt(first, "spec"), "priorityClassName");
  if (auto mapped = config.priority_for_class.find(k8s_class);
      !k8s_class.empty() && mapped != config.priority_for_class.end()) {
    job->set_priority_class(mapped->second);
  }
  if (!TaskOfPod(first, config, job->mutable_task(), error)) return false;
  if (!PlacementOfPod(first, job, error)) {
    *error = "pod " + ns + "/" + name + ": " + *error;
    return false;
  }
  job->set_tasks(static_cast<int32_t>(pods.size()));
  (*job->mutable_labels())["kubernetes-namespace"] = ns;
  return true;
}

std::string PodExternalId(const IntakePod& pod) {
  return pod.namespace_name + "/" + pod.name + "/" + pod.uid;
}

std::string GroupExternalId(const std::string& namespace_name, const std::string& group,
                            const std::string& least_uid) {
  return "group/" + namespace_name + "/" + group + "/" + least_uid;
}

json BindingAnnotations(const v1::TaskRef& ref, const std::string& backend_name,
                        const std::string& external_id) {
  return {{kBackendLabel, backend_name},
          {kJobLabel, std::to_string(ref.job())},
          {kAttemptLabel, std::to_string(ref.attempt())},
          {kTaskLabel, std::to_string(ref.task())},
          {kExternalIdAnnotation, external_id}};
}

bool TaskOfTakenInPod(const json& pod, const std::string& backend_name, v1::TaskRef* ref) {
  const json& annotations = ObjectAt(MetadataOf(pod), "annotations");
  if (StringAt(annotations, kBackendLabel) != backend_name) return false;
  if (StringAt(ObjectAt(pod, "spec"), "nodeName").empty()) return false;
  return TaskOfKeys(annotations, ref);
}

}  // namespace tessera::kubernetes
