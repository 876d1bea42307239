#include "placement/feasibility.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "model/elastic_sizes.h"

namespace tessera {

std::string DescribeShareAsk(const TaskShape& shape);

FeasibilityQuery FeasibilityQuery::FromSpec(const v1::JobSpec& spec,
                                            const LabelDictionary& labels) {
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
  GpuModels scratch;
  q.shape = MakeTaskShape(spec, scratch);
  q.shape.models = 0;
  q.shape.terms = PlacementTerms::Compile(spec, labels);
  q.gpu_milli = q.shape.gpu_milli;
  q.gpu_memory_mib = q.shape.gpu_memory_mib;
  const int tasks = spec.tasks() > 0 ? spec.tasks() : 1;
  if (spec.has_elastic()) {
    // The least it may start with: the smallest count its size rule allows.
    q.min_tasks = ElasticSizes::FromBounds(spec.elastic()).Smallest();
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
  q.shape = shape;
  q.shape.models = 0;
  return q;
}

TaskShape FeasibilityQuery::GpuAsk() const {
  TaskShape ask = shape;
  ask.models = 0;
  ask.gpu_count = gpu_count;
  ask.gpu_milli = gpu_milli;
  ask.gpu_memory_mib = gpu_memory_mib;
  return ask;
}

FeasibilityChecker::FeasibilityChecker(const Cluster& cluster)
    : labels_(cluster.label_dictionary()) {
  using Key = std::tuple<std::string, int64_t, int64_t, int, int, int64_t, std::string, size_t>;
  std::map<Key, int64_t> counts;
  std::map<std::string, GpuSlot> idle_gpus;  // by sharing signature.
  // Distinct label sets: nodes that differ only in them are different shapes.
  std::map<NodeLabels, size_t> label_sets;
  std::vector<std::shared_ptr<const NodeLabels>> label_set_of;
  for (const NodeState& n : cluster.nodes()) {
    if (!n.present()) continue;
    const std::string model = n.model() >= 0 ? cluster.models().Name(n.model()) : "";
    const ResourceVector cap = n.Capacity();
    auto [set, added] = label_sets.emplace(n.labels(), label_set_of.size());
    if (added) label_set_of.push_back(n.shared_labels());
    if (n.gpus().empty()) {
      ++counts[{model, cap.cpu_milli(), cap.memory_mib(), 0, 0, 0, "", set->second}];
      continue;
    }
    // GPUs shared differently are different shapes, even on one node (a Kubernetes node with
    // some GPUs whole and some in MIG instances, say): a task's GPUs all have one form, so each
    // form of the node is a shape with the node's CPU and memory and that form's GPUs.
    struct Form {
      int gpus = 0;
      std::map<int32_t, int> domains;
      int largest = 0;
      int64_t gpu_memory = 0;
    };
    std::map<std::string, Form> forms;
    for (const GpuSlot& g : n.gpus()) {
      const GpuSlot idle = IdleCopy(g);
      std::string sharing = std::to_string(static_cast<int>(idle.sharing)) + "/" +
                            std::to_string(idle.replicas) + "/" + std::to_string(idle.mig_managed) +
                            "/" + std::to_string(idle.vgpu_framebuffer_gib);
      for (int i = 0; i < idle.mig_count; ++i) {
        sharing += "/" + std::to_string(static_cast<int>(idle.mig[i].kind)) + "@" +
                   std::to_string(idle.mig[i].start);
      }
      idle_gpus.emplace(sharing, idle);
      Form& form = forms[sharing];
      ++form.gpus;
      form.largest = std::max(form.largest, ++form.domains[g.nvlink_domain]);
      form.gpu_memory = g.memory_mib;
    }
    for (const auto& [sharing, form] : forms) {
      ++counts[{model, cap.cpu_milli(), cap.memory_mib(), form.gpus, form.largest, form.gpu_memory,
                sharing, set->second}];
    }
  }
  for (const auto& [key, count] : counts) {
    NodeShape s;
    std::string sharing;
    size_t label_set = 0;
    std::tie(s.model, s.cpu_milli, s.memory_mib, s.gpus, s.largest_nvlink_domain, s.gpu_memory_mib,
             sharing, label_set) = key;
    s.count = count;
    s.labels = label_set_of[label_set];
    if (!sharing.empty()) s.idle_gpu = idle_gpus[sharing];
    shapes_.push_back(s);
  }
}

bool FeasibilityChecker::ModelAllowed(const NodeShape& node, const FeasibilityQuery& q) const {
  if (q.gpu_count == 0) return true;
  if (node.model.empty()) return false;
  return q.models.empty() ||
         std::find(q.models.begin(), q.models.end(), node.model) != q.models.end();
}

bool FeasibilityChecker::Admits(const NodeShape& node, const FeasibilityQuery& q) {
  if (q.shape.terms == nullptr) return !node.labels->hard_taints;
  return q.shape.terms->Admits(*node.labels);
}

int64_t FeasibilityChecker::TasksPerNode(const NodeShape& node, const FeasibilityQuery& q) {
  int64_t tasks = std::min(q.cpu_milli > 0 ? node.cpu_milli / q.cpu_milli : INT64_MAX,
                           q.memory_mib > 0 ? node.memory_mib / q.memory_mib : INT64_MAX);
  if (q.gpu_count == 0) return tasks;
  const TaskShape ask = q.GpuAsk();
  if (!ask.fractional_gpu()) {
    if (q.gpu_memory_mib > node.gpu_memory_mib) return 0;
    const GpuSlot& gpu = node.idle_gpu;
    if (gpu.sharing != GpuSharing::kDefault && gpu.sharing != GpuSharing::kExclusive) return 0;
    const int usable = q.same_nvlink ? node.largest_nvlink_domain : node.gpus;
    if (usable < q.gpu_count) return 0;
    // Tasks needing a domain each: whole domains only when same_nvlink.
    return std::min<int64_t>(tasks, node.gpus / q.gpu_count);
  }
  return std::min<int64_t>(tasks, SharesPerGpu(node.idle_gpu, ask) * node.gpus);
}

int64_t FeasibilityChecker::SharesPerGpu(const GpuSlot& idle, const TaskShape& shape) {
  auto fill = [&shape](GpuSlot gpu) {
    int64_t n = 0;
    while (n < 1000) {
      std::optional<ShareOffer> offer = OfferShare(gpu, shape);
      if (!offer) break;
      TakeShare(gpu, offer->milli, offer->memory_mib, offer->mig_instance,
                offer->vgpu_framebuffer_gib);
      ++n;
    }
    return n;
  };
  int64_t best = fill(idle);
  if (idle.sharing == GpuSharing::kMig && idle.mig_managed && idle.mig_model != nullptr) {
    // The scheduler may re-partition the GPU: try a layout of one kind, packed from slice 0.
    for (int k = 0; k < mig::kNumProfileKinds; ++k) {
      const auto kind = static_cast<mig::ProfileKind>(k);
      std::vector<mig::Instance> layout;
      for (int start = 0; start < mig::kMemorySlices; ++start) {
        layout.push_back({kind, static_cast<uint8_t>(start)});
        if (!mig::IsValidLayout(layout)) layout.pop_back();
      }
      GpuSlot gpu = idle;
      gpu.mig_count = static_cast<uint8_t>(layout.size());
      std::copy(layout.begin(), layout.end(), gpu.mig.begin());
      best = std::max(best, fill(gpu));
    }
  }
  return best;
}

std::optional<std::string> FeasibilityChecker::Check(const FeasibilityQuery& q) const {
  int64_t cluster_tasks = 0;
  int64_t best_node_tasks = 0;
  for (const NodeShape& node : shapes_) {
    if (!ModelAllowed(node, q) || !Admits(node, q)) continue;
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
  bool model_allowed = false;
  for (const NodeShape& node : shapes_) {
    if (!ModelAllowed(node, q)) continue;
    model_allowed = true;
    if (Admits(node, q)) allowed.push_back(&node);
  }
  if (model_allowed && allowed.empty()) {
    os << ": " << ExplainNotAdmitted(q);
    return os.str();
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
  const TaskShape ask = q.GpuAsk();
  if (q.gpu_count > 0 && ask.whole_gpus() && q.gpu_memory_mib > gpu_memory) {
    add("gpu_memory_mib", q.gpu_memory_mib, gpu_memory);
  }
  if (ask.fractional_gpu()) {
    bool any_gpu_offers = false;
    for (const NodeShape* n : allowed) any_gpu_offers |= SharesPerGpu(n->idle_gpu, ask) > 0;
    if (!any_gpu_offers) shortfalls.push_back("no GPU offers " + DescribeShareAsk(ask));
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

std::string FeasibilityChecker::DescribeTaint(const NodeTaint& taint) const {
  static constexpr const char* kEffects[] = {"", "NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"};
  std::string out = labels_.Text(taint.key);
  if (!labels_.Text(taint.value).empty()) out += "=" + labels_.Text(taint.value);
  return out + ":" + kEffects[static_cast<int>(taint.effect)];
}

std::string FeasibilityChecker::ExplainNotAdmitted(const FeasibilityQuery& q) const {
  std::vector<const NodeShape*> nodes;
  for (const NodeShape& node : shapes_) {
    if (ModelAllowed(node, q)) nodes.push_back(&node);
  }
  const PlacementTerms* terms = q.shape.terms.get();
  std::vector<const NodeShape*> matching;
  for (const NodeShape* node : nodes) {
    if (terms == nullptr || terms->MatchesLabels(*node->labels)) matching.push_back(node);
  }
  if (matching.empty()) {
    for (size_t i = 0; i < terms->requirements().size(); ++i) {
      const bool somewhere = std::any_of(nodes.begin(), nodes.end(), [&](const NodeShape* n) {
        return terms->MatchesRequirement(i, *n->labels);
      });
      if (!somewhere) return "no node has " + terms->requirements()[i].description;
    }
    return "no node meets all of the job's node_selector and node_requirements";
  }
  // Labels match somewhere, so a hard taint keeps the job out of each of those nodes.
  for (const NodeTaint& taint : matching.front()->labels->taints) {
    if (!taint.hard()) continue;
    const bool untolerated =
        terms == nullptr || !terms->ToleratesHard(NodeLabels{{}, {taint}, true, false});
    if (untolerated) {
      return std::string(terms ? "every node the job's selector matches" : "every node") +
             " has a taint the job does not tolerate (e.g. " + DescribeTaint(taint) + ")";
    }
  }
  return "every node has a taint the job does not tolerate";
}

std::string DescribeShareAsk(const TaskShape& shape) {
  if (!shape.mig_profile.empty()) return "the MIG profile " + shape.mig_profile;
  if (shape.vgpu_framebuffer_gib > 0) {
    return "the vGPU type " + shape.vgpu_family + "-" + std::to_string(shape.vgpu_framebuffer_gib) +
           "C";
  }
  static constexpr const char* kForms[] = {"a share",      "whole GPUs",   "a MIG instance",
                                           "a time slice", "an MPS share", "a vGPU"};
  std::string what = kForms[static_cast<int>(shape.form)];
  what += " of at least " + std::to_string(shape.gpu_milli) + " milli-GPUs";
  if (shape.gpu_memory_mib > 0) what += " and " + std::to_string(shape.gpu_memory_mib) + " MiB";
  return what;
}

}  // namespace tessera
