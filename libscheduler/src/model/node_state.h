// NodeState: one node's capacity, what is free on it, and its GPUs one by one.
//
// A node has at most 32 GPUs of one model (a GPU set is a 32-bit mask). Free capacity changes
// only through Apply and Release of a TaskAllocation, which keep the derived summaries
// (whole free GPUs, largest free GPU share) current for the placement index, and give the node a
// new stamp so that scorers may cache what they computed from the node's state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/gpu_slot.h"
#include "model/node_labels.h"
#include "model/resource_vector.h"
#include "model/task_shape.h"

namespace tessera {

using NodeIndexId = uint32_t;

// What one placed task holds on one node.
struct TaskAllocation {
  NodeIndexId node = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  uint32_t gpu_mask = 0;       // bit i = GPU i of the node.
  int32_t gpu_milli = 0;       // share held on each GPU in the mask.
  int64_t gpu_memory_mib = 0;  // memory held on each GPU in the mask.
  // A share of one GPU (GpuSlot::OfferShare) rather than whole GPUs; a MIG 7g instance is a
  // share that counts 1000.
  bool share = false;
  // The MIG instance held, named by its first memory slice (-1: none). Not by its index in
  // GpuSlot::mig: a re-partition that keeps the instance may renumber the layout around it.
  int8_t mig_start = -1;
  int32_t vgpu_framebuffer_gib = 0;  // the vGPU type held.

  int gpu_count() const { return __builtin_popcount(gpu_mask); }
  // In the same units as queue accounting.
  ResourceVector Vector() const {
    return {cpu_milli, memory_mib, int64_t{gpu_count()} * gpu_milli,
            int64_t{gpu_count()} * gpu_memory_mib};
  }
};

// How to choose among a node's GPUs when several fit.
enum class DevicePreference {
  kTightest,  // the fullest GPUs / the NVLink domain with the fewest free GPUs (binpack).
  kLoosest,   // the emptiest ones (spread).
};

// Whether a node is burst capacity (a capacity provider added it), and of which market. Set
// from the node's label kBurstMarketLabel ("spot" or "on-demand"), which the scheduler gives the
// nodes of a capacity provider's node groups as they join.
enum class BurstMarket : uint8_t { kNone, kOnDemand, kSpot };
inline constexpr const char* kBurstMarketLabel = "tessera.io/burst-market";
inline constexpr const char* kNodeGroupLabel = "tessera.io/node-group";

class NodeState {
 public:
  static constexpr int kMaxGpus = 32;

  NodeState(NodeIndexId id, std::string name, int64_t cpu_milli, int64_t memory_mib, int model,
            std::vector<GpuSlot> gpus, std::string rack);

  NodeIndexId id() const { return id_; }
  const std::string& name() const { return name_; }
  int model() const { return model_; }  // -1 for a node without GPUs.
  const std::string& rack() const { return rack_; }
  void set_rack(std::string rack) { rack_ = std::move(rack); }
  const std::vector<GpuSlot>& gpus() const { return gpus_; }
  // Its labels and taints, interned (model/placement_terms.h matches jobs against them).
  const NodeLabels& labels() const { return *labels_; }
  // The same object, for those that keep it (the label index, feasibility snapshots).
  const std::shared_ptr<const NodeLabels>& shared_labels() const { return labels_; }
  void set_labels(std::shared_ptr<const NodeLabels> labels) {
    hard_taints_ = labels->hard_taints;
    soft_taints_ = labels->soft_taints;
    labels_ = std::move(labels);
  }
  // The same as labels().hard_taints and labels().soft_taints, kept here so that a job without
  // placement terms reads no more than the node itself.
  bool hard_taints() const { return hard_taints_; }
  BurstMarket burst() const { return burst_; }
  void set_burst(BurstMarket market) { burst_ = market; }
  bool soft_taints() const { return soft_taints_; }

