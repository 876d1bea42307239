#include "placement/feasibility.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

namespace tessera {

FeasibilityQuery FeasibilityQuery::FromSpec(const v1::JobSpec& spec) {
  FeasibilityQuery q;
  const v1::TaskResources& t = spec.task();
  q.cpu_milli = t.cpu_milli();
  q.memory_mib = t.memory_mib();
  q.gpu_count = t.gpu_count();
  q.gpu_milli = t.gpu_count() == 0 ? 0 : (t.gpu_milli() == 0 ? 1000 : t.gpu_milli());
  q.gpu_memory_mib = t.gpu_memory_mib();
  q.models.assign(t.gpu_models().begin(), t.gpu_models().end());
  q.same_nvlink = spec.topology().task_gpus_same_nvlink();
  q.same_node = spec.topology().tasks_same_node();
  const int tasks = spec.tasks() > 0 ? spec.tasks() : 1;
  if (spec.has_elastic()) {
    q.min_tasks = std::max(1, spec.elastic().min_tasks());
  } else {
    q.min_tasks = spec.gang_min() > 0 ? spec.gang_min() : tasks;
  }
  return q;
}

FeasibilityQuery FeasibilityQuery::FromShape(const TaskShape& shape, const GpuModels& models,
                                             int min_tasks, bool same_node) {
  FeasibilityQuery q;
  q.cpu_milli = shape.cpu_milli;
  q.memory_mib = shape.memory_mib;
  q.gpu_count = shape.gpu_count;
  q.gpu_milli = shape.gpu_milli;
  q.gpu_memory_mib = shape.gpu_memory_mib;
  for (int m = 0; m < models.size(); ++m) {
    if (shape.models != 0 && shape.AllowsModel(m)) q.models.push_back(models.Name(m));
  }
  q.same_nvlink = shape.same_nvlink;
  q.min_tasks = min_tasks;
  q.same_node = same_node;
  return q;
}

FeasibilityChecker::FeasibilityChecker(const Cluster& cluster) {
  using Key = std::tuple<std::string, int64_t, int64_t, int, int, int64_t>;
  std::map<Key, int64_t> counts;
  for (const NodeState& n : cluster.nodes()) {
    if (!n.present()) continue;
    std::map<int32_t, int> domains;
    int largest = 0;
    int64_t gpu_memory = 0;
    for (const GpuSlot& g : n.gpus()) {
      largest = std::max(largest, ++domains[g.nvlink_domain]);
      gpu_memory = g.memory_mib;
    }
    const std::string model = n.model() >= 0 ? cluster.models().Name(n.model()) : "";
    const ResourceVector cap = n.Capacity();
    ++counts[{model, cap.cpu_milli(), cap.memory_mib(), static_cast<int>(n.gpus().size()), largest,
              gpu_memory}];
  }
  for (const auto& [key, count] : counts) {
    NodeShape s;
    std::tie(s.model, s.cpu_milli, s.memory_mib, s.gpus, s.largest_nvlink_domain,
             s.gpu_memory_mib) = key;
    s.count = count;
    shapes_.push_back(s);
  }
}

bool FeasibilityChecker::ModelAllowed(const NodeShape& node, const FeasibilityQuery& q) const {
  if (q.gpu_count == 0) return true;
  if (node.model.empty()) return false;
  return q.models.empty() ||
         std::find(q.models.begin(), q.models.end(), node.model) != q.models.end();
}

int64_t FeasibilityChecker::TasksPerNode(const NodeShape& node, const FeasibilityQuery& q) {
  int64_t tasks = std::min(q.cpu_milli > 0 ? node.cpu_milli / q.cpu_milli : INT64_MAX,
                           q.memory_mib > 0 ? node.memory_mib / q.memory_mib : INT64_MAX);
  if (q.gpu_count == 0) return tasks;
  if (q.gpu_memory_mib > node.gpu_memory_mib) return 0;
  if (q.gpu_milli >= 1000) {
    const int usable = q.same_nvlink ? node.largest_nvlink_domain : node.gpus;
    if (usable < q.gpu_count) return 0;
    // Tasks needing a domain each: whole domains only when same_nvlink.
    return std::min<int64_t>(tasks, node.gpus / q.gpu_count);
  }
  int64_t per_gpu = 1000 / q.gpu_milli;
  const int64_t memory_each =
      q.gpu_memory_mib > 0 ? q.gpu_memory_mib : node.gpu_memory_mib * q.gpu_milli / 1000;
  if (memory_each > 0) per_gpu = std::min(per_gpu, node.gpu_memory_mib / memory_each);
  return std::min<int64_t>(tasks, per_gpu * node.gpus);
}

std::optional<std::string> FeasibilityChecker::Check(const FeasibilityQuery& q) const {
  int64_t cluster_tasks = 0;
  int64_t best_node_tasks = 0;
  for (const NodeShape& node : shapes_) {
    if (!ModelAllowed(node, q)) continue;
    const int64_t per_node = TasksPerNode(node, q);
    best_node_tasks = std::max(best_node_tasks, per_node);
    cluster_tasks += per_node * node.count;
  }
  if (best_node_tasks == 0) return ExplainNoNode(q);
  if (q.same_node && best_node_tasks < q.min_tasks) {
    return "the job's " + std::to_string(q.min_tasks) +
           " tasks must share one node, but the largest fitting node holds " +
           std::to_string(best_node_tasks);
  }
  if (cluster_tasks < q.min_tasks) {
    return "the gang needs " + std::to_string(q.min_tasks) +
           " tasks at once, but the whole cluster could hold at most " +
           std::to_string(cluster_tasks);
  }
  return std::nullopt;
}

std::string FeasibilityChecker::ExplainNoNode(const FeasibilityQuery& q) const {
  std::ostringstream os;
  os << "no node could ever run one task";
  std::vector<const NodeShape*> allowed;
  for (const NodeShape& node : shapes_) {
    if (ModelAllowed(node, q)) allowed.push_back(&node);
  }
  if (allowed.empty()) {
    if (q.gpu_count > 0 && !q.models.empty()) {
      os << ": no node has GPUs of model ";
      for (size_t i = 0; i < q.models.size(); ++i) os << (i ? " or " : "") << q.models[i];
    } else if (q.gpu_count > 0) {
      os << ": no node has GPUs";
    } else {
      os << ": the cluster has no nodes";
    }
    return os.str();
  }
  // Report each dimension where even the largest allowed node falls short.
  int64_t cpu = 0, memory = 0, gpu_memory = 0;
  int gpus = 0, domain = 0;
  for (const NodeShape* n : allowed) {
    cpu = std::max(cpu, n->cpu_milli);
    memory = std::max(memory, n->memory_mib);
    gpus = std::max(gpus, n->gpus);
    domain = std::max(domain, n->largest_nvlink_domain);
    gpu_memory = std::max(gpu_memory, n->gpu_memory_mib);
  }
  std::vector<std::string> shortfalls;
  auto add = [&](const std::string& field, int64_t asked, int64_t largest) {
    shortfalls.push_back(field + " " + std::to_string(asked) + " > largest node's " +
                         std::to_string(largest));
  };
  if (q.cpu_milli > cpu) add("cpu_milli", q.cpu_milli, cpu);
  if (q.memory_mib > memory) add("memory_mib", q.memory_mib, memory);
  if (q.gpu_count > 0 && q.gpu_milli >= 1000) {
    if (q.gpu_count > gpus)
      add("gpu_count", q.gpu_count, gpus);
    else if (q.same_nvlink && q.gpu_count > domain)
      add("gpu_count on one NVLink domain", q.gpu_count, domain);
  }
  if (q.gpu_count > 0 && q.gpu_memory_mib > gpu_memory) {
    add("gpu_memory_mib", q.gpu_memory_mib, gpu_memory);
  }
  if (shortfalls.empty()) {
    os << ": no single node has all of cpu_milli " << q.cpu_milli << ", memory_mib " << q.memory_mib
       << " and " << q.gpu_count << " GPU(s) together";
  } else {
    os << ": ";
    for (size_t i = 0; i < shortfalls.size(); ++i) os << (i ? "; " : "") << shortfalls[i];
  }
  return os.str();
}

}  // namespace tessera
