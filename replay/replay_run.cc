// Implementation of one what-if replay (replay_run.h).
#include "replay_run.h"

#include <memory>
#include <set>

#include "stopwatch.h"
#include "tessera/clock.h"
#include "tessera/queue_tree.h"
#include "tessera/scheduler.h"

namespace tessera::replay {
namespace {

// Creates `leaf` and each missing ancestor; `existing` holds every queue name known so far.
Status EnsureQueue(Scheduler& scheduler, const std::string& leaf, std::set<std::string>* existing,
                   std::vector<std::string>* created) {
  size_t pos = 0;
  while (true) {
    const size_t slash = leaf.find('/', pos);
    const std::string prefix = leaf.substr(0, slash);
    if (!existing->count(prefix)) {
      v1::QueueSpec spec;
      spec.set_name(prefix);
      spec.set_weight(1);
      if (Status s = scheduler.CreateQueue(spec); !s.ok()) {
        return Status(s.code(), "creating queue '" + prefix + "' for the trace: " + s.message());
      }
      existing->insert(prefix);
      created->push_back(prefix);
    }
    if (slash == std::string::npos) return Status::Ok();
    pos = slash + 1;
  }
}

}  // namespace

StatusOr<RunOutcome> RunReplay(const ReplayConfig& config, const Trace& trace,
                               const RunSettings& settings) {
  RunOutcome out;
  auto clock = std::make_shared<ManualClock>(kReplayEpochUs);
  Options options = config.options;
  options.clock = clock;
  Stopwatch open_timer;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Open(options));
  out.open_s = open_timer.Seconds();
  TESSERA_ASSIGN_OR_RETURN(QueueTreeReport applied,
                           ApplyQueueTree(*scheduler, config.daemon.queues()));
  (void)applied;
  std::set<std::string> existing;
  TESSERA_ASSIGN_OR_RETURN(std::vector<v1::Queue> queues, scheduler->ListQueues());
  for (const v1::Queue& q : queues) existing.insert(q.spec().name());
  // replay.one_queue: every job goes to one queue; the trace's queues stay the jobs' tenants.
  const bool one_queue = !config.one_queue.empty();
  std::vector<ReplayJob> routed;
  if (one_queue) {
    TESSERA_RETURN_IF_ERROR(
        EnsureQueue(*scheduler, config.one_queue, &existing, &out.queues_created));
    routed = trace.jobs;
    for (ReplayJob& job : routed) job.spec.set_queue(config.one_queue);
  } else {
    for (const std::string& leaf : trace.queues) {
      TESSERA_RETURN_IF_ERROR(EnsureQueue(*scheduler, leaf, &existing, &out.queues_created));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<v1::Node> nodes, scheduler->ListNodes());
  out.nodes = static_cast<int64_t>(nodes.size());
  for (const v1::Node& node : nodes) out.gpus += node.spec().gpus_size();

  ReplayOptions replay_options;
  replay_options.epoch_us = kReplayEpochUs;
  replay_options.on_progress = settings.on_progress;
  replay_options.progress_every_s = settings.progress_every_s;
  replay_options.decision_log = settings.decision_log;
  TESSERA_ASSIGN_OR_RETURN(
      out.result, ReplayTrace(*scheduler, *clock, one_queue ? routed : trace.jobs, replay_options));
  if (one_queue) {
    out.one_queue = config.one_queue;
    for (size_t i = 0; i < out.result.jobs.size(); ++i) {
      out.result.jobs[i].queue = trace.jobs[i].spec.queue();
    }
  }
  out.stats = scheduler->GetStats();
  return out;
}

}  // namespace tessera::replay
