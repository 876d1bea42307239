#include "scenario/invariants.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "tessera/job.h"

namespace tessera::scenario {
namespace {

using Result = std::optional<Violation>;

Violation Broken(const std::string& invariant, const std::string& detail) {
  return Violation{invariant, detail};
}

template <typename... Parts>
std::string Say(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

bool HoldsResources(v1::JobState state) {
  return state == v1::ADMITTED || state == v1::STARTING || state == v1::RUNNING ||
         state == v1::PREEMPTING;
}

bool InSubtree(const std::string& queue, const std::string& leaf) {
  return leaf == queue || leaf.rfind(queue + "/", 0) == 0;
}

std::string TopLevel(const std::string& queue) { return queue.substr(0, queue.find('/')); }

// MIG profile "Ng.XXgb[+me]": compute slices N of 7 and memory slices of 8.
struct MigShape {
  int compute = 0;
  int memory_slices = 0;
  int64_t memory_mib = 0;  // as the A100-80GB and H100-80GB report it.
};

std::optional<MigShape> ShapeOf(const std::string& profile) {
  static const std::map<std::string, MigShape> kShapes = {
      {"1g.10gb", {1, 1, 9856}},  {"1g.10gb+me", {1, 1, 9856}}, {"1g.20gb", {1, 2, 19968}},
      {"2g.20gb", {2, 2, 19968}}, {"3g.40gb", {3, 4, 40192}},   {"4g.40gb", {4, 4, 40192}},
      {"7g.80gb", {7, 8, 80384}}};
  auto it = kShapes.find(profile);
  if (it == kShapes.end()) return std::nullopt;
  return it->second;
}

// One task's hold on the GPUs of a node.
struct Hold {
  const v1::Job* job;
  const v1::TaskPlacement* placement;
};

std::vector<Hold> LiveHolds(const Snapshot& s) {
  std::vector<Hold> holds;
  for (const v1::Job& job : s.jobs) {
    if (!HoldsResources(job.status().state())) continue;
    for (const v1::TaskPlacement& p : job.status().placements()) {
      if (!p.exited()) holds.push_back({&job, &p});
    }
  }
  return holds;
}

int64_t MilliPerGpu(const v1::TaskPlacement& p) {
  return p.gpu_milli() == 0 ? 1000 : p.gpu_milli();
}

// What the tasks of a queue's subtree hold, in physical units, from their placements.
v1::Resources HeldBy(const Snapshot& s, const std::string& queue) {
  v1::Resources held;
  for (const Hold& h : LiveHolds(s)) {
    if (!InSubtree(queue, h.job->spec().queue())) continue;
    const v1::TaskPlacement& p = *h.placement;
    held.set_cpu_milli(held.cpu_milli() + h.job->spec().task().cpu_milli());
    held.set_memory_mib(held.memory_mib() + h.job->spec().task().memory_mib());
    held.set_gpu_milli(held.gpu_milli() + MilliPerGpu(p) * p.gpus_size());
    held.set_gpu_memory_mib(held.gpu_memory_mib() + p.gpu_memory_mib() * p.gpus_size());
  }
  return held;
}

const v1::GpuDevice* FindGpu(const Snapshot& s, const std::string& node, int index,
                             const v1::Node** owner = nullptr) {
  for (const v1::Node& n : s.nodes) {
    if (n.spec().name() != node) continue;
    if (owner) *owner = &n;
    for (const v1::GpuDevice& g : n.spec().gpus()) {
      if (g.index() == index) return &g;
    }
  }
  return nullptr;
}

std::string Where(const Hold& h) {
  return Say("job ", h.job->id(), " (", h.job->spec().name(), ") task ", h.placement->index(),
             " on ", h.placement->node());
}

Result LimitsHold(const std::string& invariant, const std::string& queue, const char* limit,
                  const v1::Resources& held, const v1::ResourceLimits& limits,
                  const v1::Resources& base) {
  auto over = [&](const char* field, bool set, int64_t value, int64_t used) -> Result {
    if (set && used > value) {
      return Broken(invariant, Say("queue ", queue, " holds ", field, "=", used, " over its ",
                                   limit, " of ", value));
    }
    return std::nullopt;
  };
  if (auto v = over("cpu_milli", limits.has_cpu_milli(), base.cpu_milli() + limits.cpu_milli(),
                    held.cpu_milli())) {
    return v;
  }
  if (auto v = over("memory_mib", limits.has_memory_mib(), base.memory_mib() + limits.memory_mib(),
                    held.memory_mib())) {
    return v;
  }
  if (auto v = over("gpu_milli", limits.has_gpu_milli(), base.gpu_milli() + limits.gpu_milli(),
                    held.gpu_milli())) {
    return v;
  }
  return over("gpu_memory_mib", limits.has_gpu_memory_mib(),
              base.gpu_memory_mib() + limits.gpu_memory_mib(), held.gpu_memory_mib());
}

// A guarantee names several resources, and reclaim (docs/policies.md) honours each one it
// names: a queue claims only while what it holds plus the job stays within every guaranteed
// resource, and gives back only what leaves it at or above every guaranteed resource.
bool WithinGuaranteeWith(const v1::Resources& held, const v1::Resources& extra,
                         const v1::Resources& guarantee) {
  auto within = [](int64_t g, int64_t h, int64_t e) { return g <= 0 || h + e <= g; };
  return within(guarantee.cpu_milli(), held.cpu_milli(), extra.cpu_milli()) &&
         within(guarantee.memory_mib(), held.memory_mib(), extra.memory_mib()) &&
         within(guarantee.gpu_milli(), held.gpu_milli(), extra.gpu_milli()) &&
         within(guarantee.gpu_memory_mib(), held.gpu_memory_mib(), extra.gpu_memory_mib());
}

bool KeepsGuaranteeWithout(const v1::Resources& held, const v1::Resources& amount,
                           const v1::Resources& guarantee) {
  auto keeps = [](int64_t g, int64_t h, int64_t a) { return g <= 0 || h - a >= g; };
  return keeps(guarantee.cpu_milli(), held.cpu_milli(), amount.cpu_milli()) &&
         keeps(guarantee.memory_mib(), held.memory_mib(), amount.memory_mib()) &&
         keeps(guarantee.gpu_milli(), held.gpu_milli(), amount.gpu_milli()) &&
         keeps(guarantee.gpu_memory_mib(), held.gpu_memory_mib(), amount.gpu_memory_mib());
}

// What one job's live tasks hold, as HeldBy counts it.
v1::Resources HeldByJob(const v1::Job& job) {
  v1::Resources held;
  for (const v1::TaskPlacement& p : job.status().placements()) {
    if (p.exited()) continue;
    held.set_cpu_milli(held.cpu_milli() + job.spec().task().cpu_milli());
    held.set_memory_mib(held.memory_mib() + job.spec().task().memory_mib());
    held.set_gpu_milli(held.gpu_milli() + MilliPerGpu(p) * p.gpus_size());
    held.set_gpu_memory_mib(held.gpu_memory_mib() + p.gpu_memory_mib() * p.gpus_size());
  }
  return held;
}

// Whether `job` can run on this cluster once nothing else runs: every form the generator uses
// is judged here from the cluster description, so a job that could never run (a MIG profile no
// fixed layout has) is not counted against the scheduler.
bool FitsIdleCluster(const v1::SimulatedCluster& cluster, const v1::JobSpec& spec) {
  const v1::TaskResources& t = spec.task();
  const int tasks =
      spec.has_elastic() ? std::max(1, spec.elastic().min_tasks()) : std::max(1, spec.tasks());
  for (const v1::SimulatedNodeGroup& g : cluster.groups()) {
    const bool plain = g.sharing() == v1::GPU_SHARING_DEFAULT;
    const bool exclusive = g.sharing() == v1::GPU_SHARING_EXCLUSIVE;
    if (!t.mig_profile().empty()) {
      if (g.sharing() != v1::GPU_SHARING_MIG) continue;
      if (g.mig_managed()) return true;
      for (const v1::MigInstance& m : g.mig_instances()) {
        if (m.profile() == t.mig_profile()) return true;
      }
      continue;
    }
    if (!t.vgpu_type().empty()) {
      if (g.sharing() == v1::GPU_SHARING_VGPU) return true;
      continue;
    }
    switch (t.gpu_form()) {
      case v1::GPU_FORM_TIME_SLICE:
        if (g.sharing() == v1::GPU_SHARING_TIME_SLICE) return true;
        continue;
      case v1::GPU_FORM_MPS:
        if (g.sharing() == v1::GPU_SHARING_MPS) return true;
        continue;
      default:
        break;
    }
    const bool fraction = t.gpu_milli() > 0 && t.gpu_milli() < 1000;
    if (fraction) {
      if (plain) return true;
      continue;
    }
    if ((plain || exclusive) && t.gpu_count() <= g.gpus() &&
        int64_t{t.gpu_count()} * tasks <= int64_t{g.gpus()} * g.count()) {
      return true;
    }
  }
  return false;
}

}  // namespace

Checker::Checker(const Scenario& scenario, std::set<std::string> skipped)
    : scenario_(scenario), skipped_(std::move(skipped)) {
  for (const v1::QueueSpec& q : scenario.queues) queue_specs_[q.name()] = q;
  reclaim_window_us_ = (scenario.min_runtime_s + scenario.cooldown_s + 2 + 10) * 1'000'000;
}

std::optional<Violation> Checker::Read(Scheduler& scheduler, Snapshot& s) {
  s = Snapshot{};
  // Events first (up to seq_before_jobs), then jobs, nodes and queues, then the events that
  // came meanwhile (none in virtual time).
  uint64_t after = last_seq_;
  auto read_events = [&]() -> std::optional<Violation> {
    while (true) {
      auto events = scheduler.WatchEvents(after, 1000, std::chrono::milliseconds(0));
      if (!events.ok()) return Broken("api_answers", "WatchEvents: " + events.status().ToString());
      if (events->empty()) return std::nullopt;
      for (const v1::Event& e : *events) s.new_events.push_back(e);
      after = events->back().seq();
    }
  };
  if (auto v = read_events()) return v;
  s.seq_before_jobs = after;
  v1::ListJobsRequest request;
  request.set_page_size(1000);
  while (true) {
    auto page = scheduler.ListJobs(request);
    if (!page.ok()) return Broken("api_answers", "ListJobs: " + page.status().ToString());
    for (const v1::Job& j : page->jobs()) s.jobs.push_back(j);
    if (page->next_page_token().empty()) break;
    request.set_page_token(page->next_page_token());
  }
  auto nodes = scheduler.ListNodes();
  if (!nodes.ok()) return Broken("api_answers", "ListNodes: " + nodes.status().ToString());
  s.nodes = std::move(*nodes);
  auto queues = scheduler.ListQueues();
  if (!queues.ok()) return Broken("api_answers", "ListQueues: " + queues.status().ToString());
  s.queues = std::move(*queues);
  return read_events();
}

std::optional<Violation> Checker::CheckStep(const Snapshot& s, int64_t now_us) {
  // The event checks update what the checker remembers, so all three run in this order.
  if (auto v = EventsGaplessAndMonotonic(s)) return v;
  if (auto v = EventLogChainsPerJob(s)) return v;
  if (auto v = NeverRunningTwice(s)) return v;
  for (auto check : {&Checker::StateChangedEventsChangeState, &Checker::AcknowledgedJobsExistOnce,
                     &Checker::JobStateMatchesEventLog, &Checker::NoGpuOrShareDoubleBooked,
                     &Checker::NodeCapacityNotExceeded, &Checker::SharesChargedInPhysicalUnits,
                     &Checker::QueueAllocationMatchesPlacements, &Checker::CapsHonoured,
                     &Checker::BorrowingLimitsHonoured, &Checker::PendingJobHasReason}) {
    if (auto v = (this->*check)(s); v && !skipped_.count(v->invariant)) return v;
  }
  auto v = GuaranteeReclaimedInTime(s, now_us);
  if (v && skipped_.count(v->invariant)) return std::nullopt;
  return v;
}

std::optional<Violation> Checker::CheckFinished(const Snapshot& s) {
  if (auto v = FittingJobStartsOnIdleCluster(s); v && !skipped_.count(v->invariant)) return v;
  auto v = EveryJobFinishes(s);
  if (v && skipped_.count(v->invariant)) return std::nullopt;
  return v;
}

Result Checker::EventsGaplessAndMonotonic(const Snapshot& s) {
  for (const v1::Event& e : s.new_events) {
    if (e.seq() != last_seq_ + 1) {
      return Broken("events_gapless_and_monotonic",
                    Say("event seq ", e.seq(), " follows ", last_seq_));
    }
    if (e.time_us() < last_event_time_us_) {
      return Broken("events_gapless_and_monotonic",
                    Say("event ", e.seq(), " at ", e.time_us(), " is earlier than the one before (",
                        last_event_time_us_, ")"));
    }
    last_seq_ = e.seq();
    last_event_time_us_ = e.time_us();
  }
  return std::nullopt;
}

Result Checker::EventLogChainsPerJob(const Snapshot& s) {
  for (const v1::Event& e : s.new_events) {
    if (e.kind() != v1::JOB_STATE_CHANGED) continue;
    auto it = event_state_.find(e.job_id());
    const v1::JobState before = it == event_state_.end() ? v1::JOB_STATE_UNSPECIFIED : it->second;
    if (e.from_state() != before) {
      return Broken("event_log_chains_per_job",
                    Say("event ", e.seq(), ": job ", e.job_id(), " goes ",
                        JobStateName(e.from_state()), " -> ", JobStateName(e.to_state()),
                        " but its previous event left it ", JobStateName(before)));
    }
    event_state_[e.job_id()] = e.to_state();
  }
  return std::nullopt;
}

Result Checker::StateChangedEventsChangeState(const Snapshot& s) const {
  for (const v1::Event& e : s.new_events) {
    if (e.kind() == v1::JOB_STATE_CHANGED && e.from_state() == e.to_state()) {
      return Broken("state_changed_events_change_state",
                    Say("event ", e.seq(), ": job ", e.job_id(), " JOB_STATE_CHANGED ",
                        JobStateName(e.from_state()), " -> ", JobStateName(e.to_state()), " (",
                        e.reason(), "); a change without a change of state is JOB_UPDATED"));
    }
  }
  return std::nullopt;
}

Result Checker::NeverRunningTwice(const Snapshot& s) {
  for (const v1::Event& e : s.new_events) {
    if (e.kind() != v1::JOB_STATE_CHANGED) continue;
    bool& running = running_[e.job_id()];
    if (e.to_state() == v1::RUNNING && e.from_state() != v1::RUNNING) {
      if (running) {
        return Broken("never_running_twice", Say("event ", e.seq(), ": job ", e.job_id(), " ",
                                                 JobStateName(e.from_state()),
                                                 " -> RUNNING while RUNNING (", e.reason(), ")"));
      }
      running = true;
    } else if (e.to_state() != v1::PREEMPTING) {
      running = false;
    }
  }
  return std::nullopt;
}

Result Checker::AcknowledgedJobsExistOnce(const Snapshot& s) const {
  std::map<uint64_t, int> seen;
  for (const v1::Job& j : s.jobs) ++seen[j.id()];
  for (const auto& [id, count] : seen) {
    if (count > 1) {
      return Broken("acknowledged_jobs_exist_once",
                    Say("job ", id, " is listed ", count, " times"));
    }
    if (!acknowledged_.count(id)) {
      return Broken("acknowledged_jobs_exist_once", Say("job ", id, " was never acknowledged"));
    }
  }
  for (uint64_t id : acknowledged_) {
    if (!seen.count(id)) {
      return Broken("acknowledged_jobs_exist_once", Say("acknowledged job ", id, " is missing"));
    }
  }
  return std::nullopt;
}

Result Checker::JobStateMatchesEventLog(const Snapshot& s) const {
  for (const v1::Job& j : s.jobs) {
    auto it = event_state_.find(j.id());
    if (it == event_state_.end()) {
      return Broken("job_state_matches_event_log", Say("job ", j.id(), " has no event"));
    }
    // States the job passed through while the snapshot was read.
    bool passed_through = false;
    for (const v1::Event& e : s.new_events) {
      if (e.seq() > s.seq_before_jobs && e.job_id() == j.id() &&
          (e.from_state() == j.status().state() || e.to_state() == j.status().state())) {
        passed_through = true;
      }
    }
    if (it->second != j.status().state() && !passed_through) {
      return Broken("job_state_matches_event_log",
                    Say("job ", j.id(), " is ", JobStateName(j.status().state()),
                        " but its last event says ", JobStateName(it->second)));
    }
  }
  return std::nullopt;
}

Result Checker::NoGpuOrShareDoubleBooked(const Snapshot& s) const {
  std::map<std::pair<std::string, int>, std::vector<Hold>> per_gpu;
  for (const Hold& h : LiveHolds(s)) {
    for (int gpu : h.placement->gpus()) per_gpu[{h.placement->node(), gpu}].push_back(h);
  }
  const std::string name = "no_gpu_or_share_double_booked";
  for (const auto& [where, holds] : per_gpu) {
    const v1::GpuDevice* gpu = FindGpu(s, where.first, where.second);
    const std::string at = Say(where.first, " GPU ", where.second);
    if (gpu == nullptr)
      return Broken(name, Where(holds[0]) + " uses " + at + ", which does not exist");
    int64_t milli = 0;
    int64_t memory = 0;
    std::set<std::string> vgpu_types;
    std::vector<std::pair<int, int>> mig_ranges;  // memory slices [first, last)
    for (const Hold& h : holds) {
      const v1::TaskPlacement& p = *h.placement;
      if (MilliPerGpu(p) == 1000 && holds.size() > 1) {
        return Broken(name, Say(Where(h), " holds ", at, " whole, shared with ", holds.size() - 1,
                                " other task(s)"));
      }
      milli += MilliPerGpu(p);
      memory += p.gpu_memory_mib();
      if (p.partition().sharing() == v1::GPU_SHARING_VGPU)
        vgpu_types.insert(p.partition().vgpu_type());
      if (p.partition().sharing() == v1::GPU_SHARING_MIG) {
        auto shape = ShapeOf(p.partition().mig_profile());
        if (!shape)
          return Broken(name,
                        Where(h) + " holds unknown MIG profile " + p.partition().mig_profile());
        const int first = p.partition().mig_start();
        const int last = first + shape->memory_slices;
        for (const auto& [a, b] : mig_ranges) {
          if (first < b && a < last) {
            return Broken(name, Say(Where(h), " holds MIG ", p.partition().mig_profile(), "@",
                                    first, " on ", at, ", overlapping an instance in use"));
          }
        }
        mig_ranges.emplace_back(first, last);
      }
    }
    if (milli > 1000) return Broken(name, Say(at, " has ", milli, " milli-GPUs booked"));
    if (memory > gpu->memory_mib()) {
      return Broken(name, Say(at, " has ", memory, " MiB booked of ", gpu->memory_mib()));
    }
    if (gpu->sharing() == v1::GPU_SHARING_TIME_SLICE &&
        static_cast<int>(holds.size()) > gpu->replicas()) {
      return Broken(name,
                    Say(at, " has ", holds.size(), " time slices booked of ", gpu->replicas()));
    }
    if (gpu->sharing() == v1::GPU_SHARING_MPS && holds.size() > 48) {
      return Broken(name, Say(at, " has ", holds.size(), " MPS clients"));
    }
    if (vgpu_types.size() > 1) return Broken(name, Say(at, " mixes vGPU types"));
  }
  return std::nullopt;
}

Result Checker::NodeCapacityNotExceeded(const Snapshot& s) const {
  std::map<std::string, std::pair<int64_t, int64_t>> used;  // node -> cpu, memory
  for (const Hold& h : LiveHolds(s)) {
    auto& [cpu, memory] = used[h.placement->node()];
    cpu += h.job->spec().task().cpu_milli();
    memory += h.job->spec().task().memory_mib();
  }
  for (const v1::Node& n : s.nodes) {
    const auto [cpu, memory] = used[n.spec().name()];
    if (cpu > n.spec().cpu_milli() || memory > n.spec().memory_mib()) {
      return Broken("node_capacity_not_exceeded",
                    Say(n.spec().name(), " runs tasks of ", cpu, " cpu_milli and ", memory,
                        " MiB, over ", n.spec().cpu_milli(), " and ", n.spec().memory_mib()));
    }
  }
  return std::nullopt;
}

Result Checker::SharesChargedInPhysicalUnits(const Snapshot& s) const {
  const std::string name = "shares_charged_in_physical_units";
  for (const Hold& h : LiveHolds(s)) {
    const v1::TaskPlacement& p = *h.placement;
    if (p.gpus_size() == 0) continue;
    const v1::GpuDevice* gpu = FindGpu(s, p.node(), p.gpus(0));
    if (gpu == nullptr) continue;  // reported by no_gpu_or_share_double_booked.
    if (p.gpu_milli() < 0 || p.gpu_milli() > 1000) {
      return Broken(name, Say(Where(h), " is charged ", p.gpu_milli(), " milli-GPUs"));
    }
    switch (p.partition().sharing()) {
      case v1::GPU_SHARING_MIG: {
        auto shape = ShapeOf(p.partition().mig_profile());
        if (!shape) break;
        const int64_t milli = shape->compute * 1000 / 7;
        if (p.gpu_milli() != milli || p.gpu_memory_mib() != shape->memory_mib) {
          return Broken(name, Say(Where(h), ": MIG ", p.partition().mig_profile(), " charged ",
                                  p.gpu_milli(), " milli and ", p.gpu_memory_mib(),
                                  " MiB, its instance has ", milli, " and ", shape->memory_mib));
        }
        break;
      }
      case v1::GPU_SHARING_TIME_SLICE:
        if (gpu->replicas() > 0 && p.gpu_milli() != 1000 / gpu->replicas()) {
          return Broken(name, Say(Where(h), ": a time slice of ", gpu->replicas(), " charged ",
                                  p.gpu_milli(), " milli-GPUs, not ", 1000 / gpu->replicas()));
        }
        [[fallthrough]];
      case v1::GPU_SHARING_MPS:
      case v1::GPU_SHARING_VGPU:
        if (p.gpu_milli() <= 0 || p.gpu_memory_mib() <= 0) {
          return Broken(name, Say(Where(h), ": a share charged ", p.gpu_milli(), " milli-GPUs and ",
                                  p.gpu_memory_mib(), " MiB"));
        }
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

Result Checker::QueueAllocationMatchesPlacements(const Snapshot& s) const {
  for (const v1::Queue& q : s.queues) {
    const v1::Resources held = HeldBy(s, q.spec().name());
    const v1::Resources& reported = q.status().allocated();
    if (held.cpu_milli() != reported.cpu_milli() || held.memory_mib() != reported.memory_mib() ||
        held.gpu_milli() != reported.gpu_milli() ||
        held.gpu_memory_mib() != reported.gpu_memory_mib()) {
      return Broken("queue_allocation_matches_placements",
                    Say("queue ", q.spec().name(), " reports {", reported.ShortDebugString(),
                        "} but its tasks hold {", held.ShortDebugString(), "}"));
    }
  }
  return std::nullopt;
}

Result Checker::CapsHonoured(const Snapshot& s) const {
  for (const auto& [name, spec] : queue_specs_) {
    if (!spec.has_cap()) continue;
    if (auto v = LimitsHold("caps_honoured", name, "cap", HeldBy(s, name), spec.cap(), {}))
      return v;
  }
  return std::nullopt;
}

Result Checker::BorrowingLimitsHonoured(const Snapshot& s) const {
  for (const auto& [name, spec] : queue_specs_) {
    if (!spec.has_borrowing_limit()) continue;
    if (auto v = LimitsHold("borrowing_limits_honoured", name, "guarantee + borrowing limit",
                            HeldBy(s, name), spec.borrowing_limit(), spec.guarantee())) {
      return v;
    }
  }
  return std::nullopt;
}

Result Checker::PendingJobHasReason(const Snapshot& s) const {
  for (const v1::Job& j : s.jobs) {
    if (j.status().state() == v1::PENDING && j.status().reason().empty()) {
      return Broken("pending_job_has_reason",
                    Say("job ", j.id(), " (", j.spec().name(), ") is PENDING with no reason (",
                        "attempt ", j.status().attempt(), ", preemptions ",
                        j.status().preemptions(), ", losses ", j.status().losses(), ")"));
    }
  }
  return std::nullopt;
}

// A top-level queue Q is owed a GPU when it holds less than its guarantee by at least one GPU,
// one of its jobs waits for exactly one whole GPU (and may pass the queue's head), and another
// top-level queue R holds a running, preemptible one-GPU-per-task job on a plain GPU node that
// R can give up and stay at or above its own guarantee. Such a state may last while the
// victim's min_runtime and cooldown run and its checkpoint grace ends, not longer.
Result Checker::GuaranteeReclaimedInTime(const Snapshot& s, int64_t now_us) {
  std::map<std::string, v1::Resources> held;
  for (const auto& [name, spec] : queue_specs_) held[name] = HeldBy(s, name);
  auto fits_path = [&](const std::string& leaf, int64_t gpu_milli) {
    for (std::string q = leaf;;) {
      const v1::QueueSpec& spec = queue_specs_.at(q);
      const int64_t after = held[q].gpu_milli() + gpu_milli;
      if (spec.cap().has_gpu_milli() && after > spec.cap().gpu_milli()) return false;
      if (spec.borrowing_limit().has_gpu_milli() &&
          after > spec.guarantee().gpu_milli() + spec.borrowing_limit().gpu_milli()) {
        return false;
      }
      const size_t slash = q.rfind('/');
      if (slash == std::string::npos) return true;
      q = q.substr(0, slash);
    }
  };
  std::map<std::string, const v1::Job*> head;  // oldest pending job per leaf
  for (const v1::Job& j : s.jobs) {
    if (j.status().state() == v1::PENDING && !head.count(j.spec().queue()))
      head[j.spec().queue()] = &j;
  }
  std::map<std::string, const v1::Node*> nodes;
  for (const v1::Node& n : s.nodes) nodes[n.spec().name()] = &n;

  for (const auto& [q, spec] : queue_specs_) {
    if (q.find('/') != std::string::npos || spec.guarantee().gpu_milli() == 0) continue;
    bool owed = false;
    std::string why;
    if (held[q].gpu_milli() + 1000 <= spec.guarantee().gpu_milli()) {
      for (const v1::Job& j : s.jobs) {
        const v1::JobSpec& js = j.spec();
        const bool one_gpu = js.task().gpu_count() == 1 &&
                             (js.task().gpu_milli() == 0 || js.task().gpu_milli() == 1000) &&
                             js.task().mig_profile().empty() && js.task().vgpu_type().empty() &&
                             js.task().gpu_form() == v1::GPU_FORM_ANY &&
                             std::max(1, js.tasks()) == 1 && !js.has_elastic();
        v1::Resources wanted;
        wanted.set_cpu_milli(js.task().cpu_milli());
        wanted.set_memory_mib(js.task().memory_mib());
        wanted.set_gpu_milli(1000);
        if (j.status().state() != v1::PENDING || j.status().infeasible() || !one_gpu ||
            !InSubtree(q, js.queue()) || !fits_path(js.queue(), 1000) ||
            !WithinGuaranteeWith(held[q], wanted, spec.guarantee())) {
          continue;
        }
        if (queue_specs_.at(js.queue()).queueing() == v1::STRICT_FIFO && head[js.queue()] != &j)
          continue;
        for (const v1::Job& victim : s.jobs) {
          const std::string r = TopLevel(victim.spec().queue());
          const v1::QueueSpec& rspec = queue_specs_.at(r);
          if (r == q || victim.status().state() != v1::RUNNING || !victim.status().preemptible() ||
              victim.status().cancel_requested() ||
              victim.status().priority() > j.status().priority() ||
              victim.spec().task().gpu_count() != 1 || victim.status().placements_size() == 0) {
            continue;
          }
          // Every queue from the victim's leaf up to R gives it back keeping its guarantee.
          const v1::Resources amount = HeldByJob(victim);
          bool gives_back = true;
          for (std::string p = victim.spec().queue(); gives_back;) {
            gives_back = KeepsGuaranteeWithout(held[p], amount, queue_specs_.at(p).guarantee());
            const size_t slash = p.rfind('/');
            if (slash == std::string::npos) break;
            p = p.substr(0, slash);
          }
          if (!gives_back) continue;
          bool plain = true;
          for (const v1::TaskPlacement& p : victim.status().placements()) {
            const v1::Node* node = nodes.count(p.node()) ? nodes[p.node()] : nullptr;
            const v1::GpuDevice* gpu = p.gpus_size() ? FindGpu(s, p.node(), p.gpus(0)) : nullptr;
            plain = plain && node && gpu && MilliPerGpu(p) == 1000 && !node->status().cordoned() &&
                    (gpu->sharing() == v1::GPU_SHARING_DEFAULT ||
                     gpu->sharing() == v1::GPU_SHARING_EXCLUSIVE) &&
                    node->spec().cpu_milli() - node->status().allocated().cpu_milli() +
                            victim.spec().task().cpu_milli() >=
                        js.task().cpu_milli();
            if (!plain) break;
            for (const v1::GpuState& state : node->status().gpus()) {
              if (state.index() == p.gpus(0) && (state.failed() || state.too_hot())) plain = false;
            }
          }
          if (!plain) continue;
          owed = true;
          why = Say("queue ", q, " holds ", held[q].gpu_milli(), " of its guarantee ",
                    spec.guarantee().gpu_milli(), " milli-GPUs; job ", j.id(), " (", js.name(),
                    ") waits for one GPU (", j.status().reason(), "); queue ", r, " holds ",
                    held[r].gpu_milli(), " over its guarantee ", rspec.guarantee().gpu_milli(),
                    ", e.g. preemptible job ", victim.id(), " (", victim.spec().name(), ")");
          break;
        }
        if (owed) break;
      }
    }
    if (!owed) {
      below_guarantee_since_.erase(q);
      continue;
    }
    auto [it, fresh] = below_guarantee_since_.emplace(q, now_us);
    if (!fresh && now_us - it->second > reclaim_window_us_) {
      return Broken("guarantee_reclaimed_in_time",
                    Say(why, "; owed for ", (now_us - it->second) / 1000, " ms, the window is ",
                        reclaim_window_us_ / 1000, " ms"));
    }
  }
  return std::nullopt;
}

Result Checker::FittingJobStartsOnIdleCluster(const Snapshot& s) const {
  for (const v1::Job& j : s.jobs) {
    if (HoldsResources(j.status().state())) return std::nullopt;
  }
  for (const v1::Job& j : s.jobs) {
    if (j.status().state() == v1::PENDING && FitsIdleCluster(scenario_.cluster, j.spec())) {
      return Broken("fitting_job_starts_on_idle_cluster",
                    Say("nothing runs, yet job ", j.id(), " (", j.spec().name(),
                        ") waits: ", j.status().reason(),
                        j.status().infeasible() ? " (marked infeasible)" : ""));
    }
  }
  return std::nullopt;
}

Result Checker::EveryJobFinishes(const Snapshot& s) const {
  for (const v1::Job& j : s.jobs) {
    const v1::JobState state = j.status().state();
    if (IsTerminal(state) ||
        (state == v1::PENDING && !FitsIdleCluster(scenario_.cluster, j.spec()))) {
      continue;
    }
    return Broken("every_job_finishes", Say("job ", j.id(), " (", j.spec().name(), ") is still ",
                                            JobStateName(state), ": ", j.status().reason()));
  }
  return std::nullopt;
}

}  // namespace tessera::scenario
