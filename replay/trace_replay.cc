// Implementation of the virtual-time replay driver declared in trace_replay.h.
#include "trace_replay.h"

#include <algorithm>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "percentile.h"
#include "stopwatch.h"
#include "tessera/job.h"

namespace tessera::replay {
namespace {

int64_t JobGpuMilli(const v1::JobSpec& spec) {
  const v1::TaskResources& task = spec.task();
  const int64_t per_gpu = task.gpu_milli() == 0 ? 1000 : task.gpu_milli();
  const int64_t tasks = spec.tasks() == 0 ? 1 : spec.tasks();
  return tasks * task.gpu_count() * per_gpu;
}

// Submits jobs[first, last) with SubmitAsync and waits for every acknowledgement, so that all
// arrivals of one instant are in before the scheduler is left to settle.
void SubmitBatch(Scheduler& scheduler, const std::vector<ReplayJob>& jobs, size_t first,
                 size_t last, ReplayResult* result) {
  std::mutex mu;
  std::condition_variable cv;
  size_t outstanding = last - first;
  for (size_t i = first; i < last; ++i) {
    scheduler.SubmitAsync(jobs[i].spec, {}, [&, i](StatusOr<v1::Job> job) {
      std::lock_guard<std::mutex> lock(mu);
      if (job.ok()) {
        result->jobs[i].id = job->id();
      } else if (result->submit_failures++ == 0) {
        result->first_submit_error = job.status().ToString();
      }
      if (--outstanding == 0) cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return outstanding == 0; });
}

// Reads every job back with ListJobs and fills the submitted ones' outcomes.
Status ReadBack(Scheduler& scheduler, ReplayResult* result) {
  std::unordered_map<uint64_t, size_t> index_of;
  index_of.reserve(result->jobs.size());
  for (size_t i = 0; i < result->jobs.size(); ++i) {
    if (result->jobs[i].id != 0) index_of.emplace(result->jobs[i].id, i);
  }
  v1::ListJobsRequest request;
  request.set_page_size(1000);
  size_t seen = 0;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(v1::ListJobsResponse page, scheduler.ListJobs(request));
    for (const v1::Job& job : page.jobs()) {
      auto it = index_of.find(job.id());
      if (it == index_of.end()) continue;  // not one of ours (none should exist).
      ReplayedJob& out = result->jobs[it->second];
      out.state = job.status().state();
      out.queue = job.spec().queue();
      out.submit_us = job.status().submit_time_us();
      out.start_us = job.status().start_time_us();
      out.end_us = job.status().end_time_us();
      out.attempt = job.status().attempt();
      out.preemptions = job.status().preemptions();
      out.gpu_milli = JobGpuMilli(job.spec());
      out.duration_us = job.spec().simulation().duration_ms() * 1000;
      ++seen;
    }
    if (page.next_page_token().empty()) break;
    request.set_page_token(page.next_page_token());
  }
  if (seen != index_of.size()) {
    return InternalError("ListJobs returned " + std::to_string(seen) + " of the " +
                         std::to_string(index_of.size()) + " acknowledged jobs");
  }
  return Status::Ok();
}

// Policy names and the strategies they stand for. Extend this table as strategies are added to
// PlacementOptions.
const std::vector<std::pair<std::string, PlacementOptions::Strategy>>& Policies() {
  static const std::vector<std::pair<std::string, PlacementOptions::Strategy>> kPolicies = {
      {"binpack", PlacementOptions::Strategy::kBinpack},
      {"spread", PlacementOptions::Strategy::kSpread},
      {"bestfit", PlacementOptions::Strategy::kBestFit},
      {"fgd", PlacementOptions::Strategy::kFgd},
      {"fragmentation-aware", PlacementOptions::Strategy::kFragmentationAware},
  };
  return kPolicies;
}

// Whether a queue of `queues` lies below `it`'s queue.
bool IsParentIn(const std::map<std::string, double>& queues,
                std::map<std::string, double>::const_iterator it) {
  const std::string prefix = it->first + "/";
  for (auto next = std::next(it); next != queues.end(); ++next) {
    if (next->first.compare(0, prefix.size(), prefix) == 0) return true;
    // Names between "a" and "a/" ("a-b", "a.b") sort before "a/..."; stop once past the prefix.
    if (next->first > prefix) return false;
  }
  return false;
}

}  // namespace

StatusOr<ReplayResult> ReplayTrace(Scheduler& scheduler, ManualClock& clock,
                                   const std::vector<ReplayJob>& jobs,
                                   const ReplayOptions& options) {
  for (size_t i = 1; i < jobs.size(); ++i) {
    if (jobs[i].submit_offset_us < jobs[i - 1].submit_offset_us) {
      return InvalidArgumentError("replay: job " + std::to_string(i) +
                                  " arrives before the job listed ahead of it");
    }
  }
  if (clock.NowUs() > options.epoch_us) {
    return InvalidArgumentError("replay: the clock is already past the epoch");
  }
  ReplayResult result;
  result.jobs.resize(jobs.size());
  result.epoch_us = options.epoch_us;
  Stopwatch wall;
  Stopwatch since_progress;
  auto report = [&](TimestampUs now, size_t submitted) {
    if (!options.on_progress) return;
    ReplayProgress p;
    p.submitted = submitted;
    p.total = jobs.size();
    p.steps = result.steps;
    p.simulated_us = now - options.epoch_us;
    p.wall_s = wall.Seconds();
    options.on_progress(p);
  };
  clock.AdvanceToUs(options.epoch_us);

  size_t next = 0;
  std::vector<std::pair<std::string, int64_t>> allocation;  // per queue, after the last step.
  // Whether the last clock move reached a wake-up (or is the first move): only then can it
  // have set off work that must settle before the arrivals of the instant are submitted.
  bool move_reached_wakeup = true;
  while (true) {
    const TimestampUs now = clock.NowUs();
    size_t due = next;
    while (due < jobs.size() && options.epoch_us + jobs[due].submit_offset_us <= now) ++due;
    if (due > next) {
      if (move_reached_wakeup) scheduler.WaitIdle();  // what the clock's move set off first.
      Stopwatch submit;
      scheduler.PauseDecisions();
      SubmitBatch(scheduler, jobs, next, due, &result);
      scheduler.ResumeDecisions();
      result.submit_wall_s += submit.Seconds();
      next = due;
    }
    Stopwatch idle;
    scheduler.WaitIdle();
    result.idle_wall_s += idle.Seconds();
    ++result.steps;
    if (options.decision_log) TESSERA_RETURN_IF_ERROR(options.decision_log->Update(scheduler));

    Stopwatch sample;
    if (options.sample_queues) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<v1::Queue> queues, scheduler.ListQueues());
      allocation.clear();
      for (const v1::Queue& q : queues) {
        allocation.emplace_back(q.spec().name(), q.status().allocated().gpu_milli());
      }
    }
    const std::optional<TimestampUs> wakeup = scheduler.NextWakeupUs();
    result.sample_wall_s += sample.Seconds();

