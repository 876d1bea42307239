// MIG re-partitioning: when a job waits for a MIG instance that no GPU offers free, free
// instances of GPUs the scheduler manages are re-shaped by the layout planner
// (RepartitionMigFor); busy instances stay where they are. When that is not enough, the
// cheapest lower-priority tasks whose instances a new layout would replace are preempted
// (DrainMigFor), and what they free is held for the job until it is placed.
#include <algorithm>

#include "common/log.h"
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
    // A node whose free room is held for another job (a drain or preemption under way) is
    // not re-shaped for this one.
    if (!node.Schedulable() || !job.shape.AllowsModel(node.model()) || !node.HostFits(job.shape) ||
        !reservation_filter_->Accept(node, job.shape)) {
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
    std::string described;
    for (const mig::Instance& instance : plan->layout) {
      v1::MigInstance m;
      m.set_profile(std::string(gpu.mig_model->names[static_cast<int>(instance.kind)]));
      m.set_start(instance.start);
      described += (described.empty() ? "" : " ") + m.profile() + "@" + std::to_string(m.start());
      layout.push_back(std::move(m));
    }
    executor_->ApplyMigLayout(node.name(), c.gpu, layout);
    PersistNodeEvent(node.name(),
                     "GPU " + std::to_string(c.gpu) + " re-partitioned to " + described +
                         " for job " + std::to_string(job.id),
                     v1::MIG_LAYOUT_CHANGED);
    placer_.Refresh(node.id());
    LogInfo(options_.log, "re-partitioned MIG GPU {} of {} for job {}: {} instance(s) now offered",
            c.gpu, node.name(), job.id, plan->satisfied);
    remaining -= std::max(1, plan->satisfied - offered_before);
    changed = true;
  }
  return changed;
}

}  // namespace tessera

namespace tessera {

bool Engine::DrainMigFor(JobRecord& job, int min_tasks) {
  if (!options_.preemption.enabled) return false;
  if (job.shape.form != GpuForm::kAny && job.shape.form != GpuForm::kMig) return false;
  const TimestampUs now = clock_.NowUs();

  // The job on each busy instance, and what stopping it would lose.
  struct Holder {
    uint64_t job = 0;
    int64_t cost = -1;  // lost GPU-microseconds, or -1 when it may not be drained.
  };
  TimestampUs retry_at = 0;  // when a guard that refused a holder will allow it.
  auto holder_of = [&](const NodeState& node, int gpu, int instance) {
    Holder h;
    if (node.id() >= tasks_by_node_.size()) return h;
    for (const auto& [id, index] : tasks_by_node_[node.id()]) {
      const JobRecord& v = jobs_.at(id);
      const PlacedTask* t = nullptr;
      for (const PlacedTask& p : v.tasks) {
        if (p.index == index && !p.exited) t = &p;
      }
      if (t == nullptr || t->allocation.node != node.id() ||
          t->allocation.mig_start != node.gpus()[gpu].mig[instance].start ||
          !((t->allocation.gpu_mask >> gpu) & 1u)) {
        continue;
      }
      h.job = id;
      const bool candidate = v.state == v1::RUNNING && !v.preempting && v.preemptible &&
                             v.key.priority < job.key.priority;
      if (candidate && preemption_guard_.MayPreempt(now, v.start_time_us, v.preempted_at_us)) {
        h.cost = LostGpuUs(v, now);
      } else if (candidate) {
        const TimestampUs allowed = preemption_guard_.AllowedAt(v.start_time_us, v.preempted_at_us);
        if (retry_at == 0 || allowed < retry_at) retry_at = allowed;
      }
      return h;
    }
    return h;
  };

  struct Best {
    NodeIndexId node = 0;
    int gpu = 0;
    MigLayoutPlan plan;
    std::vector<uint64_t> victims;
  };
  std::optional<Best> best;
  int planned = 0;
  for (const NodeState& node : cluster_.nodes()) {
    if (planned >= kMigGpusPlannedPerJob) break;
    if (!node.Schedulable() || !job.shape.AllowsModel(node.model()) || !node.HostFits(job.shape)) {
      continue;
    }
    for (int g = 0; g < static_cast<int>(node.gpus().size()) && planned < kMigGpusPlannedPerJob;
         ++g) {
      const GpuSlot& gpu = node.gpus()[g];
      if (gpu.sharing != GpuSharing::kMig || !gpu.mig_managed || !gpu.healthy || gpu.users == 0) {
        continue;
      }
      const std::optional<mig::ProfileKind> kind = WantedKind(gpu, job.shape);
      if (!kind) continue;
      MigGpuView view;
      std::vector<uint64_t> holders;
      bool any_drainable = false;
      for (int i = 0; i < gpu.mig_count; ++i) {
        view.instances.push_back(gpu.mig[i]);
        const bool busy = (gpu.mig_busy >> i) & 1u;
        view.busy.push_back(busy);
        Holder h = busy ? holder_of(node, g, i) : Holder{};
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
      Best candidate{node.id(), g, *plan, {}};
      for (int i : plan->drained) candidate.victims.push_back(holders[i]);
      std::sort(candidate.victims.begin(), candidate.victims.end());
      candidate.victims.erase(std::unique(candidate.victims.begin(), candidate.victims.end()),
                              candidate.victims.end());
      best = std::move(candidate);
    }
  }
  // A guard said "not yet": look again when it allows, even if nothing else happens.
  if (!best) {
    if (retry_at > now) ArmPreemptionRetry(retry_at);
    return false;
  }
  const int whole = static_cast<int>(best->victims.size());
  if (!preemption_guard_.WithinRate(now, whole)) {
    ArmPreemptionRetry(preemption_guard_.RateAllowsAt(now, whole));
    return false;
  }
  preemption_guard_.Record(now, whole);
  const std::string why = "preempted to re-partition MIG GPU " + std::to_string(best->gpu) +
                          " of node '" + cluster_.node(best->node).name() + "' for job " +
                          std::to_string(job.id);
  lost_gpu_us_ += best->plan.drain_cost;
  int64_t grace_us = 0;
  ResourceVector freed;  // what the victims free on the drained GPU's node.
  for (uint64_t id : best->victims) {
    JobRecord& victim = jobs_.at(id);
    grace_us = std::max(grace_us, victim.grace_ms * 1000);
    for (const PlacedTask& t : victim.tasks) {
      if (!t.exited && t.allocation.node == best->node) freed += t.allocation.Vector();
    }
    ++preempted_;
    Preempt(victim, why);
  }
  LogInfo(options_.log, "draining {} job(s) on MIG GPU {} of {} for job {}", whole, best->gpu,
          cluster_.node(best->node).name(), job.id);
  // The freed room is held for this job, so a job that fits it first cannot take it.
  AwaitVictims(job, {best->node}, {freed}, grace_us, "waiting for MIG instances being drained");
  return true;
}

}  // namespace tessera
