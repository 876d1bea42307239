// FailedShapes: which jobs a failure within a backfill pass rules out without a search.
#include "engine/failed_shapes.h"

#include <doctest/doctest.h>

namespace tessera {
namespace {

JobRecord OneGpuJob(int64_t cpu_milli, int64_t memory_mib, int64_t limit_us = 0) {
  JobRecord job;
  job.shape.cpu_milli = cpu_milli;
  job.shape.memory_mib = memory_mib;
  job.shape.gpu_count = 1;
  job.shape.gpu_milli = 1000;
  job.time_limit_us = limit_us;
  return job;
}

TEST_CASE("failed shapes: a twin and a job needing more are ruled out, a smaller one is not") {
  FailedShapes failed;
  const JobRecord failure = OneGpuJob(4000, 16384, 60'000'000);
  CHECK_FALSE(failed.Covers(failure, 1));  // nothing remembered yet.
  failed.Add(failure, 1);

  CHECK(failed.HasTwinOf(failure, 1));
  CHECK(failed.Covers(failure, 1));
  // More cpu and memory, same GPUs: every node that refused the failure refuses it.
  const JobRecord bigger = OneGpuJob(8000, 32768, 60'000'000);
  CHECK_FALSE(failed.HasTwinOf(bigger, 1));
  CHECK(failed.Covers(bigger, 1));
  // Less cpu may fit where the failure did not.
  CHECK_FALSE(failed.Covers(OneGpuJob(2000, 16384, 60'000'000), 1));
  // A different GPU ask is looked up elsewhere in the node index.
  JobRecord two_gpus = OneGpuJob(8000, 32768, 60'000'000);
  two_gpus.shape.gpu_count = 2;
  CHECK_FALSE(failed.Covers(two_gpus, 1));
  JobRecord half_gpu = OneGpuJob(8000, 32768, 60'000'000);
  half_gpu.shape.gpu_milli = 500;
  CHECK_FALSE(failed.Covers(half_gpu, 1));
}

TEST_CASE("failed shapes: a shorter time limit or fewer tasks may still fit") {
  FailedShapes failed;
  failed.Add(OneGpuJob(4000, 16384, 60'000'000), 2);
  // A shorter limit may end before a reservation starts; no limit is the longest.
  CHECK_FALSE(failed.Covers(OneGpuJob(4000, 16384, 30'000'000), 2));
  CHECK(failed.Covers(OneGpuJob(4000, 16384, 0), 2));
  CHECK(failed.Covers(OneGpuJob(4000, 16384, 90'000'000), 2));
  // Fewer tasks that must start together may fit where two did not.
  CHECK_FALSE(failed.Covers(OneGpuJob(4000, 16384, 60'000'000), 1));
  CHECK(failed.Covers(OneGpuJob(4000, 16384, 60'000'000), 3));
  // Tasks spread may fit where the same tasks on one node would not, but not the other way.
  FailedShapes same_node_failed;
  JobRecord same_node = OneGpuJob(4000, 16384);
  same_node.same_node = true;
  same_node_failed.Add(same_node, 2);
  CHECK_FALSE(same_node_failed.Covers(OneGpuJob(4000, 16384), 2));
  failed.Add(OneGpuJob(1000, 1024), 2);
  CHECK(failed.Covers(same_node, 2));
}

TEST_CASE("failed shapes: CPU-only tasks count only as exact twins") {
  // CPU-only tasks are ordered by free cpu in the node index, so needing more memory is not
  // monotone in what the index offers; only the same shape is ruled out.
  FailedShapes failed;
  JobRecord cpu_only;
  cpu_only.shape.cpu_milli = 4000;
  cpu_only.shape.memory_mib = 8192;
  failed.Add(cpu_only, 1);
  CHECK(failed.Covers(cpu_only, 1));
  JobRecord more = cpu_only;
  more.shape.cpu_milli = 8000;
  CHECK_FALSE(failed.Covers(more, 1));
}

}  // namespace
}  // namespace tessera
