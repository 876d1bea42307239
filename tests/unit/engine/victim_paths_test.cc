// The two paths that stop running work for another job, preemption (whole GPUs) and the drain
// of a managed MIG GPU, ask the same victim rule (preemption/victim_eligibility.h): the same
// jobs and queues give the same answer on either kind of cluster, and a job the rule refuses is
// neither preempted nor drained.
#include <doctest/doctest.h>

#include <deque>
#include <string>

#include "engine/engine.h"
#include "engine/simulated_executor.h"
#include "tessera/job.h"

namespace tessera {
namespace {

constexpr int64_t kSecondUs = 1'000'000;

// Writes are durable as soon as the test flushes them; every event is kept.
class RecordingHost final : public EngineHost {
 public:
  void Persist(JobUpdate update, std::function<void(const Status&)> durable) override {
    for (const v1::Event& e : update.ParseEvents()) events.push_back(e);
    if (durable) waiting.push_back(std::move(durable));
  }
  void RequestDecisions() override {}
  void PersistEvent(v1::Event event) override { events.push_back(std::move(event)); }
  void InventoryChanged(std::shared_ptr<const FeasibilityChecker>) override {}

  void Flush() {
    while (!waiting.empty()) {
      std::function<void(const Status&)> durable = std::move(waiting.front());
      waiting.pop_front();
      durable(Status::Ok());
    }
  }
  // The reason job `id` was preempted, or "" when it never was.
  std::string PreemptedBecause(uint64_t id) const {
    for (const v1::Event& e : events) {
      if (e.job_id() == id && e.to_state() == v1::PREEMPTING) return e.reason();
    }
    return "";
  }

  std::deque<std::function<void(const Status&)>> waiting;
  std::vector<v1::Event> events;
};

enum class Gpus { kWhole, kManagedMig };

// One node with one GPU: a whole A100, or an H100 the scheduler may re-partition (one 7g
// instance now). Queue "a" is guaranteed a GPU; "b" has no guarantee.
struct OneGpu {
  explicit OneGpu(Gpus kind) : kind(kind), engine(MakeOptions(), clock, host) {
    v1::SimulatedCluster cluster;
    v1::SimulatedNodeGroup* g = cluster.add_groups();
    g->set_name_prefix("n");
    g->set_count(1);
    g->set_cpu_milli(64000);
    g->set_memory_mib(262144);
    g->set_gpus(1);
    g->set_gpu_memory_mib(81920);
    if (kind == Gpus::kWhole) {
      g->set_gpu_model("A100-80GB");
    } else {
      g->set_gpu_model("H100-80GB");
      g->set_sharing(v1::GPU_SHARING_MIG);
      g->set_mig_managed(true);
      g->add_mig_instances()->set_profile("7g.80gb");
    }
    executor = std::make_unique<SimulatedExecutor>(*ExpandSimulatedCluster(cluster),
                                                   engine.timers(), clock, engine);
    engine.SetExecutor(executor.get());
    REQUIRE(engine.AddNodes(executor->Inventory()).ok());
    v1::QueueSpec a;
    a.set_name("a");
    a.mutable_guarantee()->set_gpu_milli(1000);
    REQUIRE(engine.CreateQueue(a).ok());
    v1::QueueSpec b;
    b.set_name("b");
    REQUIRE(engine.CreateQueue(b).ok());
  }
  static Options MakeOptions() {
    Options options;
    options.preemption.min_runtime = std::chrono::seconds(1);
    return options;
  }

  // The victim takes the whole GPU (a whole GPU, or the 7g instance); the preemptor asks one
  // GPU, or a 3g instance, which only a drain and a new layout can give it.
  void Submit(uint64_t id, const std::string& queue, int32_t priority, bool preemptible,
              bool victim) {
    JobSpecBuilder spec(queue);
    if (kind == Gpus::kWhole) {
      spec.Gpus(1);
    } else {
      spec.MigProfile(victim ? "7g.80gb" : "3g.40gb");
    }
    v1::Job job;
    job.set_id(id);
    *job.mutable_spec() = spec.Build();
    v1::JobStatus* status = job.mutable_status();
    status->set_state(v1::PENDING);
    status->set_attempt(1);
    status->set_priority(priority);
    status->set_preemptible(preemptible);
    status->set_submit_time_us(clock.NowUs());
    engine.AddJob(job);
    Settle();
  }
  void Settle() {
    for (int i = 0; i < 4; ++i) {
      engine.RunDecisions(std::chrono::steady_clock::now() + std::chrono::hours(1));
      host.Flush();
      engine.OnTimeAdvanced();
      host.Flush();
    }
  }
  void Advance(int64_t us) {
    clock.AdvanceUs(us);
    Settle();
  }

  Gpus kind;
  ManualClock clock;
  RecordingHost host;
  Engine engine;
  std::unique_ptr<SimulatedExecutor> executor;
};

struct Case {
  const char* what;
  const char* victim_queue;
  int32_t victim_priority;
  bool preemptible;
  const char* preemptor_queue;
  int32_t preemptor_priority;
  bool stopped;  // what the rule says.
};

// Runs `c` on one kind of GPU; returns why the victim was stopped ("" if it was not).
std::string Run(Gpus kind, const Case& c) {
  OneGpu f(kind);
  f.Submit(1, c.victim_queue, c.victim_priority, c.preemptible, /*victim=*/true);
  f.Advance(120 * kSecondUs);  // past the minimum runtime.
  f.Submit(2, c.preemptor_queue, c.preemptor_priority, true, /*victim=*/false);
  f.Advance(kSecondUs);
  return f.host.PreemptedBecause(1);
}

TEST_CASE("victim paths: preemption and a MIG drain stop the same jobs, by one rule") {
  const Case cases[] = {
      {"a lower priority in the same queue gives way", "b", 0, true, "b", 10, true},
      {"a lower priority in a queue that borrowed gives way", "b", 0, true, "a", 10, true},
      {"an equal priority does not", "b", 5, true, "b", 5, false},
      {"a non-preemptible job does not", "b", 0, false, "b", 10, false},
      // Queue "a" holds exactly its guarantee: taking it would be reclaimed at once. Before the
      // rule was shared, a MIG drain stopped this job all the same.
      {"another queue's job within its guarantee does not", "a", 0, true, "b", 10, false},
  };
  for (const Case& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    const std::string preempted = Run(Gpus::kWhole, c);
    const std::string drained = Run(Gpus::kManagedMig, c);
    CHECK(!preempted.empty() == c.stopped);
    CHECK(!drained.empty() == c.stopped);
    if (c.stopped) {
      // Each by its own path.
      CHECK(preempted.find("to make room for job 2") != std::string::npos);
      CHECK(drained.find("to re-partition MIG GPU 0") != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace tessera