    std::optional<TimestampUs> until;
    if (next < jobs.size()) until = options.epoch_us + jobs[next].submit_offset_us;
    if (wakeup) until = until ? std::min(*until, *wakeup) : *wakeup;
    if (!until) {
      result.end_us = now;
      report(now, next);
      break;
    }
    // A wake-up at or before now would be a timer WaitIdle left behind; step past it rather
    // than spin on the same instant.
    const TimestampUs to = std::max(*until, now + 1);
    move_reached_wakeup = wakeup && *wakeup <= to;
    if (options.on_step) TESSERA_RETURN_IF_ERROR(options.on_step(now, to));
    for (const auto& [name, milli] : allocation) {
      result.queue_gpu_milli_us[name] += static_cast<double>(milli) * static_cast<double>(to - now);
    }
    clock.AdvanceToUs(to);

    if (options.on_progress && since_progress.Seconds() >= options.progress_every_s) {
      since_progress.Restart();
      report(to, next);
    }
  }

  Stopwatch read_back;
  TESSERA_RETURN_IF_ERROR(ReadBack(scheduler, &result));
  TESSERA_ASSIGN_OR_RETURN(std::vector<v1::Queue> queues, scheduler.ListQueues());
  for (const v1::Queue& q : queues) {
    // GetQueue rather than the listing, so the weight read is the one the scheduler resolves.
    TESSERA_ASSIGN_OR_RETURN(v1::Queue queue, scheduler.GetQueue(q.spec().name()));
    result.queue_weight[queue.spec().name()] =
        queue.spec().weight() > 0 ? queue.spec().weight() : 1.0;
    result.queue_gpu_milli_us.try_emplace(queue.spec().name(), 0.0);
  }
  result.read_back_wall_s = read_back.Seconds();
  result.wall_s = wall.Seconds();
  return result;
}

