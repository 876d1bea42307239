#include "model/node_state.h"

#include "common/check.h"

#include <algorithm>
#include <array>
#include <atomic>

namespace tessera {
namespace {

// Source of node stamps. Relaxed: a stamp only has to be unique, and it is taken once per
// change of a node, never per candidate looked at.
std::atomic<uint64_t> next_stamp{1};

}  // namespace

NodeState::NodeState(NodeIndexId id, std::string name, int64_t cpu_milli, int64_t memory_mib,
                     int model, std::vector<GpuSlot> gpus, std::string rack)
    : id_(id),
      name_(std::move(name)),
      model_(model),
      rack_(std::move(rack)),
      cpu_capacity_(cpu_milli),
      memory_capacity_(memory_mib),
      cpu_free_(cpu_milli),
      memory_free_(memory_mib),
      gpus_(std::move(gpus)) {
  TESSERA_DCHECK(gpus_.size() <= kMaxGpus);
  RefreshSummaries();
}

ResourceVector NodeState::Capacity() const {
  int64_t gpu_memory = 0;
  for (const GpuSlot& g : gpus_) gpu_memory += g.memory_mib;
  return {cpu_capacity_, memory_capacity_, int64_t{1000} * static_cast<int64_t>(gpus_.size()),
          gpu_memory};
}

ResourceVector NodeState::Allocated() const {
  ResourceVector used{cpu_capacity_ - cpu_free_, memory_capacity_ - memory_free_, 0, 0};
  for (const GpuSlot& g : gpus_) {
    used[static_cast<int>(Resource::kGpu)] += 1000 - g.free_milli;
    used[static_cast<int>(Resource::kGpuMemory)] += g.memory_mib - g.free_memory_mib;
  }
  return used;
}

std::optional<TaskAllocation> NodeState::Fit(const TaskShape& shape,
                                             DevicePreference preference) const {
  if (!HostFits(shape)) return std::nullopt;
  TaskAllocation a;
  a.node = id_;
  a.cpu_milli = shape.cpu_milli;
  a.memory_mib = shape.memory_mib;
  if (!shape.needs_gpu()) return a;
  if (!shape.AllowsModel(model_)) return std::nullopt;

  if (shape.whole_gpus()) {
    std::optional<uint32_t> mask = ChooseWholeGpus(shape, preference);
    if (!mask) return std::nullopt;
    a.gpu_mask = *mask;
    a.gpu_milli = 1000;
    a.gpu_memory_mib = gpus_[__builtin_ctz(*mask)].memory_mib;
    return a;
  }
  // A share of one GPU.
  std::optional<std::pair<int, ShareOffer>> chosen = ChooseShareGpu(shape, preference);
  if (!chosen) return std::nullopt;
  return ShareAllocation(shape, chosen->first, chosen->second);
}

bool NodeState::Fits(const TaskShape& shape) const {
  if (shape.whole_gpus() && !shape.same_nvlink && shape.gpu_memory_mib == 0) {
    return HostFits(shape) && shape.AllowsModel(model_) && whole_free_gpus_ >= shape.gpu_count;
  }
  return Fit(shape, DevicePreference::kTightest).has_value();
}

TaskAllocation NodeState::ShareAllocation(const TaskShape& shape, int gpu,
                                          const ShareOffer& offer) const {
  TaskAllocation a;
  a.node = id_;
  a.cpu_milli = shape.cpu_milli;
  a.memory_mib = shape.memory_mib;
  a.gpu_mask = 1u << gpu;
  a.gpu_milli = offer.milli;
  a.gpu_memory_mib = offer.memory_mib;
  a.share = true;
  a.mig_start = offer.mig_instance >= 0
                    ? static_cast<int8_t>(gpus_[gpu].mig[offer.mig_instance].start)
                    : int8_t{-1};
  a.vgpu_framebuffer_gib = offer.vgpu_framebuffer_gib;
  return a;
}

std::optional<TaskAllocation> NodeState::FitOn(const TaskShape& shape, uint32_t gpu_mask) const {
  if (!HostFits(shape)) return std::nullopt;
  TaskAllocation a;
  a.node = id_;
  a.cpu_milli = shape.cpu_milli;
  a.memory_mib = shape.memory_mib;
  if (!shape.needs_gpu()) {
    if (gpu_mask != 0) return std::nullopt;
    return a;
  }
  if (!shape.AllowsModel(model_) || __builtin_popcount(gpu_mask) != shape.gpu_count) {
    return std::nullopt;
  }
  if (gpus_.size() < static_cast<size_t>(kMaxGpus) && (gpu_mask >> gpus_.size()) != 0) {
    return std::nullopt;
  }
  const int first = __builtin_ctz(gpu_mask);
  if (!shape.whole_gpus()) {
    std::optional<ShareOffer> offer = OfferShare(gpus_[first], shape);
    if (!offer) return std::nullopt;
    return ShareAllocation(shape, first, *offer);
  }
  for (uint32_t m = gpu_mask; m != 0; m &= m - 1) {
    const GpuSlot& g = gpus_[__builtin_ctz(m)];
    if (!g.TakesWholeTask() || shape.gpu_memory_mib > g.memory_mib) return std::nullopt;
    if (shape.same_nvlink && g.nvlink_domain != gpus_[first].nvlink_domain) return std::nullopt;
  }
  a.gpu_mask = gpu_mask;
  a.gpu_milli = 1000;
  a.gpu_memory_mib = gpus_[first].memory_mib;
  return a;
}

std::optional<uint32_t> NodeState::ChooseWholeGpus(const TaskShape& shape,
                                                   DevicePreference preference) const {
  // Free GPUs grouped by NVLink domain, in order of first appearance.
  struct Domain {
    int32_t id;
    uint32_t mask;
    int count;
  };
  std::array<Domain, kMaxGpus> domains{};
  int num_domains = 0;
  int total_free = 0;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const GpuSlot& g = gpus_[i];
    if (!g.TakesWholeTask() || shape.gpu_memory_mib > g.memory_mib) continue;
    int d = 0;
    while (d < num_domains && domains[d].id != g.nvlink_domain) ++d;
    if (d == num_domains) domains[num_domains++] = {g.nvlink_domain, 0, 0};
    domains[d].mask |= 1u << i;
    ++domains[d].count;
    ++total_free;
  }
  const int need = shape.gpu_count;
  if (total_free < need) return std::nullopt;

