// KeepWithinQuota: the second, exact quota check of a placement.
//
// A task is charged against its queue's guarantees, borrowing limits and caps what its
// allocation holds (TaskAllocation::Vector): whole GPUs at 1000 milli-GPUs each, a MIG
// instance its compute slices' share and its real memory, a time slice 1/replicas of its GPU,
// an MPS share its fraction, a vGPU 1/instances of its GPU and its framebuffer. Before the
// placer runs, the engine checks quotas with the least a task can hold
// (TaskShape::RequestVector), since how much a time slice or a vGPU holds depends on the GPU
// chosen. After it runs, the tasks placed are charged what they hold, and those the quotas do
// not admit are released again here, so no form of share ever takes more than a quota allows.
//
// Quotas per GPU model (QueueSpec.gpu_models) are checked the same two ways: before placement,
// the models whose quotas do not admit the job's minimum are taken out of the models it may be
// placed on (ModelsWithinQuota), so a job that accepts H100s and T4s goes to T4s when its
// queue's H100 cap is reached; after, each task is charged to the model of its node.
#pragma once

#include "fairshare/queue_tree.h"
#include "model/cluster.h"
#include "model/gpu_model_amounts.h"
#include "placement/placer.h"

namespace tessera {

// What `allocation` is charged: its vector, and its GPUs on the model of its node.
ResourceCharge ChargeOf(const Cluster& cluster, const TaskAllocation& allocation);

// The GPU models a job may be placed on as far as the per-model quotas on the path from `leaf`
// go.
struct ModelsInQuota {
  // False when no per-model limit narrows `shape`'s models (place it as it is).
  bool narrowed = false;
  ModelMask models = 0;  // when narrowed: the models to place on; 0: none is admitted.
  std::optional<QuotaViolation> refusal;  // the first per-model limit that refused a model.
};
// The models `shape` allows (of those `models` knows) whose caps and borrowing limits admit
// `tasks` more of its tasks on that one model.
ModelsInQuota ModelsWithinQuota(const QueueTree& queues, const GpuModels& models, QueueId leaf,
                                const TaskShape& shape, int tasks);

// Keeps the first tasks of `result` (placed) whose allocations the quotas on the path from
// `leaf` admit together and releases the others through `placer`. When fewer than `min_tasks`
// are admitted, every task is released, `result` becomes "retry later" and the returned
// violation names the first quota that the charge of `min_tasks` of them exceeds; otherwise
// nullopt.
std::optional<QuotaViolation> KeepWithinQuota(const QueueTree& queues, const Cluster& cluster,
                                              QueueId leaf, Placer& placer, PlacementResult& result,
                                              int min_tasks);

}  // namespace tessera
