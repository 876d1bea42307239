#include "openb_replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <tuple>

#include "bench_util.h"
#include "fgd_results.h"
#include "placement/fragmentation_aware_scorer.h"
#include "placement/node_index.h"
#include "placement/placer.h"
#include "placement/scorer.h"

namespace tessera::bench {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Uniform in [0, n), by rejection, so that a seed means the same on every platform.
uint64_t Below(std::mt19937_64& random, uint64_t n) {
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do {
    x = random();
  } while (x >= limit);
  return x % n;
}

// The pods of one seed's run, in arrival order (indexes into Trace::pods).
std::vector<size_t> Arrivals(const OpenbTrace& t, double tune, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<size_t> order(t.pods.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[Below(random, i)]);

  int64_t total = 0;
  for (const OpenbPod& p : t.pods) total += TotalGpuMilli(p);
  const double target = tune * static_cast<double>(t.capacity_milli);
  if (static_cast<double>(total) > target) {
    while (static_cast<double>(total) > target && !order.empty()) {
      const size_t i = Below(random, order.size());
      total -= TotalGpuMilli(t.pods[order[i]]);
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
    }
  } else {
    for (;;) {
      const size_t i = Below(random, t.pods.size());
      if (static_cast<double>(total + t.pods[i].gpu_milli) > target) break;
      total += TotalGpuMilli(t.pods[i]);
      order.push_back(i);
    }
  }
  return order;
}

// The scorer of a policy for one replay, and whether the Placer breaks its ties as the
// simulator's kube-scheduler does (by a random node order fixed per run).
struct Policy {
  std::unique_ptr<Scorer> scorer;
  bool simulator_ties = false;
};

// Fragmentation-aware placement as configured by `o`, with the node order varied per run as
// the simulator's node names are.
Policy FragmentationAware(const PlacementOptions& o, uint64_t seed) {
  return {std::make_unique<FragmentationAwareScorer>(o, seed), false};
}

Policy PolicyFor(const std::string& name, const OpenbTrace& t, uint64_t seed) {
  if (name == "bestfit") return {MakeScorer(PlacementOptions::BestFit()), true};
  if (name == "fgd") return {MakeScorer(PlacementOptions::Fgd(t.expected)), true};
  if (name == "fragmentation-aware") {
    // Given the trace's workload, comparing every fitting node.
    PlacementOptions o = PlacementOptions::FragmentationAware(t.expected);
    o.max_candidates = 0;
    return FragmentationAware(o, seed);
  }
  if (name == "default") {
    // The library's default options: no workload given, so a learning strategy learns it.
    const PlacementOptions o;
    if (o.strategy == PlacementOptions::Strategy::kFragmentationAware) {
      return FragmentationAware(o, seed);
    }
    return {MakeScorer(o), false};
  }
  if (name.starts_with("learned")) {
    // "learned": fragmentation-aware with a learned workload and the default candidate bound;
    // "learned-k<K>" compares at most K candidates per model, "learned-all" every one.
    PlacementOptions o = PlacementOptions::FragmentationAware({});
    const std::string bound = name.substr(std::string("learned").size());
    if (bound == "-all") {
      o.max_candidates = 0;
    } else if (bound.starts_with("-k") && bound.size() > 2) {
      o.max_candidates = std::stoi(bound.substr(2));
    } else if (!bound.empty()) {
      throw std::runtime_error("bad policy '" + name + "' (learned, learned-k<K>, learned-all)");
    }
    return FragmentationAware(o, seed);
  }
  if (name == "binpack") return {MakeScorer(PlacementOptions::Binpack()), false};
  if (name == "spread") return {MakeScorer(PlacementOptions::Spread()), false};
  std::string known;
  for (const std::string& n : OpenbPolicies()) known += (known.empty() ? "" : ", ") + n;
  throw std::runtime_error("unknown policy '" + name + "' (" + known + ")");
}

OpenbFailReason Explain(const Cluster& cluster, const TaskShape& shape) {
  TaskShape gpus_only = shape;
  gpus_only.cpu_milli = 0;
  gpus_only.memory_mib = 0;
  TaskShape no_memory = shape;
  no_memory.memory_mib = 0;
  bool gpus_fit = false;
  for (const NodeState& n : cluster.nodes()) {
    if (n.Fit(no_memory, DevicePreference::kTightest)) return OpenbFailReason::kMemory;
    if (!gpus_fit && n.Fit(gpus_only, DevicePreference::kTightest)) gpus_fit = true;
  }
  return gpus_fit ? OpenbFailReason::kCpu : OpenbFailReason::kGpu;
}

// Python's round(x, 0) on a float: to nearest, halves to even (the default FP rounding mode).
double RoundHalfEven(double x) { return std::nearbyint(x); }

std::vector<double> Curve(const std::vector<std::pair<int64_t, int64_t>>& records,
                          int64_t total_gpus) {
  std::vector<double> arrived(records.size()), allocated(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const double gpus = static_cast<double>(total_gpus);
    arrived[i] = RoundHalfEven(static_cast<double>(records[i].first) / gpus / 10.0);
    allocated[i] = std::round(static_cast<double>(records[i].second) / gpus / 10.0 * 100) / 100;
  }
  std::vector<double> curve(kOpenbPoints, kNaN);
  for (int k = 0; k < kOpenbPoints; ++k) {
    for (int width : {0, 1}) {
      double sum = 0;
      int n = 0;
      for (size_t i = 0; i < records.size(); ++i) {
        if (arrived[i] >= k - width && arrived[i] <= k + width) {
          sum += allocated[i];
          ++n;
        }
      }
      if (n > 0) {
        curve[k] = std::round(sum / n * 100) / 100;
        break;
      }
    }
  }
  return curve;
}

}  // namespace

