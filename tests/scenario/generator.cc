#include "scenario/generator.h"

#include <algorithm>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include "tessera/job.h"

namespace tessera::scenario {
namespace {

struct FeatureName {
  const char* name;
  bool Features::*flag;
};

constexpr FeatureName kFeatureNames[] = {
    {"gangs", &Features::gangs},
    {"elastic", &Features::elastic},
    {"fractions", &Features::fractions},
    {"mig", &Features::mig},
    {"mig_managed", &Features::mig_managed},
    {"time_slice", &Features::time_slice},
    {"mps", &Features::mps},
    {"vgpu", &Features::vgpu},
    {"guarantees", &Features::guarantees},
    {"parent_queues", &Features::parent_queues},
    {"caps", &Features::caps},
    {"memory_caps", &Features::memory_caps},
    {"priorities", &Features::priorities},
    {"cancels", &Features::cancels},
    {"gpu_failures", &Features::gpu_failures},
    {"drains", &Features::drains},
    {"restarts", &Features::restarts},
};

constexpr int64_t kCpuPerGpu = 8000;
constexpr int64_t kMemoryPerGpu = 32768;
// No job asks for more whole GPUs than this, and caps and borrowing limits are at least this,
// so every job fits its queue's limits.
constexpr int kMaxJobGpus = 4;

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(engine_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(engine_) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[Int(0, static_cast<int>(items.size()) - 1)];
  }

