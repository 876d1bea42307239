// The stored and reported form of a GPU share (v1::GpuPartition), made from a TaskAllocation
// and turned back into one when the engine reloads running jobs after a restart.
#pragma once

#include "model/node_state.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

// How `allocation`, a share of one GPU of `node`, is enforced: the GPU's sharing mode and, for
// MIG and vGPU, the instance or type.
v1::GpuPartition DescribeShare(const NodeState& node, const TaskAllocation& allocation);

// Marks `allocation` (GPUs and amounts already filled from `placement`) as the share that
// `placement.partition()` describes. A MIG instance missing from the GPU's current layout is
// re-created when the scheduler manages the layout and the slices are free. False when the share
// cannot exist on this node any more (the layout was changed by an operator, the GPU's mode
// changed), so the task cannot be running there.
bool RestoreShare(NodeState& node, const v1::TaskPlacement& placement, TaskAllocation& allocation);

}  // namespace tessera
