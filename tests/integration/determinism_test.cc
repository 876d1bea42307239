// Determinism in virtual time: an embedder that drives the scheduler as docs/embedding.md says
// (a ManualClock, WaitIdle after every call, time advanced to the earlier of its next input and
// NextWakeupUs) gets the same event log, byte for byte, every time it runs the same inputs, with
// the built-in simulated executor and with the sim plugin. Once every job has finished,
// NextWakeupUs says there is nothing left to wake for, so a driver that stops there measures the
// makespan exactly.
#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

struct Input {
  TimestampUs at = 0;  // offset from the clock's start.
  v1::JobSpec spec;
};

// A few hundred jobs of every kind the engine treats differently: sizes from one GPU to a
// multi-node gang, short and long runs, failures, time limits that cut runs short, three
// priorities (so preemption happens) and two queues of different weights. Seeded: the same
// inputs every run.
std::vector<Input> Workload(int jobs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  const int gpu_choices[] = {1, 1, 2, 4, 8};
  const char* priorities[] = {"low", "normal", "normal", "normal", "high"};
  std::vector<Input> inputs;
  TimestampUs at = 0;
  for (int i = 0; i < jobs; ++i) {
    at += pick(4) == 0 ? 0 : pick(20) * 1'000'000;  // some arrive together.
    JobSpecBuilder builder(pick(3) == 0 ? "batch" : "research");
    builder.Name("job-" + std::to_string(i)).Gpus(gpu_choices[pick(5)]);
    builder.PriorityClass(priorities[pick(5)]);
    if (pick(6) == 0) builder.Tasks(2 + static_cast<int>(pick(3))).GangMin(2);
    const int64_t duration_ms = (5 + pick(600)) * 1000;
    builder.SimulatedDurationMs(duration_ms, pick(10) == 0 ? 1 : 0);
    if (pick(5) == 0) builder.TimeLimitSeconds(30 + pick(900));
    inputs.push_back({at, builder.Build()});
  }
  return inputs;
}

// Four 8-GPU nodes and two 4-GPU nodes: the built-in cluster, and the same for the sim plugin.
v1::SimulatedCluster Cluster() {
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "a100", 4, 8)->set_gpus_per_nvlink_domain(8);
  AddGroup(cluster, "h100", 2, 4, "H100")->set_gpus_per_nvlink_domain(4);
  return cluster;
}

constexpr char kSimPluginCluster[] = R"({"groups":[
  {"namePrefix":"a100","count":4,"cpuMilli":64000,"memoryMib":262144,"gpus":8,
   "gpuModel":"A100","gpuMemoryMib":81920,"gpusPerNvlinkDomain":8},
  {"namePrefix":"h100","count":2,"cpuMilli":64000,"memoryMib":262144,"gpus":4,
   "gpuModel":"H100","gpuMemoryMib":81920,"gpusPerNvlinkDomain":4}]})";

enum class Backend { kBuiltIn, kSimPlugin };

Options ScenarioOptions(Backend backend) {
  Options options;
  // Decayed usage: a periodic refresh timer, which must not outlive the last job as a wake-up.
  options.fair_share.usage_half_life = std::chrono::seconds(600);
  if (backend == Backend::kBuiltIn) {
    options.simulated_cluster = Cluster();
  } else {
    options.plugin_dirs = {TESSERA_PLUGIN_DIR};
    PluginOptions plugin;
    plugin.plugin = "sim";
    plugin.config = kSimPluginCluster;
    options.executor_plugin = plugin;
  }
  return options;
}

struct Outcome {
  std::string log;   // every event, then every job's final status.
  std::string jobs;  // every job's final status alone: the outcome without the order of events.
  TimestampUs makespan_us = 0;  // the driver's clock when NextWakeupUs said nothing is left.
  TimestampUs last_end_us = 0;  // the latest end_time_us of any job.
  bool all_finished = false;
  bool stuck = false;  // the driver would loop: a wake-up in the past, or wake-ups for ever.
};

std::string Describe(const v1::Event& e) {
  std::ostringstream out;
  out << e.seq() << ' ' << e.time_us() << ' ' << v1::EventKind_Name(e.kind())
      << " job=" << e.job_id() << ' ' << v1::JobState_Name(e.from_state()) << "->"
      << v1::JobState_Name(e.to_state()) << " queue=" << e.queue() << " node=" << e.node()
      << " attempt=" << e.attempt() << " reason=" << e.reason() << '\n';
  return out.str();
}