 private:
  std::mt19937_64 engine_;
};

// The kinds of GPU a generated cluster may have, and the jobs each kind invites.
enum class GpuKind { kWhole, kMig, kMigManaged, kTimeSlice, kMps, kVgpu };

v1::SimulatedNodeGroup* AddNodes(v1::SimulatedCluster& cluster, const std::string& prefix,
                                 int count, int gpus, const std::string& model,
                                 int64_t gpu_memory_mib) {
  v1::SimulatedNodeGroup* g = cluster.add_groups();
  g->set_name_prefix(prefix);
  g->set_count(count);
  g->set_cpu_milli(std::max<int64_t>(16000, kCpuPerGpu * gpus));
  g->set_memory_mib(std::max<int64_t>(65536, kMemoryPerGpu * gpus));
  g->set_gpus(gpus);
  g->set_gpu_model(model);
  g->set_gpu_memory_mib(gpu_memory_mib);
  return g;
}

void AddMig(v1::SimulatedNodeGroup* g, const std::vector<std::pair<std::string, int>>& layout) {
  g->set_sharing(v1::GPU_SHARING_MIG);
  for (const auto& [profile, start] : layout) {
    v1::MigInstance* m = g->add_mig_instances();
    m->set_profile(profile);
    m->set_start(start);
  }
}

struct Cluster {
  v1::SimulatedCluster spec;
  std::vector<GpuKind> kinds;
  std::vector<std::pair<std::string, int>> nodes;  // name, GPUs
  int whole_gpus = 0;
};

Cluster MakeCluster(Random& r, const Features& f) {
  Cluster c;
  const int whole_nodes = r.Int(1, 2);
  const int whole_gpus = r.Pick(std::vector<int>{2, 4, 8});
  v1::SimulatedNodeGroup* whole =
      AddNodes(c.spec, "gpu", whole_nodes, whole_gpus, "A100-80GB", 81920);
  if (r.Chance(0.3)) whole->set_sharing(v1::GPU_SHARING_EXCLUSIVE);
  c.kinds.push_back(GpuKind::kWhole);
  c.whole_gpus = whole_nodes * whole_gpus;
  for (int i = 0; i < whole_nodes; ++i)
    c.nodes.emplace_back("gpu-" + std::to_string(i), whole_gpus);

  auto add = [&](GpuKind kind, bool enabled, double chance) {
    if (!enabled || !r.Chance(chance)) return;
    const int gpus = r.Int(1, 2);
    std::string prefix;
    v1::SimulatedNodeGroup* g = nullptr;
    switch (kind) {
      case GpuKind::kMig:
        prefix = "mig";
        g = AddNodes(c.spec, prefix, 1, gpus, "A100-80GB", 81920);
        AddMig(g, r.Pick(std::vector<std::vector<std::pair<std::string, int>>>{
                      {{"3g.40gb", 0}, {"3g.40gb", 4}},
                      {{"4g.40gb", 0}, {"2g.20gb", 4}, {"1g.10gb", 6}},
                      {{"1g.10gb", 0}, {"1g.10gb", 1}, {"2g.20gb", 2}, {"3g.40gb", 4}}}));
        break;
      case GpuKind::kMigManaged:
        prefix = "mmig";
        g = AddNodes(c.spec, prefix, 1, gpus, "H100-80GB", 81920);
        AddMig(g, r.Chance(0.5)
                      ? std::vector<std::pair<std::string, int>>{{"7g.80gb", 0}}
                      : std::vector<std::pair<std::string, int>>{{"3g.40gb", 0}, {"3g.40gb", 4}});
        g->set_mig_managed(true);
        break;
      case GpuKind::kTimeSlice:
        prefix = "ts";
        g = AddNodes(c.spec, prefix, 1, gpus, "A100-80GB", 81920);
        g->set_sharing(v1::GPU_SHARING_TIME_SLICE);
        g->set_replicas(r.Int(2, 4));
        break;
      case GpuKind::kMps:
        prefix = "mps";
        g = AddNodes(c.spec, prefix, 1, gpus, "A100-80GB", 81920);
        g->set_sharing(v1::GPU_SHARING_MPS);
        break;
      case GpuKind::kVgpu:
        prefix = "vgpu";
        g = AddNodes(c.spec, prefix, 1, gpus, "A100-40GB", 40960);
        g->set_sharing(v1::GPU_SHARING_VGPU);
        break;
      case GpuKind::kWhole:
        return;
    }
    c.kinds.push_back(kind);
    c.nodes.emplace_back(prefix + "-0", gpus);
  };
  add(GpuKind::kMig, f.mig, 0.4);
  add(GpuKind::kMigManaged, f.mig_managed, 0.4);
  add(GpuKind::kTimeSlice, f.time_slice, 0.4);
  add(GpuKind::kMps, f.mps, 0.4);
  add(GpuKind::kVgpu, f.vgpu, 0.4);
  return c;
}

// Top-level queues "a", "b" (and maybe "c"); with parent_queues, "b" has leaves "b/x" and "b/y".
// Guarantees go to top-level queues only and add up to at most the whole GPUs of the cluster.
std::vector<v1::QueueSpec> MakeQueues(Random& r, const Features& f, const Cluster& c,
                                      std::vector<std::string>& leaves) {
  std::vector<v1::QueueSpec> queues;
  const int top = r.Int(2, 3);
  int guarantee_left = c.whole_gpus;
  for (int i = 0; i < top; ++i) {
    v1::QueueSpec q;
    q.set_name(std::string(1, static_cast<char>('a' + i)));
    q.set_weight(r.Int(1, 3));
    if (f.guarantees && guarantee_left > 0 && r.Chance(0.7)) {
      const int gpus = r.Int(1, std::max(1, guarantee_left / (top - i)));
      guarantee_left -= gpus;
      q.mutable_guarantee()->set_gpu_milli(1000LL * gpus);
      q.mutable_guarantee()->set_cpu_milli(kCpuPerGpu * gpus);
      q.mutable_guarantee()->set_memory_mib(kMemoryPerGpu * gpus);
    }
    if (f.caps && r.Chance(0.4)) {
      q.mutable_cap()->set_gpu_milli(q.guarantee().gpu_milli() + 1000LL * r.Int(kMaxJobGpus, 8));
    }
    if (f.caps && r.Chance(0.3)) {
      q.mutable_borrowing_limit()->set_gpu_milli(1000LL * r.Int(kMaxJobGpus, 8));
    }
    if (f.memory_caps && r.Chance(0.2)) {
      q.mutable_cap()->set_gpu_memory_mib(81920LL * r.Int(kMaxJobGpus, 8));
    }
    const bool parent = f.parent_queues && i == 1;
    if (!parent && r.Chance(0.2)) q.set_queueing(v1::STRICT_FIFO);
    queues.push_back(q);
    if (!parent) {
      leaves.push_back(q.name());
      continue;
    }
    for (const char* child : {"x", "y"}) {
      v1::QueueSpec leaf;
      leaf.set_name(q.name() + "/" + child);
      leaf.set_weight(r.Int(1, 2));
      if (f.caps && r.Chance(0.3))
        leaf.mutable_cap()->set_gpu_milli(1000LL * r.Int(kMaxJobGpus, 8));
      queues.push_back(leaf);
      leaves.push_back(leaf.name());
    }
  }
  return queues;
}

v1::JobSpec MakeJob(Random& r, const Features& f, const Cluster& c, const std::string& queue,
                    const std::string& name, Timescale timescale) {
  JobSpecBuilder job(queue);
  job.Name(name);
  if (f.priorities)
    job.PriorityClass(
        r.Pick(std::vector<std::string>{"low", "low", "normal", "normal", "normal", "high"}));
  const GpuKind kind = r.Pick(c.kinds);
  const bool share_of_whole = kind == GpuKind::kWhole && f.fractions && r.Chance(0.2);
  switch (kind) {
    case GpuKind::kWhole:
      if (share_of_whole) {
        job.GpuFraction(r.Pick(std::vector<int>{250, 500})).CpuMilli(1000).MemoryMib(4096);
        break;
      }
      {
        int tasks = 1;
        int gpus = r.Pick(std::vector<int>{1, 1, 1, 2});
        if (f.gangs && r.Chance(0.25)) tasks = 2;
        gpus = std::min(gpus, kMaxJobGpus / tasks);
        job.Gpus(gpus).Tasks(tasks).CpuMilli(r.Int(1, 4) * 1000LL * gpus).MemoryMib(8192LL * gpus);
        if (f.elastic && tasks == 1 && r.Chance(0.2)) job.Elastic(1, r.Int(2, kMaxJobGpus / gpus));
      }
      break;
    case GpuKind::kMig:
    case GpuKind::kMigManaged:
      job.MigProfile(r.Pick(std::vector<std::string>{"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb",
                                                     "4g.40gb"}))
          .CpuMilli(1000)
          .MemoryMib(4096);
      break;
    case GpuKind::kTimeSlice:
      job.GpuForm(v1::GPU_FORM_TIME_SLICE).CpuMilli(1000).MemoryMib(4096);
      if (r.Chance(0.5)) job.GpuMemoryMib(1024LL * r.Int(4, 20));
      break;
    case GpuKind::kMps:
      job.GpuForm(v1::GPU_FORM_MPS)
          .GpuFraction(r.Int(1, 5) * 100)
          .GpuMemoryMib(1024LL * r.Int(4, 24))
          .CpuMilli(1000)
          .MemoryMib(4096);
      break;
    case GpuKind::kVgpu:
      job.VgpuType(r.Pick(std::vector<std::string>{"A100-4C", "A100-8C", "A100-10C", "A100-20C"}))
          .CpuMilli(1000)
          .MemoryMib(4096);
      break;
  }
  const bool virtual_time = timescale == Timescale::kVirtual;
  const int64_t duration_ms = virtual_time ? 1000LL * r.Int(1, 120) : 50LL * r.Int(1, 40);
  job.SimulatedDurationMs(duration_ms, r.Chance(0.1) ? 1 : 0);
  if (r.Chance(0.4)) job.TimeLimitSeconds((duration_ms + 999) / 1000 + r.Int(0, 30));
  v1::JobSpec spec = job.Build();
  if (r.Chance(0.3)) spec.set_checkpoint_grace_s(r.Int(1, 2));
  if (r.Chance(0.2)) spec.mutable_simulation()->set_checkpoint_every_ms(duration_ms / 4 + 1);
  return spec;
}

}  // namespace