  // Prefer one domain: the one with the fewest free GPUs that suffice (tightest) or the most.
  int best = -1;
  for (int d = 0; d < num_domains; ++d) {
    if (domains[d].count < need) continue;
    if (best < 0) {
      best = d;
    } else if (preference == DevicePreference::kTightest ? domains[d].count < domains[best].count
                                                         : domains[d].count > domains[best].count) {
      best = d;
    }
  }
  auto take_lowest = [](uint32_t mask, int n) {
    uint32_t out = 0;
    for (int i = 0; i < n; ++i) {
      uint32_t bit = mask & (~mask + 1);
      out |= bit;
      mask &= ~bit;
    }
    return out;
  };
  if (best >= 0) return take_lowest(domains[best].mask, need);
  if (shape.same_nvlink) return std::nullopt;

  // Span domains, largest first, so the task touches as few domains as possible.
  std::sort(domains.begin(), domains.begin() + num_domains,
            [](const Domain& a, const Domain& b) { return a.count > b.count; });
  uint32_t mask = 0;
  int remaining = need;
  for (int d = 0; d < num_domains && remaining > 0; ++d) {
    int n = std::min(remaining, domains[d].count);
    mask |= take_lowest(domains[d].mask, n);
    remaining -= n;
  }
  return mask;
}

std::optional<std::pair<int, ShareOffer>> NodeState::ChooseShareGpu(
    const TaskShape& shape, DevicePreference preference) const {
  std::optional<std::pair<int, ShareOffer>> best;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const GpuSlot& g = gpus_[i];
    if (g.free_milli < shape.gpu_milli) continue;
    std::optional<ShareOffer> offer = OfferShare(g, shape);
    if (!offer) continue;
    if (!best) {
      best.emplace(static_cast<int>(i), *offer);
      continue;
    }
    // Prefer the smallest share that satisfies, then the fullest (or emptiest) GPU.
    const GpuSlot& current = gpus_[best->first];
    const bool smaller = offer->milli < best->second.milli;
    const bool same = offer->milli == best->second.milli;
    const bool tighter = preference == DevicePreference::kTightest
                             ? g.free_milli < current.free_milli
                             : g.free_milli > current.free_milli;
    if (smaller || (same && tighter)) best.emplace(static_cast<int>(i), *offer);
  }
  return best;
}

