#include "partition/mig_relayout.h"

#include <algorithm>
#include <tuple>

#include "model/placement_terms.h"
#include "tessera/gpu/mig_profiles.h"

namespace tessera {
namespace {

// The instance kind `shape` would take on `gpu`: the named profile, or the smallest kind that
// meets its compute and memory asks (preferring kinds without the media engines).
std::optional<mig::ProfileKind> WantedKind(const GpuSlot& gpu, const TaskShape& shape) {
  if (!shape.mig_profile.empty()) return mig::FindProfile(*gpu.mig_model, shape.mig_profile);
  std::optional<mig::ProfileKind> best;
  auto key = [&](mig::ProfileKind k) {
    return std::tuple(mig::ComputeMilli(k),
                      mig::InstanceMemoryMib(*gpu.mig_model, k, gpu.memory_mib),
                      k == mig::ProfileKind::k1SliceMedia);
  };
  for (int k = 0; k < mig::kNumProfileKinds; ++k) {
    const auto kind = static_cast<mig::ProfileKind>(k);
    if (mig::ComputeMilli(kind) < shape.gpu_milli) continue;
    if (mig::InstanceMemoryMib(*gpu.mig_model, kind, gpu.memory_mib) < shape.gpu_memory_mib) {
      continue;
    }
    if (!best || key(kind) < key(*best)) best = kind;
  }
  return best;
}

// Compute slices not held by a task: the GPUs with the most are planned first.
int FreeComputeSlices(const GpuSlot& gpu) {
  int used = 0;
  for (int i = 0; i < gpu.mig_count; ++i) {
    if ((gpu.mig_busy >> i) & 1u) used += mig::Shape(gpu.mig[i].kind).compute_slices;
  }
  return mig::kComputeSlices - used;
}

bool MayTakeMig(const TaskShape& shape) {
  return shape.form == GpuForm::kAny || shape.form == GpuForm::kMig;
}

}  // namespace

bool RelayoutIdleMig(Cluster& cluster, const TaskShape& shape, int min_tasks,
                     const std::function<bool(const NodeState&)>& usable,
                     const LayoutApplied& applied) {
  if (!MayTakeMig(shape)) return false;
  struct Candidate {
    NodeIndexId node;
    int gpu;
    int free_slices;
  };
  std::vector<Candidate> candidates;
  for (const NodeState& node : cluster.nodes()) {
    if (!node.Schedulable() || !shape.AllowsModel(node.model()) || !Admits(shape, node) ||
        !node.HostFits(shape) || !usable(node)) {
      continue;
    }
    for (int g = 0; g < static_cast<int>(node.gpus().size()); ++g) {
      const GpuSlot& gpu = node.gpus()[g];
      if (gpu.sharing != GpuSharing::kMig || !gpu.mig_managed || !gpu.healthy) continue;
      const int free = FreeComputeSlices(gpu);
      if (free > 0) candidates.push_back({node.id(), g, free});
    }
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const Candidate& a, const Candidate& b) { return a.free_slices > b.free_slices; });
  if (candidates.size() > static_cast<size_t>(kMigGpusPlannedPerJob)) {
    candidates.resize(kMigGpusPlannedPerJob);
  }

  int remaining = min_tasks;
  bool changed = false;
  for (const Candidate& c : candidates) {
    if (remaining <= 0) break;
    NodeState& node = cluster.node(c.node);
    const GpuSlot& gpu = node.gpus()[c.gpu];
    const std::optional<mig::ProfileKind> kind = WantedKind(gpu, shape);
    if (!kind) continue;
    MigGpuView view;
    for (int i = 0; i < gpu.mig_count; ++i) {
      view.instances.push_back(gpu.mig[i]);
      view.busy.push_back((gpu.mig_busy >> i) & 1u);
      view.drain_cost.push_back(-1);
    }
    const std::vector<mig::ProfileKind> wanted(static_cast<size_t>(remaining), *kind);
    const std::optional<MigLayoutPlan> plan = PlanMigLayout(view, wanted, /*max_drain_cost=*/-1);
    if (!plan) continue;
    // Instances of the wanted kind that were free before count too: the plan's gain is what
    // the GPU offers now minus what it offered.
    int offered_before = 0;
    for (int i = 0; i < gpu.mig_count; ++i) {
      offered_before += !((gpu.mig_busy >> i) & 1u) && gpu.mig[i].kind == *kind;
    }
    node.SetMigLayout(c.gpu, plan->layout);
    MigLayoutChange change;
    change.node = &node;
    change.gpu = c.gpu;
    change.offered = plan->satisfied;
    for (const mig::Instance& instance : plan->layout) {
      v1::MigInstance m;
      m.set_profile(std::string(gpu.mig_model->names[static_cast<int>(instance.kind)]));
      m.set_start(instance.start);
      change.described +=
          (change.described.empty() ? "" : " ") + m.profile() + "@" + std::to_string(m.start());
      change.layout.push_back(std::move(m));
    }
    applied(change);
    remaining -= std::max(1, plan->satisfied - offered_before);
    changed = true;
  }
  return changed;
}

std::optional<MigDrainPlan> PlanMigDrain(const Cluster& cluster, const TaskShape& shape,
                                         int min_tasks, const MigHolderOf& holder_of) {
  if (!MayTakeMig(shape)) return std::nullopt;
  std::optional<MigDrainPlan> best;
  int planned = 0;
  for (const NodeState& node : cluster.nodes()) {
    if (planned >= kMigGpusPlannedPerJob) break;
    if (!node.Schedulable() || !shape.AllowsModel(node.model()) || !Admits(shape, node) ||
        !node.HostFits(shape)) {
      continue;
    }
    for (int g = 0; g < static_cast<int>(node.gpus().size()) && planned < kMigGpusPlannedPerJob;
         ++g) {
      const GpuSlot& gpu = node.gpus()[g];
      if (gpu.sharing != GpuSharing::kMig || !gpu.mig_managed || !gpu.healthy || gpu.users == 0) {
        continue;
      }
      const std::optional<mig::ProfileKind> kind = WantedKind(gpu, shape);
      if (!kind) continue;
      MigGpuView view;
      std::vector<uint64_t> holders;
      bool any_drainable = false;
      for (int i = 0; i < gpu.mig_count; ++i) {
        view.instances.push_back(gpu.mig[i]);
        const bool busy = (gpu.mig_busy >> i) & 1u;
        view.busy.push_back(busy);
        const MigInstanceHolder h = busy ? holder_of(node, g, i) : MigInstanceHolder{};
        view.drain_cost.push_back(h.cost);
        holders.push_back(h.job);
        any_drainable |= h.cost >= 0;
      }
      if (!any_drainable) continue;
      ++planned;
      const std::vector<mig::ProfileKind> wanted(static_cast<size_t>(min_tasks), *kind);
      std::optional<MigLayoutPlan> plan = PlanMigLayout(view, wanted, kMaxMigDrainLostGpuUs);
      if (!plan || plan->drained.empty()) continue;
      if (best &&
          (plan->satisfied < best->plan.satisfied || (plan->satisfied == best->plan.satisfied &&
                                                      plan->drain_cost >= best->plan.drain_cost))) {
        continue;
      }
      MigDrainPlan candidate{node.id(), g, *plan, {}};
      for (int i : plan->drained) candidate.victims.push_back(holders[i]);
      std::sort(candidate.victims.begin(), candidate.victims.end());
      candidate.victims.erase(std::unique(candidate.victims.begin(), candidate.victims.end()),
                              candidate.victims.end());
      best = std::move(candidate);
    }
  }
  return best;
}

}  // namespace tessera
