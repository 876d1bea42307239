#include "kube_backend_config.h"

#include "tessera/plugin/key_value_config.h"

namespace tessera::kubernetes {
namespace {

using plugin::KeyValueConfig;
using plugin::PluginStatus;

PluginStatus Invalid(const std::string& message) {
  return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, message);
}

// "a,b,c" -> {a, b, c}; empty items are refused.
PluginStatus ParseList(const std::string& key, const std::string& text,
                       std::set<std::string>* out) {
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    if (item.empty()) return Invalid(key + ": an empty item in '" + text + "'");
    out->insert(item);
    pos = comma + 1;
  }
  return PluginStatus::Ok();
}

// "a:x,b:y" -> {a: x, b: y}.
PluginStatus ParseMap(const std::string& key, const std::string& text,
                      std::map<std::string, std::string>* out) {
  std::set<std::string> items;
  PluginStatus status = ParseList(key, text, &items);
  if (!status.ok()) return status;
  for (const std::string& item : items) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size()) {
      return Invalid(key + ": '" + item + "' is not <from>:<to>");
    }
    if (!out->emplace(item.substr(0, colon), item.substr(colon + 1)).second) {
      return Invalid(key + ": '" + item.substr(0, colon) + "' is mapped twice");
    }
  }
  return PluginStatus::Ok();
}

PluginStatus Bool(const KeyValueConfig& kv, const std::string& key, bool* out) {
  std::string text;
  PluginStatus status = kv.String(key, &text);
  if (!status.ok() || !kv.Has(key)) return status;
  if (text == "true") {
    *out = true;
  } else if (text == "false") {
    *out = false;
  } else {
    return Invalid(key + ": must be true or false, got '" + text + "'");
  }
  return status;
}

}  // namespace

PluginStatus ParseKubeBackendConfig(const std::string& text, KubeBackendConfig* config) {
  KeyValueConfig kv;
  PluginStatus status = KeyValueConfig::Parse(text,
                                              {"kubeconfig",
                                               "context",
                                               "in_cluster",
                                               "name",
                                               "namespace",
                                               "namespaces",
                                               "default_image",
                                               "node_selector",
                                               "rack_label",
                                               "default_gpu_memory_mib",
                                               "qps",
                                               "burst",
                                               "workers",
                                               "scheduler_name",
                                               "queue_for_namespace",
                                               "queue_label",
                                               "default_queue",
                                               "priority_for_class",
                                               "pod_group_label",
                                               "pod_group_size_label",
                                               "default_cpu_milli",
                                               "default_memory_mib",
                                               "resubmit_interval_s",
                                               "count_others_pods"},
                                              &kv);
  KubeBackendConfig& c = *config;
  if (status.ok()) status = kv.String("kubeconfig", &c.kubeconfig);
  if (status.ok()) status = kv.String("context", &c.context);
  if (status.ok()) status = Bool(kv, "in_cluster", &c.in_cluster);
  if (status.ok()) status = kv.String("name", &c.name);
  if (status.ok()) status = kv.String("namespace", &c.pod_namespace);
  if (status.ok() && kv.Has("namespaces")) {
    std::string list;
    status = kv.String("namespaces", &list);
    if (status.ok()) status = ParseList("namespaces", list, &c.namespaces);
  }
  if (status.ok()) status = kv.String("default_image", &c.default_image, /*allow_empty=*/true);
  if (status.ok()) status = kv.String("node_selector", &c.node_selector, true);
  if (status.ok()) status = kv.String("rack_label", &c.rack_label, true);
  if (status.ok()) {
    status = kv.Integer("default_gpu_memory_mib", int64_t{1}, int64_t{1} << 30,
                        &c.default_gpu_memory_mib);
  }
  if (status.ok()) status = kv.Integer("qps", int64_t{1}, int64_t{100000}, &c.qps);
  if (status.ok()) status = kv.Integer("burst", int64_t{1}, int64_t{100000}, &c.burst);
  if (status.ok()) status = kv.Integer("workers", int64_t{1}, int64_t{256}, &c.workers);
  if (status.ok()) status = kv.String("scheduler_name", &c.scheduler_name, true);
  if (status.ok() && kv.Has("queue_for_namespace")) {
    std::string map;
    status = kv.String("queue_for_namespace", &map);
    if (status.ok()) status = ParseMap("queue_for_namespace", map, &c.queue_for_namespace);
  }
  if (status.ok()) status = kv.String("queue_label", &c.queue_label, true);
  if (status.ok()) status = kv.String("default_queue", &c.default_queue, true);
  if (status.ok() && kv.Has("priority_for_class")) {
    std::string map;
    status = kv.String("priority_for_class", &map);
    if (status.ok()) status = ParseMap("priority_for_class", map, &c.priority_for_class);
  }
  if (status.ok()) status = kv.String("pod_group_label", &c.pod_group_label, true);
  if (status.ok()) status = kv.String("pod_group_size_label", &c.pod_group_size_label, true);
  if (status.ok()) {
    status = kv.Integer("default_cpu_milli", int64_t{1}, int64_t{1} << 40, &c.default_cpu_milli);
  }
  if (status.ok()) {
    status = kv.Integer("default_memory_mib", int64_t{1}, int64_t{1} << 40, &c.default_memory_mib);
  }
  if (status.ok()) {
    status = kv.Integer("resubmit_interval_s", int64_t{1}, int64_t{3600}, &c.resubmit_interval_s);
  }
  if (status.ok()) status = Bool(kv, "count_others_pods", &c.count_others_pods);
  if (!status.ok()) return status;
  if (c.in_cluster && !c.kubeconfig.empty()) {
    return Invalid("in_cluster: true and kubeconfig are both set; choose one");
  }
  return PluginStatus::Ok();
}

}  // namespace tessera::kubernetes