void NodeState::Apply(const TaskAllocation& a) {
  cpu_free_ -= a.cpu_milli;
  memory_free_ -= a.memory_mib;
  if (a.share) {
    GpuSlot& g = gpus_[__builtin_ctz(a.gpu_mask)];
    const int instance = a.mig_start >= 0 ? FindMigInstance(g, a.mig_start) : -1;
    TESSERA_CHECK(a.mig_start < 0 || instance >= 0, "took a MIG instance missing on " + name_);
    TakeShare(g, a.gpu_milli, a.gpu_memory_mib, instance, a.vgpu_framebuffer_gib);
    ++running_tasks_;
    RefreshSummaries();
    return;
  }
  for (uint32_t m = a.gpu_mask; m != 0; m &= m - 1) {
    GpuSlot& g = gpus_[__builtin_ctz(m)];
    g.free_milli -= a.gpu_milli;
    g.free_memory_mib -= a.gpu_memory_mib;
    TESSERA_CHECK(g.free_milli >= 0 && g.free_memory_mib >= 0, "over-allocated a GPU of " + name_);
  }
  ++running_tasks_;
  RefreshSummaries();
}

void NodeState::Release(const TaskAllocation& a) {
  cpu_free_ += a.cpu_milli;
  memory_free_ += a.memory_mib;
  if (a.share) {
    GpuSlot& g = gpus_[__builtin_ctz(a.gpu_mask)];
    const int instance = a.mig_start >= 0 ? FindMigInstance(g, a.mig_start) : -1;
    TESSERA_CHECK(a.mig_start < 0 || instance >= 0, "returned a MIG instance missing on " + name_);
    ReturnShare(g, a.gpu_milli, a.gpu_memory_mib, instance);
    --running_tasks_;
    RefreshSummaries();
    return;
  }
  for (uint32_t m = a.gpu_mask; m != 0; m &= m - 1) {
    GpuSlot& g = gpus_[__builtin_ctz(m)];
    g.free_milli += a.gpu_milli;
    g.free_memory_mib += a.gpu_memory_mib;
    TESSERA_CHECK(g.free_milli <= 1000 && g.free_memory_mib <= g.memory_mib,
                  "released more than was held on " + name_);
  }
  --running_tasks_;
  RefreshSummaries();
}

void NodeState::SetGpuHealthy(int gpu, bool healthy) {
  gpus_[gpu].healthy = healthy;
  RefreshSummaries();
}

void NodeState::SetMigLayout(int gpu, std::span<const mig::Instance> layout) {
  GpuSlot& g = gpus_[gpu];
  TESSERA_CHECK(mig::IsValidLayout(layout), "invalid MIG layout for " + name_);
  uint8_t busy = 0;
  for (int i = 0; i < g.mig_count; ++i) {
    if (!((g.mig_busy >> i) & 1u)) continue;
    auto it = std::find(layout.begin(), layout.end(), g.mig[i]);
    TESSERA_CHECK(it != layout.end(),
                  "a MIG layout change would remove a busy instance on " + name_);
    busy |= uint8_t(1u << (it - layout.begin()));
  }
  g.mig_count = static_cast<uint8_t>(layout.size());
  std::copy(layout.begin(), layout.end(), g.mig.begin());
  g.mig_busy = busy;
  RefreshSummaries();
}

void NodeState::RefreshSummaries() {
  stamp_ = next_stamp.fetch_add(1, std::memory_order_relaxed);
  whole_free_gpus_ = 0;
  max_free_milli_ = 0;
  for (const GpuSlot& g : gpus_) {
    if (g.TakesWholeTask()) ++whole_free_gpus_;
    max_free_milli_ = std::max(max_free_milli_, LargestShare(g));
  }
}

}  // namespace tessera
