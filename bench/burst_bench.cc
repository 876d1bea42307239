// burst: what cloud burst costs and what it buys, measured. A workload with a daily peak
// (day_peak_workload.h) runs through the real scheduler in virtual time, with the sim plugin as
// the private pool (8-GPU nodes) and, where the configuration has burst, as the capacity
// provider (8-GPU node groups, on-demand and spot, with a provisioning delay and spot
// interruptions). Each configuration is one replay:
//   A  private pool sized for the mean demand, no burst;
//   B  private pool sized for the daily peak (the busiest hour of the day), no burst;
//   C  mean-sized pool + burst on-demand only;
//   D  mean-sized pool + burst spot first, on-demand fallback (only checkpointing jobs may run
//      on spot: the library's default);
//   E  D with budgets: the queue "training" per hour, and the whole scheduler per day.
// Cost: the private pool at its price per GPU-hour for every hour of the replay (it exists
// whether used or not), plus burst capacity as the library's spend ledger charged it: the
// global account (every burst node's price for the time it was there, idle time included),
// read from the store's burst_accounts after the replay, as a restart would read it. The
// public API shows only the queues' accounts (QueueStatus.burst), which leave out idle burst
// nodes; both are reported, and an independent sum of burst node time x price, sampled from
// ListNodes at every step, checks the ledger. Delay: start - submit of each job (of its last
// attempt: an interrupted job's includes its lost run), from ReplayTrace.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "bench_util.h"
#include "benchmarks.h"
#include "day_peak_workload.h"
#include "store/store.h"
#include "tessera/clock.h"
#include "tessera/scheduler.h"
#include "trace_replay.h"