  int64_t cpu_free() const { return cpu_free_; }
  int64_t memory_free() const { return memory_free_; }
  int whole_free_gpus() const { return whole_free_gpus_; }
  int32_t max_free_milli() const { return max_free_milli_; }
  int running_tasks() const { return running_tasks_; }
  // Changes whenever free capacity or GPU health changes, and is unique across every node of the
  // process, so a cache keyed by stamp never mistakes one node state for another.
  uint64_t stamp() const { return stamp_; }

  ResourceVector Capacity() const;
  ResourceVector Allocated() const;

  bool cordoned() const { return cordoned_; }
  bool draining() const { return draining_; }
  bool present() const { return present_; }
  void set_cordoned(bool v) { cordoned_ = v; }
  void set_draining(bool v) { draining_ = v; }
  void set_present(bool v) { present_ = v; }
  // The backend reported a new shape for the node (capacity, GPUs, their layout) while tasks
  // ran here: it takes effect once they have ended, and until then nothing new is placed here.
  bool reshape_pending() const { return reshape_pending_; }
  void set_reshape_pending(bool v) { reshape_pending_ = v; }
  // New work may be placed here.
  bool Schedulable() const { return present_ && !cordoned_ && !draining_ && !reshape_pending_; }

  // True when cpu and memory for one more task of `shape` are free.
  bool HostFits(const TaskShape& shape) const {
    return cpu_free_ >= shape.cpu_milli && memory_free_ >= shape.memory_mib;
  }

  // Chooses devices for one task of `shape` on this node as it is now, or nullopt when it does
  // not fit. Does not change the node.
  std::optional<TaskAllocation> Fit(const TaskShape& shape, DevicePreference preference) const;
  // Whether Fit would find devices (for either preference), answered from the node's summaries
  // where the devices cannot matter: whole GPUs wanting no NVLink domain and no GPU memory in
  // particular fit wherever enough GPUs are free.
  bool Fits(const TaskShape& shape) const;
  // The allocation of exactly the GPUs in `gpu_mask` to one task of `shape`, or nullopt when
  // they do not fit it (for scorers that weigh device choices themselves). A CPU-only shape
  // takes an empty mask.
  std::optional<TaskAllocation> FitOn(const TaskShape& shape, uint32_t gpu_mask) const;

  void Apply(const TaskAllocation& allocation);
  void Release(const TaskAllocation& allocation);

  // Marks a GPU healthy or not; an unhealthy GPU takes no new work.
  void SetGpuHealthy(int gpu, bool healthy);

  // Replaces the MIG layout of a GPU. Every instance a task holds must be in the new layout at
  // the same start with the same kind (checked), and the new layout must be valid.
  void SetMigLayout(int gpu, std::span<const mig::Instance> layout);

 private:
  std::optional<uint32_t> ChooseWholeGpus(const TaskShape& shape,
                                          DevicePreference preference) const;
  std::optional<std::pair<int, ShareOffer>> ChooseShareGpu(const TaskShape& shape,
                                                           DevicePreference preference) const;
  TaskAllocation ShareAllocation(const TaskShape& shape, int gpu, const ShareOffer& offer) const;
  void RefreshSummaries();

  NodeIndexId id_;
  std::string name_;
  int model_;
  std::string rack_;
  int64_t cpu_capacity_;
  int64_t memory_capacity_;
  int64_t cpu_free_;
  int64_t memory_free_;
  std::vector<GpuSlot> gpus_;
  // Never null: a node without labels points at NoLabels(), owning nothing.
  std::shared_ptr<const NodeLabels> labels_{std::shared_ptr<void>(), &NoLabels()};
  int whole_free_gpus_ = 0;
  int32_t max_free_milli_ = 0;
  int running_tasks_ = 0;
  uint64_t stamp_ = 0;
  bool cordoned_ = false;
  bool draining_ = false;
  bool hard_taints_ = false;
  BurstMarket burst_ = BurstMarket::kNone;
  bool soft_taints_ = false;
  bool present_ = true;
  bool reshape_pending_ = false;
};

}  // namespace tessera