int64_t TotalGpuMilli(const OpenbPod& p) { return int64_t{p.num_gpu} * p.gpu_milli; }

OpenbTrace LoadOpenbTrace(const std::string& pod_path, const std::vector<OpenbNode>& nodes) {
  OpenbTrace t;
  t.name = OpenbTraceName(pod_path);
  t.pods = ValueOrThrow(ReadOpenbPods(pod_path));
  for (OpenbPod& p : t.pods) {
    // The simulator reads a share and a model constraint only for pods that ask for GPUs.
    if (p.num_gpu == 0) {
      p.gpu_milli = 0;
      p.gpu_models.clear();
    }
  }
  std::stable_sort(t.pods.begin(), t.pods.end(),
                   [](const OpenbPod& a, const OpenbPod& b) { return a.name < b.name; });
  for (const OpenbNode& n : nodes) {
    v1::NodeSpec spec;
    spec.set_name(n.name);
    spec.set_cpu_milli(n.cpu_milli);
    spec.set_memory_mib(n.memory_mib);
    for (int i = 0; i < n.gpus; ++i) {
      v1::GpuDevice* g = spec.add_gpus();
      g->set_index(i);
      g->set_model(n.model);
      g->set_memory_mib(OpenbGpuMemoryMib(n.model));
    }
    StatusOr<NodeIndexId> id = t.cluster.AddNode(spec);
    if (!id.ok()) throw std::runtime_error(id.status().ToString());
    t.total_gpus += n.gpus;
  }
  t.capacity_milli = t.cluster.capacity().gpu_milli();

  std::map<std::tuple<int64_t, int64_t, int, int, std::vector<std::string>>, size_t> expected_index;
  for (const OpenbPod& p : t.pods) {
    TaskShape s;
    s.cpu_milli = p.cpu_milli;
    s.memory_mib = p.memory_mib;
    s.gpu_count = p.num_gpu;
    s.gpu_milli = p.gpu_milli;
    for (const std::string& m : p.gpu_models) {
      std::optional<int> id = t.cluster.models().Intern(m);
      if (!id) throw std::runtime_error("too many GPU models in " + pod_path);
      s.models |= ModelMask{1} << *id;
    }
    t.shapes.push_back(s);

    auto [it, inserted] = expected_index.try_emplace(
        std::make_tuple(p.cpu_milli, p.memory_mib, p.num_gpu, p.gpu_milli, p.gpu_models),
        t.expected.size());
    if (inserted) {
      ExpectedTask e;
      e.cpu_milli = p.cpu_milli;
      e.memory_mib = p.memory_mib;
      e.gpu_count = p.num_gpu;
      e.gpu_milli = p.num_gpu > 0 ? p.gpu_milli : 0;
      e.gpu_models = p.gpu_models;
      e.count = 0;
      t.expected.push_back(e);
    }
    t.expected[it->second].count += 1;
  }
  return t;
}

const std::vector<std::string>& OpenbPolicies() {
  static const std::vector<std::string> names = {"bestfit", "fgd",          "fragmentation-aware",
                                                 "learned", "learned-k<K>", "learned-all",
                                                 "default", "binpack",      "spread"};
  return names;
}

OpenbSeedResult ReplayOpenbSeed(const OpenbTrace& t, const std::string& policy_name, double tune,
                                uint64_t seed) {
  Stopwatch watch;
  const std::vector<size_t> arrivals = Arrivals(t, tune, seed);
  Cluster cluster = t.cluster;
  NodeIndex index;
  Policy policy = PolicyFor(policy_name, t, seed);
  Placer placer(cluster, index, std::move(policy.scorer));
  if (policy.simulator_ties) placer.BreakTiesByRandomNodeOrder(seed);
  for (const NodeState& n : cluster.nodes()) placer.Refresh(n.id());

  OpenbSeedResult r;
  std::vector<std::pair<int64_t, int64_t>> records;  // arrived, allocated milli-GPU.
  records.reserve(arrivals.size() + 1);
  records.emplace_back(0, 0);
  int64_t arrived = 0, allocated = 0;
  for (size_t i : arrivals) {
    arrived += TotalGpuMilli(t.pods[i]);
    // The pod is submitted, then placed: a policy that learns its workload sees it first, as
    // the engine's scorer sees every job it takes on.
    placer.Observe(t.shapes[i], 1);
    PlacementResult placed = placer.Place(t.shapes[i], 1, 1, false);
    if (placed.placed()) {
      allocated += TotalGpuMilli(t.pods[i]);
    } else {
      ++r.failed;
      // Up to 100 % arrived load: what the headline number is made of.
      if (arrived <= t.capacity_milli) {
        r.failed_milli[static_cast<int>(Explain(cluster, t.shapes[i]))] += TotalGpuMilli(t.pods[i]);
      }
    }
    records.emplace_back(arrived, allocated);
  }
  for (const NodeState& n : cluster.nodes()) {
    r.max_tasks_per_node = std::max(r.max_tasks_per_node, n.running_tasks());
  }
  r.pods = static_cast<int64_t>(arrivals.size());
  r.curve = Curve(records, t.total_gpus);
  r.seconds = watch.Seconds();
  return r;
}

}  // namespace tessera::bench
