// JobRecord: what the engine keeps in memory about one unfinished job: just enough to order,
// place and follow it. Specs stay in the store; a record is about 200 bytes plus its tasks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "fairshare/pending_key.h"
#include "fairshare/queue_tree.h"
#include "model/elastic_sizes.h"
#include "model/gpu_model_amounts.h"
#include "model/node_state.h"
#include "model/resource_vector.h"
#include "model/task_shape.h"
#include "tessera/clock.h"
#include "tessera/v1/job.pb.h"

namespace tessera {

// A live task in the engine's index by expected end (see Engine::tasks_by_end_).
struct TaskEnd {
  TimestampUs end_us = 0;
  uint64_t job = 0;
  int32_t task = 0;
  auto operator<=>(const TaskEnd&) const = default;
};
using TasksByEnd = std::set<TaskEnd>;

struct PlacedTask {
  int32_t index = 0;
  TaskAllocation allocation;
  bool launched = false;
  bool started = false;
  bool exited = false;
  bool stopping = false;  // stopped on purpose (preemption, shrink): not a failure.
  int32_t exit_code = 0;
  TimestampUs placed_us = 0;  // when it was placed: its service counts from then.
  // Its entry in the index by expected end, while live: kept so that leaving the index costs no
  // search (every task leaves it, and the searches showed in profiles).
  std::optional<TasksByEnd::iterator> by_end;
};

struct JobRecord {
  uint64_t id = 0;
  QueueId queue = 0;
  PendingKey key;  // priority, submit time, id.
  bool preemptible = true;
  TaskShape shape;
  // Tasks to place in all (elastic: the largest count `sizes` allows).
  int32_t wanted_tasks = 1;
  // Tasks that must start together (elastic: the smallest count `sizes` allows).
  int32_t gang_min = 1;
  bool elastic = false;
  // The task counts an elastic job may run at (JobSpec.elastic.sizes); any for other jobs.
  ElasticSizes sizes{1, 1};
  bool same_node = false;
  bool idle_gpu_exempt = false;     // JobSpec.idle_gpu_exempt (honoured where the queue allows).
  std::optional<bool> allow_spot;   // JobSpec.allow_spot, when set.
  int64_t grace_ms = 0;             // notice given before a stop turns into a kill.
  int64_t time_limit_us = 0;        // 0 = none.
  int64_t checkpoint_every_us = 0;  // simulation: checkpoints this often while running.
  int64_t sim_duration_ms = 0;
  int32_t sim_exit_code = 0;
  // simulation.gpu_utilization_pct, what the sim backend reports for its GPUs; < 0: unset.
  double sim_gpu_utilization_pct = -1;
  // What a backend is told beyond resources (the process, labels, backend spec); shared, and
  // null when the spec has none of them, so jobs of the simulation pay one pointer.
  std::shared_ptr<const JobDetails> details;

  v1::JobState state = v1::PENDING;
  int32_t attempt = 1;
  TimestampUs start_time_us = 0;
  TimestampUs end_time_us = 0;
  int32_t next_task_index = 0;
  std::vector<PlacedTask> tasks;
  ResourceVector allocated;            // sum of the allocations of tasks that have not exited.
  GpuModelAmounts allocated_by_model;  // the GPUs of `allocated`, by the model of their node.

  bool in_pending = false;  // in its queue's pending set.
  bool infeasible = false;
  bool cancel_requested = false;
  bool failing = false;           // a task failed; the rest are being stopped.
  bool preempting = false;        // being stopped to make room; requeued when its tasks are gone.
  bool awaiting_victims = false;  // this job preempted others and waits for their tasks to go.
  // While awaiting_victims: what it counts in Engine::incoming_ for its queue, taken back
  // exactly when it stops waiting (its minimum to place changes once it has placed tasks).
  ResourceCharge awaited;
  // `reason` was published to the host (Engine::PublishWaitingReason), not stored.
  bool reason_published = false;
  int32_t preemptions = 0;
  int32_t losses = 0;
  TimestampUs last_checkpoint_us = 0;
  TimestampUs preempted_at_us = 0;
  TimestampUs no_preemption_before_us = 0;  // this job's last search hit a guard until then.
  // The start time it added to the running preemptible jobs' starts, while it is one of them.
  std::optional<TimestampUs> preemptible_start;
  TimestampUs reserved_start_us = 0;
  // GPU-microseconds of service of its tasks that have ended, over all attempts (the order of a
  // queue by attained service: fairshare/service_bands.h).
  int64_t attained_gpu_us = 0;
  // While it waits in a band above 0: when it returns to band 0 (0: never).
  TimestampUs band_promotion_us = 0;
  std::vector<NodeIndexId> reserved_nodes;  // of its backfill reservation, if it holds one.
  std::string reason;

  int LiveTasks() const {
    int live = 0;
    for (const PlacedTask& t : tasks) live += t.exited ? 0 : 1;
    return live;
  }
  int PlacedTasks() const { return static_cast<int>(tasks.size()); }
  // A task ended by itself (not stopped by the scheduler): the job's work is done, it is
  // finishing, and an elastic job does not grow again (a new task would start the work over).
  bool TaskEndedByItself() const {
    for (const PlacedTask& t : tasks) {
      if (t.exited && !t.stopping) return true;
    }
    return false;
  }
  // When the job will have ended at the latest, if it has a time limit and has started.
  std::optional<TimestampUs> EndsBy() const {
    if (time_limit_us <= 0 || start_time_us == 0) return std::nullopt;
    return start_time_us + time_limit_us;
  }
  // When the job would have ended at the latest, started at `now`, if it has a time limit (a
  // job placed on nodes reserved for another must end before the reservation starts).
  std::optional<TimestampUs> EndsByIfStartedAt(TimestampUs now) const {
    if (time_limit_us <= 0) return std::nullopt;
    return now + time_limit_us;
  }
};

}  // namespace tessera
