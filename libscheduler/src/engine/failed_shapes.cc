#include "engine/failed_shapes.h"

namespace tessera {
namespace {

// True when a task of shape `a` needs at least what one of shape `b` needs, in a way placement
// is monotone in: the same GPU ask (so the node index offers the same nodes, in the same order,
// up to the same visit limit) and no less cpu or memory (so every node that refuses `b` refuses
// `a`). CPU-only tasks are indexed by cpu, so for them only an equal shape counts.
bool NeedsAtLeast(const TaskShape& a, const TaskShape& b) {
  if (!b.needs_gpu()) return a == b;
  if (a.cpu_milli < b.cpu_milli || a.memory_mib < b.memory_mib) return false;
  // The usual difference first, before the copy below.
  if (a.gpu_count != b.gpu_count || a.gpu_milli != b.gpu_milli || a.models != b.models) {
    return false;
  }
  TaskShape same_host_ask = a;
  same_host_ask.cpu_milli = b.cpu_milli;
  same_host_ask.memory_mib = b.memory_mib;
  return same_host_ask == b;
}

// A time limit `a` lasts at least as long as `b` (0 is no limit: the longest).
bool LongerOrEqual(int64_t a, int64_t b) { return a == 0 || (b != 0 && a >= b); }

}  // namespace

void FailedShapes::Add(const JobRecord& job, int min_tasks) {
  if (failed_.size() >= kMaxKept) return;
  failed_.push_back({job.shape, min_tasks, job.time_limit_us, job.same_node});
}

bool FailedShapes::Matches(const Failed& f, const JobRecord& job, int min_tasks,
                           bool twins_only) const {
  return f.min_tasks <= min_tasks && LongerOrEqual(job.time_limit_us, f.limit_us) &&
         (!f.same_node || job.same_node) &&
         (twins_only ? job.shape == f.shape : NeedsAtLeast(job.shape, f.shape));
}

bool FailedShapes::HasTwinOf(const JobRecord& job, int min_tasks) const {
  for (const Failed& f : failed_) {
    if (Matches(f, job, min_tasks, /*twins_only=*/true)) return true;
  }
  return false;
}

bool FailedShapes::Covers(const JobRecord& job, int min_tasks) const {
  for (const Failed& f : failed_) {
    if (Matches(f, job, min_tasks, /*twins_only=*/false)) return true;
  }
  return false;
}

}  // namespace tessera