double JainFairness(const std::vector<double>& values) {
  double sum = 0;
  double sum_squares = 0;
  for (double v : values) {
    sum += v;
    sum_squares += v * v;
  }
  if (values.empty() || sum_squares == 0) return 1.0;
  return sum * sum / (static_cast<double>(values.size()) * sum_squares);
}

ReplayMetrics SummarizeReplay(const ReplayResult& result, int64_t capacity_gpu_milli,
                              const std::string* queue) {
  ReplayMetrics m;
  TimestampUs first_submit = 0;
  TimestampUs last_end = 0;
  const double span_us = static_cast<double>(result.end_us - result.epoch_us);
  m.simulated_s = span_us / 1e6;
  std::vector<double> jct_s;
  std::vector<double> wait_s;
  std::map<std::string, double> queue_milli_us;  // from job times, per queue that got jobs.
  double milli_us = 0;
  for (const ReplayedJob& job : result.jobs) {
    if (job.id == 0) continue;
    if (queue && job.queue != *queue) continue;
    ++m.jobs;
    m.preemptions += job.preemptions;
    if (first_submit == 0 || job.submit_us < first_submit) first_submit = job.submit_us;
    queue_milli_us.try_emplace(job.queue, 0.0);
    if (IsTerminal(job.state)) {
      ++m.finished;
    } else {
      ++m.unfinished;
    }
    if (job.attempt > 1) ++m.requeued;
    if (job.start_us > 0) {
      ++m.started;
      const double wait = static_cast<double>(job.start_us - job.submit_us) / 1e6;
      wait_s.push_back(wait);
      if (wait > 0) ++m.waited;
      // A job still running at the end holds its GPUs until then.
      const TimestampUs end = job.end_us > 0 ? job.end_us : result.end_us;
      const double held =
          static_cast<double>(job.gpu_milli) * static_cast<double>(end - job.start_us);
      milli_us += held;
      queue_milli_us[job.queue] += held;
    }
    if (IsTerminal(job.state) && job.end_us > 0) {
      jct_s.push_back(static_cast<double>(job.end_us - job.submit_us) / 1e6);
      last_end = std::max(last_end, job.end_us);
    }
  }
  auto mean = [](const std::vector<double>& v) {
    return v.empty() ? 0.0
                     : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  m.avg_jct_s = mean(jct_s);
  m.p50_jct_s = Percentile(jct_s, 0.50);
  m.p95_jct_s = Percentile(jct_s, 0.95);
  m.p99_jct_s = Percentile(jct_s, 0.99);
  if (last_end > 0) m.makespan_s = static_cast<double>(last_end - first_submit) / 1e6;
  m.avg_wait_s = mean(wait_s);
  m.p50_wait_s = Percentile(wait_s, 0.50);
  m.p95_wait_s = Percentile(wait_s, 0.95);
  m.p99_wait_s = Percentile(wait_s, 0.99);
  m.max_wait_s = Percentile(wait_s, 1.0);

  const double capacity_us = static_cast<double>(capacity_gpu_milli) * span_us;
  if (capacity_us > 0) {
    m.gpu_util_pct = 100.0 * milli_us / capacity_us;
    double sampled = 0;
    for (auto it = result.queue_gpu_milli_us.begin(); it != result.queue_gpu_milli_us.end(); ++it) {
      // Leaves only (or the one queue asked for): a parent's allocation repeats its children's.
      const std::string& name = it->first;
      if (queue ? name != *queue : IsParentIn(result.queue_gpu_milli_us, it)) continue;
      sampled += it->second;
    }
    m.gpu_util_sampled_pct = 100.0 * sampled / capacity_us;
  }

  // Fairness: for every queue that received at least one job, x = (its GPU compute integrated
  // over the replay / (capacity x replay length)) / weight, i.e. its time-averaged share of the
  // cluster's GPUs per unit of weight, and Jain's index over those x. Weighted fair sharing
  // aims at equal x while every queue has demand, so 1 means the queues got GPU time in
  // proportion to their weights. It measures the outcome, not the scheduler alone: a queue that
  // asks for little gets little however fair the scheduler is, so on a trace whose tenants'
  // demands differ (openb: 4647 LS pods, 7 Guaranteed) the index mostly reflects the demand.
  // Queues that received no job are left out, since they asked for nothing.
  if (queue) return m;  // fairness is between queues.
  std::vector<double> normalised;
  for (const auto& [name, v] : queue_milli_us) {
    const double share = capacity_us > 0 ? v / capacity_us : 0.0;
    m.queue_gpu_share[name] = share;
    auto w = result.queue_weight.find(name);
    normalised.push_back(share / (w == result.queue_weight.end() ? 1.0 : w->second));
  }
  m.jain_fairness = JainFairness(normalised);
  return m;
}

StatusOr<PlacementOptions> PlacementFromName(const std::string& name,
                                             std::vector<ExpectedTask> expected) {
  // The library's own defaults, told nothing of the workload (it learns it if it wants it).
  if (name == "default") return PlacementOptions();
  for (const auto& [known, strategy] : Policies()) {
    if (known == name) {
      PlacementOptions options;
      options.strategy = strategy;
      options.expected_tasks = std::move(expected);
      return options;
    }
  }
  std::string list;
  for (const std::string& known : PlacementNames()) list += (list.empty() ? "" : ", ") + known;
  return InvalidArgumentError("--policy: unknown placement policy '" + name + "'; known: " + list);
}

std::vector<ExpectedTask> ExpectedTasksOf(const std::vector<ReplayJob>& jobs) {
  using Key = std::tuple<int64_t, int64_t, int32_t, int32_t, std::vector<std::string>>;
  std::map<Key, double> counts;
  for (const ReplayJob& job : jobs) {
    const v1::TaskResources& t = job.spec.task();
    const int32_t milli = t.gpu_milli() == 0 ? 1000 : t.gpu_milli();
    Key key{t.cpu_milli(), t.memory_mib(), t.gpu_count(), milli,
            std::vector<std::string>(t.gpu_models().begin(), t.gpu_models().end())};
    counts[key] += job.spec.tasks() > 1 ? job.spec.tasks() : 1;
  }
  std::vector<ExpectedTask> expected;
  expected.reserve(counts.size());
  for (const auto& [key, count] : counts) {
    ExpectedTask& e = expected.emplace_back();
    std::tie(e.cpu_milli, e.memory_mib, e.gpu_count, e.gpu_milli, e.gpu_models) = key;
    e.count = count;
  }
  return expected;
}

std::vector<std::string> PlacementNames() {
  std::vector<std::string> names = {"default"};
  for (const auto& [name, strategy] : Policies()) names.push_back(name);
  return names;
}

}  // namespace tessera::replay
