#include "node_inventory.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "json_fields.h"
#include "quantity.h"
#include "tessera/gpu/mig_profiles.h"
#include "tessera/gpu/model_names.h"

namespace tessera::kubernetes {
namespace {

using nlohmann::json;

constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

// "" when Ready is True, else why not.
std::string NotReadyReason(const json& status) {
  const auto conditions = status.find("conditions");
  if (conditions == status.end() || !conditions->is_array()) return "no Ready condition";
  for (const json& c : *conditions) {
    if (!c.is_object() || StringAt(c, "type") != "Ready") continue;
    if (StringAt(c, "status") == "True") return "";
    const std::string reason = StringAt(c, "reason");
    return "not Ready" + (reason.empty() ? std::string() : ": " + reason);
  }
  return "no Ready condition";
}

std::optional<v1::TaintEffect> EffectOf(const std::string& effect) {
  if (effect == "NoSchedule") return v1::NO_SCHEDULE;
  if (effect == "PreferNoSchedule") return v1::PREFER_NO_SCHEDULE;
  if (effect == "NoExecute") return v1::NO_EXECUTE;
  return std::nullopt;
}

// One GPU's MIG instances as packing places them.
using MigGpu = std::vector<mig::Instance>;

// Packs `count` instances of each profile onto as few GPUs as largest-first placement takes;
// false (and `error`) when a profile is unknown for the model.
bool PackMigInstances(const std::string& model, const std::map<std::string, int64_t>& counts,
                      std::vector<MigGpu>* gpus, std::string* error) {
  const mig::ModelProfiles* profiles = mig::FindModel(model);
  if (profiles == nullptr) {
    *error = "MIG resources on a GPU model without MIG profiles ('" + model + "')";
    return false;
  }
  std::vector<mig::ProfileKind> wanted;
  for (const auto& [name, count] : counts) {
    const std::optional<mig::ProfileKind> kind = mig::FindProfile(*profiles, name);
    if (!kind) {
      *error = "nvidia.com/mig-" + name + ": not a MIG profile of " + model;
      return false;
    }
    for (int64_t i = 0; i < count && i < 7 * 64; ++i) wanted.push_back(*kind);
  }
  std::stable_sort(wanted.begin(), wanted.end(), [](mig::ProfileKind a, mig::ProfileKind b) {
    return mig::Shape(a).memory_slices > mig::Shape(b).memory_slices;
  });
  for (mig::ProfileKind kind : wanted) {
    bool placed = false;
    for (MigGpu& gpu : *gpus) {
      for (uint8_t start = 0; start < mig::kMemorySlices && !placed; ++start) {
        gpu.push_back({kind, start});
        if (mig::IsValidLayout(gpu)) {
          placed = true;
        } else {
          gpu.pop_back();
        }
      }
      if (placed) break;
    }
    if (!placed) gpus->push_back({{kind, 0}});
  }
  return true;
}

}  // namespace

std::string ModelFromProductLabel(const std::string& product, int64_t memory_mib) {
  std::string name = product;
  // Single-strategy MIG nodes name the instance after the GPU: "...-MIG-1g.10gb".
  if (const size_t mig = name.find("-MIG-"); mig != std::string::npos) name.resize(mig);
  if (name.rfind("NVIDIA-", 0) == 0) name = "NVIDIA " + name.substr(7);
  return model_names::FromDeviceName(name, memory_mib);
}

KubeNode NodeFromKube(const json& node, const NodeTranslation& translation) {
  KubeNode out;
  if (!node.is_object()) {
    out.excluded = "not an object";
    return out;
  }
  const json& metadata = ObjectAt(node, "metadata");
  const json& spec = ObjectAt(node, "spec");
  const json& status = ObjectAt(node, "status");
  const std::string name = StringAt(metadata, "name");
  if (name.empty()) {
    out.excluded = "metadata.name: missing";
    return out;
  }
  if (std::string why = NotReadyReason(status); !why.empty()) {
    out.excluded = why;
    return out;
  }
  v1::NodeSpec& s = out.spec;
  s.set_name(name);

  std::map<std::string, std::string> labels;
  for (const auto& [key, value] : ObjectAt(metadata, "labels").items()) {
    if (value.is_string()) labels[key] = value.get<std::string>();
  }
  for (const auto& [key, value] : labels) (*s.mutable_labels())[key] = value;
  if (auto zone = labels.find("topology.kubernetes.io/zone"); zone != labels.end()) {
    s.set_zone(zone->second);
  }
  if (!translation.rack_label.empty()) {
    if (auto rack = labels.find(translation.rack_label); rack != labels.end()) {
      (*s.mutable_labels())["rack"] = rack->second;
    }
  }

  const json& allocatable = ObjectAt(status, "allocatable");
  auto quantity = [&](const std::string& key) -> std::optional<std::string> {
    const auto it = allocatable.find(key);
    if (it == allocatable.end()) return std::nullopt;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
    return std::string("?");
  };
  auto fail = [&](const std::string& field) {
    out.excluded = "status.allocatable." + field + ": not a quantity";
    return out;
  };
  const std::optional<std::string> cpu = quantity("cpu");
  if (!cpu) {
    out.excluded = "status.allocatable.cpu: missing";
    return out;
  }
  const std::optional<int64_t> cpu_milli = QuantityMilli(*cpu);
  if (!cpu_milli || *cpu_milli < 0) return fail("cpu");
  s.set_cpu_milli(*cpu_milli);
  if (const std::optional<std::string> memory = quantity("memory")) {
    const std::optional<int64_t> mib = QuantityMib(*memory);
    if (!mib || *mib < 0) return fail("memory");
    s.set_memory_mib(*mib);
  }

  // GPUs.
  int64_t gpu_memory_mib = translation.default_gpu_memory_mib;
  if (auto memory = labels.find("nvidia.com/gpu.memory"); memory != labels.end()) {
    if (const std::optional<int64_t> mib = QuantityCount(memory->second)) gpu_memory_mib = *mib;
  }
  std::string model;
  if (auto product = labels.find("nvidia.com/gpu.product"); product != labels.end()) {
    model = ModelFromProductLabel(product->second, gpu_memory_mib);
  }
  if (model.empty()) model = "unknown";
  if (!labels.count("nvidia.com/gpu.memory")) {
    // "A100-80GB", "H200-141GB": the marketed memory.
    const size_t dash = model.rfind('-');
    if (dash != std::string::npos && model.size() > dash + 3 &&
        model.compare(model.size() - 2, 2, "GB") == 0) {
      if (const std::optional<int64_t> gb =
              QuantityCount(model.substr(dash + 1, model.size() - dash - 3));
          gb && *gb > 0) {
        gpu_memory_mib = *gb * 1024;
      }
    }
  }

  int64_t replicas = 1;
  if (auto r = labels.find("nvidia.com/gpu.replicas"); r != labels.end()) {
    if (const std::optional<int64_t> n = QuantityCount(r->second); n && *n > 1) replicas = *n;
  }
  const std::string strategy = labels.count("nvidia.com/gpu.sharing-strategy")
                                   ? labels.at("nvidia.com/gpu.sharing-strategy")
                                   : std::string();
  int64_t advertised = 0;
  for (const char* key : {"nvidia.com/gpu", "nvidia.com/gpu.shared"}) {
    if (const std::optional<std::string> q = quantity(key)) {
      const std::optional<int64_t> n = QuantityCount(*q);
      if (!n || *n < 0) return fail(key);
      advertised += *n;
    }
  }
  const int64_t whole_gpus = replicas > 1 ? advertised / replicas : advertised;

  std::map<std::string, int64_t> mig_counts;
  for (const auto& [key, value] : allocatable.items()) {
    if (key.rfind(kMigResourcePrefix, 0) != 0) continue;
    const std::optional<int64_t> n =
        value.is_string() ? QuantityCount(value.get<std::string>()) : std::nullopt;
    if (!n || *n < 0) return fail(key);
    if (*n > 0) mig_counts[key.substr(kMigResourcePrefix.size())] = *n;
  }
  std::vector<MigGpu> mig_gpus;
  if (!mig_counts.empty()) {
    std::string error;
    if (!PackMigInstances(model, mig_counts, &mig_gpus, &error)) {
      out.excluded = "status.allocatable: " + error;
      return out;
    }
  }

  int index = 0;
  auto add_gpu = [&]() {
    v1::GpuDevice* gpu = s.add_gpus();
    gpu->set_index(index++);
    gpu->set_model(model);
    gpu->set_memory_mib(gpu_memory_mib);
    gpu->set_healthy(true);
    return gpu;
  };
  for (int64_t g = 0; g < whole_gpus; ++g) {
    v1::GpuDevice* gpu = add_gpu();
    if (replicas > 1) {
      gpu->set_sharing(strategy == "mps" ? v1::GPU_SHARING_MPS : v1::GPU_SHARING_TIME_SLICE);
      gpu->set_replicas(static_cast<int32_t>(replicas));
    } else {
      gpu->set_sharing(v1::GPU_SHARING_EXCLUSIVE);
    }
  }
  const mig::ModelProfiles* profiles = mig::FindModel(model);
  for (const MigGpu& layout : mig_gpus) {
    v1::GpuDevice* gpu = add_gpu();
    gpu->set_sharing(v1::GPU_SHARING_MIG);
    gpu->set_mig_managed(false);
    for (const mig::Instance& instance : layout) {
      v1::MigInstance* m = gpu->add_mig_instances();
      m->set_profile(std::string(profiles->names[static_cast<int>(instance.kind)]));
      m->set_start(instance.start);
    }
  }

  for (const json& taint : spec.value("taints", json::array())) {
    if (!taint.is_object()) continue;
    const std::optional<v1::TaintEffect> effect = EffectOf(StringAt(taint, "effect"));
    if (!effect || StringAt(taint, "key").empty()) continue;
    v1::Taint* t = s.add_taints();
    t->set_key(StringAt(taint, "key"));
    t->set_value(StringAt(taint, "value"));
    t->set_effect(*effect);
  }
  // A cordoned node (kubectl cordon) takes no new pods, as the node controller's taint says.
  if (spec.value("unschedulable", false)) {
    v1::Taint* t = s.add_taints();
    t->set_key("node.kubernetes.io/unschedulable");
    t->set_effect(v1::NO_SCHEDULE);
  }
  return out;
}

}  // namespace tessera::kubernetes
