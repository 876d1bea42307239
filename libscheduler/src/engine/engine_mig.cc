// MIG re-partitioning: when a job waits for a MIG instance that no GPU offers free, free
// instances of GPUs the scheduler manages are re-shaped by the layout planner. Only free
// instances change: tasks on busy instances are never stopped for it (the planner can price
// draining them, but the engine does not drain yet).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/engine.h"
#include "placement/mig_layout_planner.h"

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

}  // namespace

bool Engine::RepartitionMigFor(const JobRecord& job, int min_tasks) {
  if (job.shape.form != GpuForm::kAny && job.shape.form != GpuForm::kMig) return false;
  struct Candidate {
    NodeIndexId node;
    int gpu;
    int free_slices;
  };
  std::vector<Candidate> candidates;
  for (const NodeState& node : cluster_.nodes()) {
    if (!node.Schedulable() || !job.shape.AllowsModel(node.model()) || !node.HostFits(job.shape)) {
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
    NodeState& node = cluster_.node(c.node);
    const GpuSlot& gpu = node.gpus()[c.gpu];
    const std::optional<mig::ProfileKind> kind = WantedKind(gpu, job.shape);
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
    std::vector<v1::MigInstance> layout;
    for (const mig::Instance& instance : plan->layout) {
      v1::MigInstance m;
      m.set_profile(std::string(gpu.mig_model->names[static_cast<int>(instance.kind)]));
      m.set_start(instance.start);
      layout.push_back(std::move(m));
    }
    executor_->ApplyMigLayout(node.name(), c.gpu, layout);
    placer_.Refresh(node.id());
    spdlog::info("re-partitioned MIG GPU {} of {} for job {}: {} instance(s) now offered", c.gpu,
                 node.name(), job.id, plan->satisfied);
    remaining -= std::max(1, plan->satisfied - offered_before);
    changed = true;
  }
  return changed;
}

}  // namespace tessera
