// The synthetic cluster of `decide` and `churn`: N nodes of 8 GPUs, half A100-80GB, 30 %
// H100-80GB (both one NVSwitch domain of 8) and 20 % L40S (two islands of 4), 128 cores and
// 1 TiB each, in racks of 32 nodes labelled "rack" that mix the models in the same proportions.
// One definition, so the two benchmarks' results compare.
#pragma once

#include "tessera/v1/node.pb.h"

namespace tessera::bench {

inline constexpr int kMixedClusterGpusPerNode = 8;

v1::SimulatedCluster MixedGpuCluster(int nodes);

}  // namespace tessera::bench
