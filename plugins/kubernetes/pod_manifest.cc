#include "pod_manifest.h"

#include <charconv>

#include "quantity.h"

namespace tessera::kubernetes {
namespace {

using nlohmann::json;

bool Fail(std::string* error, std::string message) {
  *error = std::move(message);
  return false;
}

// The GPU resources of one task, in the device plugin's names.
json GpuResources(const v1::LaunchTask& task) {
  json resources = json::object();
  if (task.gpus_size() == 0) return resources;
  std::string profile = task.partition().mig_profile();
  if (task.partition().sharing() == v1::GPU_SHARING_MIG && !profile.empty()) {
    resources["nvidia.com/mig-" + profile] = "1";
    return resources;
  }
  // Whole GPUs, or one share of a time-sliced or MPS GPU: the device plugin advertises each
  // share as one nvidia.com/gpu.
  resources["nvidia.com/gpu"] = std::to_string(task.gpus_size());
  return resources;
}

bool ParseUint(const std::string& text, uint64_t* value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string PodName(const PodOptions& options, const v1::TaskRef& ref) {
  return options.name_prefix + "-j" + std::to_string(ref.job()) + "-a" +
         std::to_string(ref.attempt()) + "-t" + std::to_string(ref.task());
}

bool BuildPod(const v1::LaunchTask& task, const PodOptions& options, json* pod,
              std::string* error) {
  json template_json = json::object();
  if (!task.backend_spec().empty()) {
    template_json = json::parse(task.backend_spec(), nullptr, /*allow_exceptions=*/false);
    if (template_json.is_discarded()) return Fail(error, "backend_spec: not valid JSON");
    if (!template_json.is_object()) return Fail(error, "backend_spec: must be a JSON object");
  }
  for (const auto& [key, value] : template_json.items()) {
    if (key != "metadata" && key != "spec") {
      return Fail(error, "backend_spec." + key +
                             ": unknown field (a pod template has metadata "
                             "and spec)");
    }
    if (!value.is_object()) return Fail(error, "backend_spec." + key + ": must be an object");
  }
  json metadata = template_json.value("metadata", json::object());
  json spec = template_json.value("spec", json::object());

  // Namespace.
  std::string ns = options.default_namespace;
  if (metadata.contains("namespace")) {
    if (!metadata["namespace"].is_string()) {
      return Fail(error, "backend_spec.metadata.namespace: must be a string");
    }
    ns = metadata["namespace"].get<std::string>();
    if (ns != options.default_namespace && !options.allowed_namespaces.count(ns)) {
      return Fail(error, "backend_spec.metadata.namespace: '" + ns +
                             "' is not a namespace this backend may use (config namespaces)");
    }
  }
  for (const char* field : {"name", "generateName", "uid", "resourceVersion", "ownerReferences"}) {
    if (metadata.contains(field)) {
      return Fail(error, std::string("backend_spec.metadata.") + field + ": set by the backend");
    }
  }
  for (const char* field : {"nodeName", "nodeSelector", "affinity", "schedulerName"}) {
    // The scheduler has chosen the node: a template that steers placement would be ignored or
    // contradict it. Node selectors belong in the job spec, where the scheduler reads them.
    if (spec.contains(field)) {
      return Fail(error, std::string("backend_spec.spec.") + field +
                             ": placement is Tessera's (use the job's node selectors)");
    }
  }
  metadata["name"] = PodName(options, task.ref());
  metadata["namespace"] = ns;
  json labels = metadata.value("labels", json::object());
  if (!labels.is_object()) return Fail(error, "backend_spec.metadata.labels: must be an object");
  labels[kManagedByLabel] = "tessera";
  labels[kBackendLabel] = options.backend_name;
  labels[kJobLabel] = std::to_string(task.ref().job());
  labels[kAttemptLabel] = std::to_string(task.ref().attempt());
  labels[kTaskLabel] = std::to_string(task.ref().task());
  metadata["labels"] = labels;
  json annotations = metadata.value("annotations", json::object());
  if (!annotations.is_object()) {
    return Fail(error, "backend_spec.metadata.annotations: must be an object");
  }
  if (!task.queue().empty()) annotations["tessera.io/queue"] = task.queue();
  if (!task.job_name().empty()) annotations["tessera.io/job-name"] = task.job_name();
  metadata["annotations"] = annotations;

  // Containers.
  json containers = spec.value("containers", json::array());
  if (!containers.is_array()) return Fail(error, "backend_spec.spec.containers: must be a list");
  if (containers.empty()) containers.push_back(json{{"name", "task"}});
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string field = "backend_spec.spec.containers[" + std::to_string(i) + "]";
    json& c = containers[i];
    if (!c.is_object()) return Fail(error, field + ": must be an object");
    if (!c.contains("name")) c["name"] = i == 0 ? "task" : "task-" + std::to_string(i);
    if (!c.contains("image")) {
      if (options.default_image.empty()) {
        return Fail(error, field + ".image: missing and the backend has no default_image");
      }
      c["image"] = options.default_image;
    }
  }
  json& first = containers[0];
  if (task.command_size() > 0) {
    first["command"] = json(std::vector<std::string>(task.command().begin(), task.command().end()));
    first.erase("args");
  }
  json env = first.value("env", json::array());
  if (!env.is_array()) return Fail(error, "backend_spec.spec.containers[0].env: must be a list");
  auto add_env = [&env](const std::string& name, const std::string& value) {
    env.push_back(json{{"name", name}, {"value", value}});
  };
  add_env("TESSERA_JOB_ID", std::to_string(task.ref().job()));
  add_env("TESSERA_ATTEMPT", std::to_string(task.ref().attempt()));
  add_env("TESSERA_TASK_INDEX", std::to_string(task.ref().task()));
  if (!task.queue().empty()) add_env("TESSERA_QUEUE", task.queue());
  for (const auto& [name, value] : task.env()) add_env(name, value);
  first["env"] = env;

  json resources = first.value("resources", json::object());
  if (!resources.is_object()) {
    return Fail(error, "backend_spec.spec.containers[0].resources: must be an object");
  }
  json requests = resources.value("requests", json::object());
  json limits = resources.value("limits", json::object());
  if (task.cpu_milli() > 0) requests["cpu"] = MilliQuantity(task.cpu_milli());
  if (task.memory_mib() > 0) {
    requests["memory"] = MibQuantity(task.memory_mib());
    limits["memory"] = MibQuantity(task.memory_mib());
  }
  // Extended resources must be in limits; requests, when given, must equal them.
  const json gpu_resources = GpuResources(task);
  for (const auto& [name, count] : gpu_resources.items()) {
    limits[name] = count;
    requests[name] = count;
  }
  resources["requests"] = requests;
  resources["limits"] = limits;
  first["resources"] = resources;
  spec["containers"] = containers;

  spec["nodeName"] = task.node();
  spec["restartPolicy"] = "Never";
  if (task.time_limit_s() > 0 && !spec.contains("activeDeadlineSeconds")) {
    spec["activeDeadlineSeconds"] = task.time_limit_s();
  }
  *pod = json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", spec}};
  return true;
}

bool TaskOfKeys(const json& keys, v1::TaskRef* ref) {
  if (!keys.is_object()) return false;
  const auto text = [&](const char* key) {
    const auto it = keys.find(key);
    return it != keys.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (text(kBackendLabel).empty()) return false;
  uint64_t job = 0, attempt = 0, index = 0;
  if (!ParseUint(text(kJobLabel), &job) || !ParseUint(text(kAttemptLabel), &attempt) ||
      !ParseUint(text(kTaskLabel), &index)) {
    return false;
  }
  ref->set_job(job);
  ref->set_attempt(static_cast<int32_t>(attempt));
  ref->set_task(static_cast<int32_t>(index));
  return true;
}

bool TaskOfPod(const json& pod, v1::TaskRef* ref) {
  if (!pod.is_object()) return false;
  const auto metadata = pod.find("metadata");
  if (metadata == pod.end() || !metadata->is_object()) return false;
  const auto labels = metadata->find("labels");
  return labels != metadata->end() && TaskOfKeys(*labels, ref);
}

}  // namespace tessera::kubernetes