bool Features::Apply(const std::string& list, std::string& error) {
  std::istringstream words(list);
  std::string word;
  while (std::getline(words, word, ',')) {
    if (word.empty()) continue;
    if (word == "all" || word == "none") {
      for (const FeatureName& n : kFeatureNames) this->*n.flag = word == "all";
      continue;
    }
    bool on = true;
    if (word[0] == '+' || word[0] == '-') {
      on = word[0] == '+';
      word.erase(0, 1);
    }
    bool known = false;
    for (const FeatureName& n : kFeatureNames) {
      if (word == n.name) {
        this->*n.flag = on;
        known = true;
      }
    }
    if (!known) {
      error = "unknown scenario feature '" + word + "'";
      return false;
    }
  }
  return true;
}

std::string Features::Describe() const {
  std::string off;
  for (const FeatureName& n : kFeatureNames) {
    if (this->*n.flag) continue;
    off += (off.empty() ? "-" : ",-") + std::string(n.name);
  }
  return off;
}

Scenario Generate(uint64_t seed, const Features& f, Timescale timescale) {
  Random r(seed);
  Scenario s;
  s.seed = seed;
  const Cluster cluster = MakeCluster(r, f);
  s.cluster = cluster.spec;
  std::vector<std::string> leaves;
  s.queues = MakeQueues(r, f, cluster, leaves);
  const bool virtual_time = timescale == Timescale::kVirtual;
  s.min_runtime_s = virtual_time ? r.Int(0, 10) : 0;
  s.cooldown_s = virtual_time ? r.Int(0, 20) : r.Int(0, 1);

  const int steps = r.Int(15, 40);
  int64_t at_ms = 0;
  int jobs = 0;
  std::vector<std::string> submitted;
  std::vector<std::string> failed_nodes;
  for (int i = 0; i < steps; ++i) {
    at_ms += r.Chance(0.3) ? r.Int(0, 500) : (virtual_time ? r.Int(500, 15000) : r.Int(10, 400));
    Step step;
    step.at_ms = at_ms;
    const int roll = r.Int(0, 99);
    const auto& [node, gpus] = r.Pick(cluster.nodes);
    if (roll < 8 && f.cancels && !submitted.empty()) {
      step.kind = StepKind::kCancel;
      step.target = r.Pick(submitted);
    } else if (roll < 12 && f.gpu_failures) {
      step.kind = StepKind::kFailGpu;
      step.node = node;
      step.gpu = r.Int(0, gpus - 1);
      failed_nodes.push_back(node);
    } else if (roll < 16 && !failed_nodes.empty()) {
      step.kind = StepKind::kRecover;
      step.node = r.Pick(failed_nodes);
    } else if (roll < 18 && f.drains) {
      step.kind = StepKind::kDrain;
      step.node = node;
      failed_nodes.push_back(node);
    } else if (roll < 20 && f.restarts) {
      step.kind = StepKind::kRestart;
    } else {
      step.kind = StepKind::kSubmit;
      const std::string name = "j" + std::to_string(jobs++);
      step.job = MakeJob(r, f, cluster, r.Pick(leaves), name, timescale);
      submitted.push_back(name);
    }
    s.steps.push_back(std::move(step));
  }
  return s;
}

}  // namespace tessera::scenario