std::string Describe(const v1::Job& job) {
  const v1::JobStatus& s = job.status();
  std::ostringstream out;
  out << "job " << job.id() << ' ' << v1::JobState_Name(s.state())
      << " submit=" << s.submit_time_us() << " start=" << s.start_time_us()
      << " end=" << s.end_time_us() << " attempt=" << s.attempt()
      << " preemptions=" << s.preemptions() << " reason=" << s.reason();
  for (const v1::TaskPlacement& p : s.placements()) {
    out << " [" << p.index() << ' ' << p.node() << " gpus=";
    for (int g : p.gpus()) out << g << ',';
    out << " milli=" << p.gpu_milli() << " exit=" << p.exit_code() << ']';
  }
  out << '\n';
  return out.str();
}

constexpr size_t kMaxStepsPerJob = 50;

// Runs the inputs once in a fresh store, as docs/embedding.md tells an embedder to.
Outcome Run(Backend backend, const std::vector<Input>& inputs) {
  auto t = Open(ScenarioOptions(backend));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("research", 2));
  CreateQueue(s, QueueSpec("batch", 1));
  t->WaitIdle();
  const TimestampUs start = t.clock->NowUs();
  std::vector<uint64_t> ids;
  Outcome outcome;
  size_t next_input = 0;
  size_t steps = 0;
  while (true) {
    while (next_input < inputs.size() && start + inputs[next_input].at <= t.clock->NowUs()) {
      ids.push_back(MustSubmit(s, inputs[next_input].spec).id());
      t->WaitIdle();
      ++next_input;
    }
    std::optional<TimestampUs> wake = t->NextWakeupUs();
    if (next_input < inputs.size()) {
      const TimestampUs input_at = start + inputs[next_input].at;
      wake = wake ? std::min(*wake, input_at) : input_at;
    }
    if (!wake) break;
    // A wake-up in the past would loop on one instant; far more steps than the jobs need mean
    // wake-ups that never end (a periodic timer reported for ever).
    if (*wake <= t.clock->NowUs() || ++steps > kMaxStepsPerJob * inputs.size()) {
      outcome.stuck = true;
      break;
    }
    t.clock->AdvanceToUs(*wake);
    t->WaitIdle();
  }
  outcome.makespan_us = t.clock->NowUs() - start;

  uint64_t seq = 0;
  while (true) {
    auto events = s->WatchEvents(seq, 1000, std::chrono::milliseconds(0));
    REQUIRE_MESSAGE(events.ok(), events.status().ToString());
    if (events->empty()) break;
    for (const v1::Event& e : *events) {
      outcome.log += Describe(e);
      seq = e.seq();
    }
  }
  outcome.all_finished = true;
  for (uint64_t id : ids) {
    const v1::Job job = MustGet(s, id);
    outcome.jobs += Describe(job);
    outcome.all_finished = outcome.all_finished && IsTerminal(job.status().state());
    outcome.last_end_us = std::max(outcome.last_end_us, job.status().end_time_us() - start);
  }
  outcome.log += outcome.jobs;
  return outcome;
}

void CheckRepeats(Backend backend, int jobs, uint64_t seed, bool busy = true) {
  const std::vector<Input> inputs = Workload(jobs, seed);
  constexpr int kRuns = 6;
  std::set<std::string> logs;
  std::set<std::string> job_outcomes;
  std::optional<Outcome> first;
  for (int run = 0; run < kRuns; ++run) {
    Outcome outcome = Run(backend, inputs);
    CHECK_FALSE(outcome.stuck);
    CHECK(outcome.all_finished);
    // Nothing is left to wake for once the last job has ended: the driver stops right there.
    CHECK(outcome.makespan_us == outcome.last_end_us);
    logs.insert(outcome.log);
    job_outcomes.insert(outcome.jobs);
    if (!first) first = std::move(outcome);
  }
  MESSAGE(logs.size() << " distinct event logs and " << job_outcomes.size()
                      << " distinct job outcomes in " << kRuns << " runs of " << jobs << " jobs");
  CHECK(logs.size() == 1);
  if (!busy) return;
  // The scenario exercises what it is meant to: some jobs end by failure or time limit,
  // some were preempted, all of them ran.
  CHECK(first->log.find("SUCCEEDED") != std::string::npos);
  CHECK(first->log.find("FAILED") != std::string::npos);
  CHECK(first->log.find("PREEMPTING") != std::string::npos);
}

TEST_CASE("determinism: the built-in executor gives the same event log for the same inputs") {
  CheckRepeats(Backend::kBuiltIn, 300, 13);
}

#if TESSERA_HAVE_BACKEND_PLUGINS
TEST_CASE("determinism: the sim plugin gives the same event log for the same inputs") {
  CheckRepeats(Backend::kSimPlugin, 300, 13);
}

TEST_CASE("determinism: the sim plugin repeats a light load too") {
  CheckRepeats(Backend::kSimPlugin, 40, 40, /*busy=*/false);
}
#endif

}  // namespace
}  // namespace tessera
