// openb: the Alibaba GPU-sharing trace replayed with the FGD paper's protocol (openb_replay.h),
// compared with the authors' published results (fgd_results.h).
//
// For each trace and policy, the seeds are replayed in parallel (one thread per core by
// default) and one JSON line reports the means over the seeds of the unallocated GPU % at 100 %
// and 130 % arrived load, the per-seed values, the published values for the trace (the same
// policy's, and BestFit's and FGD's), both allocation curves for the plot, why the failed pods
// failed, and the wall time. A comparison table goes to stderr at the end.
//
//   tessera-bench openb --trace default --policy fgd --seeds 10
//   tessera-bench openb --trace all --policy all > openb.jsonl
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "bench_util.h"
#include "benchmarks.h"
#include "fgd_results.h"
#include "openb_pod_csv.h"
#include "openb_replay.h"

namespace tessera::bench {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

double Mean(const std::vector<double>& v) {
  double sum = 0;
  int n = 0;
  for (double x : v) {
    if (!std::isnan(x)) {
      sum += x;
      ++n;
    }
  }
  return n ? sum / n : kNaN;
}

double Stdev(const std::vector<double>& v) {
  const double m = Mean(v);
  double sum = 0;
  int n = 0;
  for (double x : v) {
    if (!std::isnan(x)) {
      sum += (x - m) * (x - m);
      ++n;
    }
  }
  return n > 1 ? std::sqrt(sum / (n - 1)) : 0;
}

Json Number(double x) { return std::isnan(x) ? Json() : Json(std::round(x * 1000) / 1000); }

Json Numbers(const std::vector<double>& v) {
  Json out = Json::array();
  for (double x : v) out.push_back(Number(x));
  return out;
}

// Mean curve over the seeds of one (trace, policy) of the published results, or empty.
std::vector<double> PublishedMeanCurve(const PublishedCurves& published, const std::string& trace,
                                       const std::string& policy) {
  auto it = published.find({trace, policy});
  if (it == published.end()) return {};
  std::vector<double> mean(kOpenbPoints);
  for (int k = 0; k < kOpenbPoints; ++k) {
    std::vector<double> column;
    for (const auto& seed : it->second) column.push_back(seed[k]);
    mean[k] = Mean(column);
  }
  return mean;
}

std::vector<double> PublishedAt(const PublishedCurves& published, const std::string& trace,
                                const std::string& policy, int k) {
  std::vector<double> out;
  auto it = published.find({trace, policy});
  if (it == published.end()) return out;
  for (const auto& seed : it->second) out.push_back(100 - seed[k]);
  return out;
}

std::string PublishedName(const std::string& policy) {
  if (policy == "bestfit") return "BestFit";
  if (policy == "fgd") return "FGD";
  return "";
}

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Json RunOne(const OpenbTrace& t, const std::string& policy, const OpenbFlags& flags,
            const PublishedCurves& published, const std::string& nodes_name) {
  const int seeds = flags.seeds;
  const int threads =
      std::max(1, std::min(seeds, flags.threads > 0
                                      ? flags.threads
                                      : static_cast<int>(std::thread::hardware_concurrency())));
  std::vector<OpenbSeedResult> results(seeds);
  std::atomic<int> next{0};
  std::mutex error_mutex;
  std::string error;
  Stopwatch wall;
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < seeds; i = next++) {
        try {
          results[i] = ReplayOpenbSeed(t, policy, flags.tune, flags.first_seed + i);
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(error_mutex);
          error = e.what();
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  if (!error.empty()) throw std::runtime_error(error);
  const double wall_s = wall.Seconds();

  std::vector<double> at100, at130, seed_s, failed, pods;
  int max_tasks = 0;
  std::vector<double> curve(kOpenbPoints);
  for (const OpenbSeedResult& r : results) {
    at100.push_back(100 - r.curve[100]);
    at130.push_back(100 - r.curve[130]);
    seed_s.push_back(r.seconds);
    failed.push_back(static_cast<double>(r.failed));
    pods.push_back(static_cast<double>(r.pods));
    max_tasks = std::max(max_tasks, r.max_tasks_per_node);
  }
  for (int k = 0; k < kOpenbPoints; ++k) {
    std::vector<double> column;
    for (const OpenbSeedResult& r : results) column.push_back(r.curve[k]);
    curve[k] = Mean(column);
  }

  Json j;
  j["benchmark"] = "openb";
  j["trace"] = t.name;
  j["nodes"] = nodes_name;
  j["policy"] = policy;
  j["seeds"] = seeds;
  j["first_seed"] = flags.first_seed;
  j["tune"] = flags.tune;
  j["threads"] = threads;
  j["unallocated_gpu_pct_at_100"] = Number(Mean(at100));
  j["unallocated_gpu_pct_at_130"] = Number(Mean(at130));
  j["unallocated_gpu_pct_at_100_stdev"] = Number(Stdev(at100));
  j["unallocated_gpu_pct_at_100_per_seed"] = Numbers(at100);
  j["unallocated_gpu_pct_at_130_per_seed"] = Numbers(at130);
  j["wall_s"] = Number(wall_s);
  j["seed_s_mean"] = Number(Mean(seed_s));
  j["pods_per_seed"] = Number(Mean(pods));
  j["failed_pods_per_seed"] = Number(Mean(failed));
  j["max_tasks_per_node"] = max_tasks;
  // Where the unallocated GPUs at 100 % come from: the GPU request of pods that failed by then,
  // in % of capacity, by why no node took them.
  Json reasons = Json::object();
  const char* reason_names[] = {"gpu", "cpu", "memory"};
  for (int k = 0; k < 3; ++k) {
    std::vector<double> v;
    for (const OpenbSeedResult& r : results) {
      v.push_back(100.0 * static_cast<double>(r.failed_milli[k]) /
                  static_cast<double>(t.capacity_milli));
    }
    reasons[reason_names[k]] = Number(Mean(v));
  }
  j["failed_gpu_pct_by_reason_at_100"] = reasons;
  const std::string same = PublishedName(policy);
  j["published_policy"] = same.empty() ? Json() : Json(same);
  j["published_unallocated_gpu_pct_at_100"] =
      same.empty() ? Json() : Number(Mean(PublishedAt(published, t.name, same, 100)));
  j["published_unallocated_gpu_pct_at_130"] =
      same.empty() ? Json() : Number(Mean(PublishedAt(published, t.name, same, 130)));
  for (const char* p : {"BestFit", "FGD"}) {
    std::string key = p == std::string("FGD") ? "fgd" : "bestfit";
    j["published_" + key + "_unallocated_gpu_pct_at_100"] =
        Number(Mean(PublishedAt(published, t.name, p, 100)));
    j["published_" + key + "_unallocated_gpu_pct_at_130"] =
        Number(Mean(PublishedAt(published, t.name, p, 130)));
  }
  j["alloc_pct_by_arrived"] = Numbers(curve);
  j["published_alloc_pct_by_arrived"] =
      Numbers(PublishedMeanCurve(published, t.name, same.empty() ? "FGD" : same));
  j["published_curve_policy"] = same.empty() ? "FGD" : same;
  return j;
}

std::string Cell(const Json& v) {
  if (v.is_null()) return "-";
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << v.get<double>();
  return os.str();
}

// The comparison table on stderr: published BestFit and FGD, then ours per policy, for each
// trace, and how many traces each policy beats published FGD on.
void PrintComparison(const std::vector<Json>& results, const std::vector<std::string>& policies) {
  std::map<std::string, std::map<std::string, Json>> by_trace;
  std::vector<std::string> traces;
  for (const Json& r : results) {
    const std::string trace = r["trace"];
    if (!by_trace.count(trace)) traces.push_back(trace);
    by_trace[trace][r["policy"]] = r;
  }
  std::cerr << "\nunallocated GPU % at 100% arrived load (mean of seeds; lower is better)\n";
  std::cerr << std::left << std::setw(13) << "trace" << std::right << std::setw(10) << "pub BF"
            << std::setw(10) << "pub FGD";
  // Columns as wide as the longest policy name, so the table stays aligned.
  size_t width = 10;
  for (const std::string& p : policies) width = std::max(width, p.size() + 2);
  const int w = static_cast<int>(width);
  for (const std::string& p : policies) std::cerr << std::setw(w) << p;
  std::cerr << std::setw(10) << "wall_s" << '\n';
  std::map<std::string, int> wins;
  for (const std::string& trace : traces) {
    const Json& any = by_trace[trace].begin()->second;
    const Json pub_fgd = any["published_fgd_unallocated_gpu_pct_at_100"];
    std::cerr << std::left << std::setw(13) << trace << std::right << std::setw(10)
              << Cell(any["published_bestfit_unallocated_gpu_pct_at_100"]) << std::setw(10)
              << Cell(pub_fgd);
    double wall = 0;
    for (const std::string& p : policies) {
      auto it = by_trace[trace].find(p);
      if (it == by_trace[trace].end()) {
        std::cerr << std::setw(w) << "-";
        continue;
      }
      const Json& v = it->second["unallocated_gpu_pct_at_100"];
      const bool beats = !v.is_null() && !pub_fgd.is_null() && v.get<double>() < pub_fgd;
      if (beats) ++wins[p];
      std::cerr << std::setw(w) << (Cell(v) + (beats ? "*" : " "));
      wall = std::max(wall, it->second["wall_s"].get<double>());
    }
    std::cerr << std::setw(10) << Cell(wall) << '\n';
  }
  std::cerr << std::left << std::setw(33) << "traces below published FGD (*)" << std::right;
  for (const std::string& p : policies) std::cerr << std::setw(w) << wins[p];
  std::cerr << "  of " << traces.size() << "\n";
}

}  // namespace

int RunOpenb(const OpenbFlags& flags) {
  const std::string data = OpenbDataDir(flags.data);
  const std::string node_path =
      ValueOrThrow(ResolveOpenbFile(flags.nodes, data, "openb_node_list_"));
  const std::vector<OpenbNode> nodes = ValueOrThrow(ReadOpenbNodes(node_path));
  const PublishedCurves published = ReadFgdResults(data);
  std::vector<std::string> traces = flags.trace == "all" ? FgdTraceNames() : SplitList(flags.trace);
  std::vector<std::string> policies =
      flags.policy == "all" ? std::vector<std::string>{"bestfit", "fgd", "fragmentation-aware"}
                            : SplitList(flags.policy);
  if (traces.empty() || policies.empty()) throw std::runtime_error("no trace or policy given");

  std::vector<Json> results;
  for (const std::string& trace : traces) {
    const OpenbTrace t =
        LoadOpenbTrace(ValueOrThrow(ResolveOpenbFile(trace, data, "openb_pod_list_")), nodes);
    for (const std::string& policy : policies) {
      Progress("openb " + t.name + " " + policy + ": " + std::to_string(flags.seeds) + " seeds");
      Json r = RunOne(t, policy, flags, published, std::filesystem::path(node_path).filename());
      EmitJsonLine(r);
      std::cerr << "  unallocated at 100%: " << Cell(r["unallocated_gpu_pct_at_100"])
                << " (published FGD " << Cell(r["published_fgd_unallocated_gpu_pct_at_100"])
                << ", BestFit " << Cell(r["published_bestfit_unallocated_gpu_pct_at_100"])
                << "), at 130%: " << Cell(r["unallocated_gpu_pct_at_130"]) << ", "
                << Cell(r["wall_s"]) << " s\n";
      results.push_back(std::move(r));
    }
  }
  PrintComparison(results, policies);
  return 0;
}

}  // namespace tessera::bench
