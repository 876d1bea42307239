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
#pragma once

#include "fairshare/queue_tree.h"
#include "placement/placer.h"

namespace tessera {

// Keeps the first tasks of `result` (placed) whose allocations the quotas on the path from
// `leaf` admit together and releases the others through `placer`. When fewer than `min_tasks`
// are admitted, every task is released, `result` becomes "retry later" and the returned
// violation names the first quota that the charge of `min_tasks` of them exceeds; otherwise
// nullopt.
std::optional<QuotaViolation> KeepWithinQuota(const QueueTree& queues, QueueId leaf, Placer& placer,
                                              PlacementResult& result, int min_tasks);

}  // namespace tessera
