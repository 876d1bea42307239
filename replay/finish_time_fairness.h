// Finish-time fairness (Themis, Mahajan et al., NSDI'20): rho = a job's completion time in the
// shared cluster over its completion time "alone on its fair share". rho <= 1 means the job did
// at least as well as a fair split of the cluster would have given it; the worst rho over the
// jobs is the headline, since a policy can keep the average low by starving a few.
//
// "Alone on its fair share", as computed here (Themis leaves the share to the deployment):
//   - At the job's arrival, the queues with active jobs (submitted and not yet ended, the job
//     itself included) split the cluster's GPUs by weight, w_q / sum of active w; a queue's part
//     is split evenly among its active jobs. That gives the job a fair share F of GPU compute.
//     The queue hierarchy is flattened: each leaf counts with its own resolved weight.
//   - A job that asks for D <= F runs at full speed on its share, so T_fair = its duration. A job
//     asking for more than its share runs as if slowed to F/D of full speed (a time-sliced
//     share), T_fair = duration x D / F. CPU-only jobs (D = 0) have T_fair = duration.
//   - rho = (end - submit) / T_fair, for finished jobs only.
// Contention is taken at arrival, not averaged over the job's life as Themis's N_avg does; a job
// arriving in a quiet moment followed by a burst gets a generous T_fair, so rho errs high.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "trace_replay.h"

namespace tessera::replay {

// rho per job, parallel to result.jobs; a negative value where the job did not finish (or was
// never submitted). `capacity_gpu_milli`: the cluster's GPU compute, 1000 per GPU.
std::vector<double> FinishTimeFairness(const ReplayResult& result, int64_t capacity_gpu_milli);

}  // namespace tessera::replay