namespace tessera::bench {
namespace {

// 2024-06-01 00:00 UTC: a midnight (the day curve's hours are UTC) and the first of a month, so
// a replay of at most 28 days stays in one month and the ledger's month is its whole spend.
constexpr TimestampUs kEpochUs = 1'717'200'000LL * 1'000'000;
constexpr double kHourUs = 3600e6;
constexpr int kGpusPerNode = 8;
const char* const kQueues[] = {"training", "interactive"};

struct Configuration {
  std::string id;
  std::string what;
  int private_nodes = 0;
  bool on_demand = false;
  bool spot = false;
  bool budgets = false;
};

v1::SimulatedNodeGroup NodeShape(const std::string& prefix, int count) {
  v1::SimulatedNodeGroup g;
  g.set_name_prefix(prefix);
  g.set_count(count);
  g.set_cpu_milli(96'000);
  g.set_memory_mib(1'048'576);
  g.set_gpus(kGpusPerNode);
  g.set_gpu_model("A100-80GB");
  g.set_gpu_memory_mib(81'920);
  return g;
}

StatusOr<std::string> SimConfig(const BurstFlags& flags, const Configuration& c, int burst_nodes) {
  v1::SimulatedCluster cluster;
  *cluster.add_groups() = NodeShape("private", c.private_nodes);
  const int64_t delay_ms = static_cast<int64_t>(flags.provision_delay_s * 1000);
  if (c.spot) {
    v1::SimulatedCapacityGroup* spot = cluster.add_capacity();
    *spot->mutable_nodes() = NodeShape("spot", burst_nodes);
    spot->set_price_per_hour(flags.spot_gpu_hour * kGpusPerNode);
    spot->set_market(v1::SPOT);
    spot->set_provision_delay_ms(delay_ms);
    spot->set_interrupt_after_ms(static_cast<int64_t>(flags.spot_interrupt_after_h * 3600'000));
  }
  if (c.on_demand) {
    v1::SimulatedCapacityGroup* od = cluster.add_capacity();
    *od->mutable_nodes() = NodeShape("ondemand", burst_nodes);
    od->set_price_per_hour(flags.on_demand_gpu_hour * kGpusPerNode);
    od->set_market(v1::ON_DEMAND);
    od->set_provision_delay_ms(delay_ms);
  }
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(cluster, &json).ok()) {
    return InternalError("burst: the sim config could not be written as JSON");
  }
  return json;
}

// What the bench reads at every step, times the span the state holds.
struct Sampled {
  double private_gpu_us = 0;
  double burst_gpu_us[2] = {0, 0};        // present; [0] on-demand, [1] spot.
  double burst_alloc_gpu_us[2] = {0, 0};  // held by tasks.
  double burst_cost = 0;                  // node time x its group's price.
  // Burst GPUs held by tasks while private GPUs stood idle: min of the two, over time.
  double burst_while_private_idle_gpu_us = 0;
  int peak_burst_nodes = 0;
  std::map<std::string, double> out_of_budget_us;  // per queue.
};

Status Sample(Scheduler& s, const BurstFlags& flags, bool burst, TimestampUs now, TimestampUs until,
              Sampled& out) {
  const double dt = static_cast<double>(until - now);
  TESSERA_ASSIGN_OR_RETURN(std::vector<v1::Node> nodes, s.ListNodes());
  double private_idle = 0;
  double burst_held = 0;
  int burst_nodes = 0;
  for (const v1::Node& node : nodes) {
    const double gpus = node.spec().gpus_size();
    const double held = static_cast<double>(node.status().allocated().gpu_milli()) / 1000;
    auto market = node.spec().labels().find("tessera.io/burst-market");
    if (market == node.spec().labels().end()) {
      out.private_gpu_us += gpus * dt;
      private_idle += gpus - held;
      continue;
    }
    const int m = market->second == "spot" ? 1 : 0;
    ++burst_nodes;
    burst_held += held;
    out.burst_gpu_us[m] += gpus * dt;
    out.burst_alloc_gpu_us[m] += held * dt;
    const double price_per_gpu = m == 1 ? flags.spot_gpu_hour : flags.on_demand_gpu_hour;
    out.burst_cost += price_per_gpu * gpus * dt / kHourUs;
  }
  out.burst_while_private_idle_gpu_us += std::min(private_idle, burst_held) * dt;
  out.peak_burst_nodes = std::max(out.peak_burst_nodes, burst_nodes);
  if (burst) {
    for (const char* name : kQueues) {
      TESSERA_ASSIGN_OR_RETURN(v1::Queue q, s.GetQueue(name));
      if (!q.status().burst().out_of_budget().empty()) out.out_of_budget_us[name] += dt;
    }
  }
  return Status::Ok();
}

// The global account's spend this month, as the scheduler stored it.
StatusOr<double> StoredGlobalSpend(const std::string& path) {
  StoreOptions options;
  options.path = path;
  options.durable = false;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<store::Store> store, store::Store::Open(options));
  std::vector<v1::BurstAccountRecord> accounts;
  TESSERA_RETURN_IF_ERROR(store->LoadBurstAccounts(&accounts));
  for (const v1::BurstAccountRecord& a : accounts) {
    if (a.queue().empty()) return a.month();
  }
  return 0.0;
}

StatusOr<Json> RunConfiguration(const BurstFlags& flags, const DayPeakWorkload& workload,
                                const Configuration& c, int burst_nodes, int run) {
  ScratchDir dir("tessera-burst-bench");
  const std::string store_path = dir.path() + "/tessera.db";
  auto clock = std::make_shared<ManualClock>(kEpochUs);
  Options options;
  options.log.level = LogLevel::kWarning;
  options.store.path = store_path;
  options.store.durable = false;
  options.default_queue.clear();
  options.clock = clock;
  options.plugin_dirs = {BuildPluginsDir()};
  BackendOptions cloud;
  cloud.name = "cloud";
  cloud.plugin.plugin = "sim";
  TESSERA_ASSIGN_OR_RETURN(cloud.plugin.config, SimConfig(flags, c, burst_nodes));
  options.backends.push_back(cloud);
  options.elastic.max_nodes = std::max(options.elastic.max_nodes, 2 * burst_nodes);
  if (c.budgets) options.elastic.budget_per_day = flags.budget_global_per_day;

  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler, Scheduler::Open(options));
  for (const char* name : kQueues) {
    v1::QueueSpec spec;
    spec.set_name(name);
    spec.set_weight(1);
    if (c.budgets && std::string(name) == "training") {
      spec.mutable_burst_budget()->set_per_hour(flags.budget_training_per_hour);
    }
    TESSERA_RETURN_IF_ERROR(scheduler->CreateQueue(spec));
  }
  const bool burst = c.on_demand || c.spot;
  Sampled sampled;
  replay::ReplayOptions replay_options;
  replay_options.epoch_us = kEpochUs;
  replay_options.on_step = [&](TimestampUs now, TimestampUs until) {
    return Sample(*scheduler, flags, burst, now, until, sampled);
  };
  replay_options.on_progress = [&](const replay::ReplayProgress& p) {
    Progress("burst " + c.id + " run " + std::to_string(run) + ": hour " +
             std::to_string(p.simulated_us / 3'600'000'000LL) + ", " + std::to_string(p.submitted) +
             "/" + std::to_string(p.total) + " submitted");
  };
  TESSERA_ASSIGN_OR_RETURN(replay::ReplayResult replay,
                           replay::ReplayTrace(*scheduler, *clock, workload.jobs, replay_options));
  double charged_to_queues = 0;
  for (const char* name : kQueues) {
    TESSERA_ASSIGN_OR_RETURN(v1::Queue q, scheduler->GetQueue(name));
    charged_to_queues += q.status().burst().this_month();
  }
  const v1::SchedulerStats stats = scheduler->GetStats();
  scheduler.reset();
  TESSERA_ASSIGN_OR_RETURN(double ledger, StoredGlobalSpend(store_path));

  const replay::ReplayMetrics m = replay::SummarizeReplay(replay, 1);
  double delivered_gpu_hours = 0;
  for (const replay::ReplayedJob& job : replay.jobs) {
    if (job.state != v1::SUCCEEDED) continue;
    delivered_gpu_hours +=
        static_cast<double>(job.gpu_milli) / 1000 * static_cast<double>(job.duration_us) / kHourUs;
  }
  const double hours = static_cast<double>(replay.end_us - replay.epoch_us) / kHourUs;
  const int private_gpus = c.private_nodes * kGpusPerNode;
  const double private_cost = private_gpus * flags.private_gpu_hour * hours;
  const double total = private_cost + ledger;
  Json queue_wait = Json::object();
  for (const char* name : kQueues) {
    const std::string queue = name;
    const replay::ReplayMetrics q = replay::SummarizeReplay(replay, 1, &queue);
    queue_wait[name] = {
        {"jobs", q.jobs}, {"p50_wait_s", q.p50_wait_s}, {"p95_wait_s", q.p95_wait_s}};
  }
  Json out_of_budget = Json::object();
  for (const auto& [queue, us] : sampled.out_of_budget_us) out_of_budget[queue] = us / kHourUs;
  return Json{
      {"benchmark", "burst"},
      {"config", c.id},
      {"what", c.what},
      {"private_nodes", c.private_nodes},
      {"private_gpus", private_gpus},
      {"hours", hours},
      {"private_cost", private_cost},
      {"burst_cost", ledger},
      {"burst_cost_charged_to_queues", charged_to_queues},
      {"burst_cost_idle", ledger - charged_to_queues},
      {"burst_cost_sampled", sampled.burst_cost},
      {"total_cost", total},
      {"delivered_gpu_hours", delivered_gpu_hours},
      {"cost_per_delivered_gpu_hour", delivered_gpu_hours > 0 ? total / delivered_gpu_hours : 0},
      {"jobs", m.jobs},
      {"finished", m.finished},
      {"unfinished", m.unfinished},
      {"requeued", m.requeued},
      {"p50_wait_s", m.p50_wait_s},
      {"p95_wait_s", m.p95_wait_s},
      {"p99_wait_s", m.p99_wait_s},
      {"avg_wait_s", m.avg_wait_s},
      {"max_wait_s", m.max_wait_s},
      {"queue_wait", queue_wait},
      {"private_gpu_hours", sampled.private_gpu_us / kHourUs},
      {"on_demand_gpu_hours", sampled.burst_gpu_us[0] / kHourUs},
      {"spot_gpu_hours", sampled.burst_gpu_us[1] / kHourUs},
      {"on_demand_gpu_hours_used", sampled.burst_alloc_gpu_us[0] / kHourUs},
      {"spot_gpu_hours_used", sampled.burst_alloc_gpu_us[1] / kHourUs},
      {"burst_gpu_hours_while_private_idle", sampled.burst_while_private_idle_gpu_us / kHourUs},
      {"peak_burst_nodes", sampled.peak_burst_nodes},
      {"out_of_budget_hours", out_of_budget},
      {"steps", replay.steps},
      {"wall_s", replay.wall_s},
      {"bugs", stats.bugs()},
  };
}

}  // namespace

int RunBurst(BurstFlags flags) {
  if (flags.quick) {
    flags.days = std::min(flags.days, 1.0);
    flags.mean_gpus = std::min(flags.mean_gpus, 40.0);
  }
  if (flags.days > 28) {
    std::cerr << "burst: --days: at most 28 (the spend ledger's month holds the whole run)\n";
    return 2;
  }
  DayPeakOptions workload_options;
  workload_options.days = flags.days;
  workload_options.mean_gpus = flags.mean_gpus;
  workload_options.amplitude = flags.amplitude;
  workload_options.peak_hour = flags.peak_hour;
  workload_options.checkpointing_share = flags.checkpointing_share;
  workload_options.seed = flags.common.seed;
  const DayPeakWorkload workload = MakeDayPeakWorkload(workload_options);
  const int mean_nodes = static_cast<int>(std::ceil(workload.mean_gpus / kGpusPerNode));
  // The daily peak as the curve shows it: the busiest hour of the day, averaged over the days.
  // (The highest instant, peak_gpus, is a random spike above it.)
  const double peak_hour_gpus =
      *std::max_element(workload.gpus_by_hour.begin(), workload.gpus_by_hour.end());
  const int peak_nodes = static_cast<int>(std::ceil(peak_hour_gpus / kGpusPerNode));
  // Enough burst nodes per group for the highest instant above the mean pool, twice over, so
  // that a group's max_nodes never binds.
  const int instant_peak_nodes = static_cast<int>(std::ceil(workload.peak_gpus / kGpusPerNode));
  const int burst_nodes = std::max(1, 2 * (instant_peak_nodes - mean_nodes));
  Json by_hour = Json::array();
  for (double g : workload.gpus_by_hour) by_hour.push_back(std::round(g * 10) / 10);
  Progress("burst: " + std::to_string(workload.jobs.size()) + " jobs over " +
           std::to_string(flags.days) + " days; GPUs in use at zero wait: mean " +
           std::to_string(workload.mean_gpus) + ", peak " + std::to_string(workload.peak_gpus));
  const Json scenario = {
      {"days", flags.days},
      {"seed", flags.common.seed},
      {"jobs", workload.jobs.size()},
      {"work_gpu_hours", workload.gpu_hours},
      {"mean_gpus", workload.mean_gpus},
      {"peak_gpus", workload.peak_gpus},
      {"peak_hour_gpus", peak_hour_gpus},
      {"gpus_by_hour_utc", by_hour},
      {"amplitude", flags.amplitude},
      {"peak_hour_utc", flags.peak_hour},
      {"checkpointing_share", flags.checkpointing_share},
      {"prices_per_gpu_hour",
       {{"private", flags.private_gpu_hour},
        {"on_demand", flags.on_demand_gpu_hour},
        {"spot", flags.spot_gpu_hour}}},
      {"node", "8 x A100-80GB"},
      {"provision_delay_s", flags.provision_delay_s},
      {"spot_interrupt_after_h", flags.spot_interrupt_after_h},
      {"budget_training_per_hour", flags.budget_training_per_hour},
      {"budget_global_per_day", flags.budget_global_per_day},
      {"elastic",
       "library defaults (scale_out_after 120 s, scale_in_after 600 s, "
       "max_requests_per_minute 6, group_backoff 300 s, metering 60 s)"},
  };
  std::vector<Configuration> all = {
      {"A", "private pool for the mean, no burst", mean_nodes, false, false, false},
      {"B", "private pool for the peak hour, no burst", peak_nodes, false, false, false},
      {"C", "mean pool + burst on-demand", mean_nodes, true, false, false},
      {"D", "mean pool + burst spot first, on-demand fallback", mean_nodes, true, true, false},
      {"E", "D with budgets (training per hour, global per day)", mean_nodes, true, true, true},
  };
  int failures = 0;
  for (const Configuration& c : all) {
    if (flags.configs.find(c.id) == std::string::npos) continue;
    std::vector<Json> runs;
    for (int run = 1; run <= flags.common.repeat; ++run) {
      StatusOr<Json> result = RunConfiguration(flags, workload, c, burst_nodes, run);
      if (!result.ok()) {
        std::cerr << "burst " << c.id << ": " << result.status() << '\n';
        return 1;
      }
      runs.push_back(*result);
    }
    Json summary = Summarize(runs, "total_cost");
    summary["scenario"] = scenario;
    const double ledger = summary.value("burst_cost", 0.0);
    const double sampled = summary.value("burst_cost_sampled", 0.0);
    if (std::abs(ledger - sampled) > 0.005 * std::max(1.0, sampled)) {
      std::cerr << "burst " << c.id << ": the ledger charged " << ledger
                << " but burst node time x price sums to " << sampled << '\n';
      ++failures;
    }
    if (summary.value("unfinished", 0) > 0 || summary.value("bugs", 0) > 0) ++failures;
    EmitJsonLine(summary);
    PrintTable(summary, {"config", "what", "private_gpus", "hours", "private_cost", "burst_cost",
                         "burst_cost_idle", "total_cost", "delivered_gpu_hours",
                         "cost_per_delivered_gpu_hour", "p50_wait_s", "p95_wait_s", "finished",
                         "requeued", "on_demand_gpu_hours", "spot_gpu_hours",
                         "burst_gpu_hours_while_private_idle", "wall_s"});
  }
  return failures > 0 ? 1 : 0;
}

}  // namespace tessera::bench
