// Implementation of the replay's summary and per-job CSV (replay_report.h).
#include "replay_report.h"

#include <cstdio>
#include <map>

#include "finish_time_fairness.h"
#include "tessera/job.h"

namespace tessera::replay {
namespace {

using Json = nlohmann::json;

std::string Seconds(TimestampUs t, TimestampUs epoch) {
  if (t <= 0) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", static_cast<double>(t - epoch) / 1e6);
  return buffer;
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

Json MetricsJson(const ReplayMetrics& m, const std::vector<double>& rho) {
  double max_rho = 0;
  double sum_rho = 0;
  int64_t counted = 0;
  for (double r : rho) {
    if (r < 0) continue;
    max_rho = std::max(max_rho, r);
    sum_rho += r;
    ++counted;
  }
  return Json{
      {"jobs", m.jobs},
      {"finished", m.finished},
      {"unfinished", m.unfinished},
      {"started", m.started},
      {"requeued", m.requeued},
      {"avg_jct_s", m.avg_jct_s},
      {"p50_jct_s", m.p50_jct_s},
      {"p95_jct_s", m.p95_jct_s},
      {"p99_jct_s", m.p99_jct_s},
      {"avg_wait_s", m.avg_wait_s},
      {"p50_wait_s", m.p50_wait_s},
      {"p95_wait_s", m.p95_wait_s},
      {"p99_wait_s", m.p99_wait_s},
      {"max_wait_s", m.max_wait_s},
      {"waited_jobs", m.waited},
      {"makespan_s", m.makespan_s},
      {"gpu_util_pct", m.gpu_util_pct},
      {"max_finish_time_fairness", max_rho},
      {"avg_finish_time_fairness", counted > 0 ? sum_rho / static_cast<double>(counted) : 0.0},
      {"preemptions", m.preemptions},
  };
}

Json SummaryJson(const Trace& trace, const RunOutcome& run) {
  const ReplayResult& r = run.result;
  const int64_t capacity = run.gpus * 1000;
  const std::vector<double> rho = FinishTimeFairness(r, capacity);
  const ReplayMetrics all = SummarizeReplay(r, capacity);

  Json bad = Json::array();
  for (const BadRow& row : trace.first_bad)
    bad.push_back({{"line", row.line}, {"reason", row.reason}});
  Json notes = Json::object();
  for (const auto& [name, count] : trace.notes) notes[name] = count;

  Json summary = MetricsJson(all, rho);
  // Utilisation from the allocations sampled at every step, which count every attempt of a job
  // (a preempted attempt held its GPUs too); job times give only each job's last attempt.
  summary["gpu_util_pct"] = all.gpu_util_sampled_pct;
  summary["lost_gpu_hours"] = static_cast<double>(run.stats.lost_gpu_seconds()) / 3600.0;
  summary["scheduler_preemptions"] = run.stats.preemptions();
  summary["submit_failures"] = r.submit_failures;
  summary["first_submit_error"] = r.first_submit_error;
  summary["trace"] = Json{{"rows", trace.rows},
                          {"jobs", static_cast<int64_t>(trace.jobs.size())},
                          {"bad_rows", trace.bad_rows},
                          {"first_bad_rows", bad},
                          {"rows_out_of_order", trace.out_of_order},
                          {"notes", notes}};
  summary["cluster"] = Json{{"nodes", run.nodes}, {"gpus", run.gpus}};
  summary["queues_created"] = run.queues_created;
  summary["one_queue"] = run.one_queue;
  summary["simulated_s"] = all.simulated_s;
  summary["wall_s"] = r.wall_s;
  summary["speedup"] = r.wall_s > 0 ? all.simulated_s / r.wall_s : 0.0;
  summary["steps"] = r.steps;
  summary["wall_breakdown_s"] = Json{{"submit", r.submit_wall_s},
                                     {"wait_idle", r.idle_wall_s},
                                     {"next_wakeup_and_sampling", r.sample_wall_s},
                                     {"read_back", r.read_back_wall_s}};
  summary["open_s"] = run.open_s;
  summary["decisions"] = run.stats.decisions();
  summary["bugs"] = run.stats.bugs();

  std::map<std::string, std::vector<double>> rho_of;
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    if (r.jobs[i].id != 0) rho_of[r.jobs[i].queue].push_back(rho[i]);
  }
  Json queues = Json::object();
  std::vector<double> weighted_shares;  // per queue that got jobs, for Jain's index.
  for (const auto& [queue, values] : rho_of) {
    const ReplayMetrics m = SummarizeReplay(r, capacity, &queue);
    Json q = MetricsJson(m, values);
    // Sampled where the queue ran its jobs; a tenant of replay.one_queue ran them in another
    // queue, so its share comes from its jobs' times (the last attempt of each).
    const bool sampled = run.one_queue.empty();
    q["gpu_util_pct"] = sampled ? m.gpu_util_sampled_pct : m.gpu_util_pct;
    auto w = r.queue_weight.find(queue);
    const double weight = w == r.queue_weight.end() ? 1.0 : w->second;
    q["weight"] = weight;
    queues[queue] = q;
    weighted_shares.push_back(q["gpu_util_pct"].get<double>() / 100.0 / weight);
  }
  summary["queues"] = queues;
  summary["jain_fairness"] = JainFairness(weighted_shares);
  return summary;
}

void WriteJobsCsv(std::ostream& out, const Trace& trace, const RunOutcome& run) {
  const ReplayResult& r = run.result;
  const std::vector<double> rho = FinishTimeFairness(r, run.gpus * 1000);
  out << "index,id,name,queue,state,submit_s,start_s,end_s,wait_s,jct_s,duration_s,gpu_milli,"
         "attempts,preemptions,rho\n";
  char buffer[64];
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const ReplayedJob& job = r.jobs[i];
    const v1::JobSpec& spec = trace.jobs[i].spec;
    out << i << ',' << job.id << ',' << Quoted(spec.name()) << ',' << spec.queue() << ','
        << (job.id == 0 ? "NOT_SUBMITTED" : v1::JobState_Name(job.state)) << ','
        << Seconds(job.submit_us, r.epoch_us) << ',' << Seconds(job.start_us, r.epoch_us) << ','
        << Seconds(job.end_us, r.epoch_us) << ',';
    if (job.start_us > 0) {
      std::snprintf(buffer, sizeof(buffer), "%.3f",
                    static_cast<double>(job.start_us - job.submit_us) / 1e6);
      out << buffer;
    }
    out << ',';
    if (IsTerminal(job.state) && job.end_us > 0) {
      std::snprintf(buffer, sizeof(buffer), "%.3f",
                    static_cast<double>(job.end_us - job.submit_us) / 1e6);
      out << buffer;
    }
    std::snprintf(buffer, sizeof(buffer), "%.3f",
                  static_cast<double>(spec.simulation().duration_ms()) / 1e3);
    out << ',' << buffer << ',' << job.gpu_milli << ',' << job.attempt << ',' << job.preemptions
        << ',';
    if (rho[i] >= 0) {
      std::snprintf(buffer, sizeof(buffer), "%.4f", rho[i]);
      out << buffer;
    }
    out << '\n';
  }
}

}  // namespace tessera::replay
