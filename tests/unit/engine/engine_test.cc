// Engine, driven directly with a host that decides when each write becomes durable: launches
// wait for durability, failed writes pause decisions and are retried, nothing is dropped.
#include <doctest/doctest.h>

#include <deque>

#include "engine/engine.h"
#include "engine/simulated_executor.h"
#include "tessera/job.h"

namespace tessera {
namespace {

class FakeHost final : public EngineHost {
 public:
  struct Pending {
    JobUpdate update;
    std::function<void(const Status&)> durable;
  };

  void Persist(JobUpdate update, std::function<void(const Status&)> durable) override {
    pending.push_back({std::move(update), std::move(durable)});
  }
  void RequestDecisions() override { decisions_requested = true; }
  void PersistEvent(v1::Event event) override { node_events.push_back(std::move(event)); }
  void InventoryChanged(std::shared_ptr<const FeasibilityChecker>) override {}

  // Completes the oldest write with `status`; returns its update.
  JobUpdate Complete(const Status& status = Status::Ok()) {
    REQUIRE_FALSE(pending.empty());
    REQUIRE(engine != nullptr);
    Pending p = std::move(pending.front());
    pending.pop_front();
    JobUpdate update = p.update;
    if (status.ok()) {
      committed.push_back(p.update);
      if (p.durable) p.durable(status);
    } else {
      engine->PersistFailed(status, std::move(p.update), std::move(p.durable));
    }
    return update;
  }
  void CompleteAll() {
    while (!pending.empty()) Complete();
  }

  Engine* engine = nullptr;  // where refused writes go back to.
  std::deque<Pending> pending;
  std::vector<JobUpdate> committed;
  bool decisions_requested = false;
  std::vector<v1::Event> node_events;
};

struct EngineFixture {
  EngineFixture() : engine(Options(), clock, host) {
    host.engine = &engine;
    v1::SimulatedCluster cluster;
    v1::SimulatedNodeGroup* g = cluster.add_groups();
    g->set_name_prefix("n");
    g->set_count(1);
    g->set_cpu_milli(64000);
    g->set_memory_mib(65536);
    g->set_gpus(4);
    g->set_gpu_model("A100");
    g->set_gpu_memory_mib(81920);
    executor = std::make_unique<SimulatedExecutor>(*ExpandSimulatedCluster(cluster),
                                                   engine.timers(), clock, engine);
    engine.SetExecutor(executor.get());
    REQUIRE(engine.AddNodes(executor->Inventory()).ok());
    v1::QueueSpec q;
    q.set_name("q");
    REQUIRE(engine.CreateQueue(q).ok());
  }

  void Submit(uint64_t id, const v1::JobSpec& spec) {
    v1::Job job;
    job.set_id(id);
    *job.mutable_spec() = spec;
    job.mutable_status()->set_state(v1::PENDING);
    job.mutable_status()->set_attempt(1);
    engine.AddJob(job);
  }
  void Decide() { engine.RunDecisions(std::chrono::steady_clock::now() + std::chrono::hours(1)); }
  void Tick() { engine.OnTimeAdvanced(); }

  ManualClock clock;
  FakeHost host;
  Engine engine;
  std::unique_ptr<SimulatedExecutor> executor;
};

TEST_CASE("engine: a placement is launched only after it is durable") {
  EngineFixture f;
  f.Submit(1, JobSpecBuilder("q").Gpus(2).Build());
  f.Decide();
  REQUIRE(f.host.pending.size() == 1);
  CHECK(f.host.pending.front().update.ParseStatus().state() == v1::ADMITTED);
  f.Tick();
  CHECK(f.executor->LiveTasks().empty());  // not launched yet.
  f.host.Complete();
  REQUIRE(f.executor->LiveTasks().size() == 1);
  CHECK(f.host.pending.back().update.ParseStatus().state() == v1::STARTING);
  f.Tick();  // the simulated task reports started.
  f.host.CompleteAll();
  CHECK(f.host.committed.back().ParseStatus().state() == v1::RUNNING);
}

TEST_CASE("engine: an update carries its state and the events as they were when made") {
  EngineFixture f;
  f.Submit(1, JobSpecBuilder("q").Gpus(2).Build());
  f.Decide();
  f.host.Complete();  // admitted: the launch goes out.
  f.Tick();           // started: STARTING and RUNNING follow each other.
  std::vector<v1::Event> events;
  while (!f.host.pending.empty()) {
    const JobUpdate update = f.host.Complete();
    CHECK(update.job_id == 1);
    CHECK(update.state == update.ParseStatus().state());
    for (const v1::Event& e : update.ParseEvents()) events.push_back(e);
  }
  REQUIRE(events.size() == 2);
  CHECK(events[0].from_state() == v1::ADMITTED);
  CHECK(events[0].to_state() == v1::STARTING);
  CHECK(events[0].reason() == "launch sent");
  CHECK(events[1].from_state() == v1::STARTING);
  CHECK(events[1].to_state() == v1::RUNNING);
  CHECK(events[1].queue() == "q");
  CHECK(events[1].node() == "n-0");
  CHECK(events[1].attempt() == 1);
  CHECK(events[1].job_id() == 1);
  // The reused messages leave nothing behind: the later event has no stale reason.
  CHECK(events[1].reason() == "all tasks started");
}

TEST_CASE("engine: a failed write pauses decisions and is retried until durable") {
  EngineFixture f;
  f.Submit(1, JobSpecBuilder("q").Gpus(1).Build());
  f.Submit(2, JobSpecBuilder("q").Gpus(1).Build());
  f.engine.Pause();
  f.engine.Resume();
  f.Decide();
  REQUIRE(f.host.pending.size() == 2);
  f.host.Complete(ResourceExhaustedError("disk full"));
  CHECK_FALSE(f.engine.HasDecisionWork());
  // The second write, already sent, succeeds; job 2 launches.
  f.host.Complete();
  CHECK(f.executor->LiveTasks().size() == 1);
  // Nothing is retried before the back-off, and then job 1's latest status is written again.
  f.Tick();
  CHECK(f.host.pending.empty());  // job 2's STARTING waits behind the failed write.
  f.clock.AdvanceUs(1'000'000);
  f.Tick();
  REQUIRE(f.host.pending.size() >= 2);
  f.host.CompleteAll();
  f.Tick();
  f.host.CompleteAll();
  CHECK(f.executor->LiveTasks().size() == 2);  // job 1 launched once its write held.
  CHECK_FALSE(f.engine.HasDecisionWork());
}

TEST_CASE("engine: a job cancelled before its placement is durable never launches") {
  EngineFixture f;
  f.Submit(1, JobSpecBuilder("q").Gpus(4).Build());
  f.Decide();
  bool cancelled = false;
  f.engine.CancelJob(1, [&](StatusOr<v1::JobStatus> s) { cancelled = s.ok(); });
  f.host.CompleteAll();
  f.Tick();
  f.host.CompleteAll();
  CHECK(cancelled);
  CHECK(f.executor->LiveTasks().empty());
  CHECK(f.host.committed.back().ParseStatus().state() == v1::CANCELLED);
  // The GPUs are free again.
  f.Submit(2, JobSpecBuilder("q").Gpus(4).Build());
  f.Decide();
  CHECK(f.host.pending.back().update.ParseStatus().state() == v1::ADMITTED);
}

TEST_CASE("engine: reloaded running jobs keep their place if the executor still has them") {
  EngineFixture f;
  v1::Job job;
  job.set_id(7);
  *job.mutable_spec() = JobSpecBuilder("q").Gpus(2).Build();
  v1::JobStatus* s = job.mutable_status();
  s->set_state(v1::RUNNING);
  s->set_attempt(1);
  v1::TaskPlacement* p = s->add_placements();
  p->set_index(0);
  p->set_node("n-0");
  p->add_gpus(0);
  p->add_gpus(1);
  p->set_gpu_milli(1000);
  p->set_gpu_memory_mib(81920);
  p->set_started(true);
  const std::set<TaskRef> live = {TaskRef{7, 1, 0}};
  f.engine.AddJob(job, &live);
  CHECK(f.host.pending.empty());  // nothing changed, nothing written.
  auto nodes = f.engine.Nodes();
  CHECK(nodes[0].status().allocated().gpu_milli() == 2000);
  // Without the live task the same job is requeued as attempt 2.
  EngineFixture g;
  g.engine.AddJob(job, nullptr);
  REQUIRE(g.host.pending.size() == 1);
  CHECK(g.host.pending.front().update.ParseStatus().state() == v1::PENDING);
  CHECK(g.host.pending.front().update.ParseStatus().attempt() == 2);
  CHECK(g.host.pending.front().update.event_count() == 2);
}

TEST_CASE("engine: decision statistics count decisions and placements") {
  EngineFixture f;
  for (uint64_t id = 1; id <= 6; ++id) f.Submit(id, JobSpecBuilder("q").Gpus(1).Build());
  f.Decide();
  const v1::SchedulerStats stats = f.engine.Stats();
  CHECK(stats.placements() == 4);
  CHECK(stats.decisions() == 5);  // four placed, then the queue blocked once.
  CHECK(stats.pending_jobs() == 2);
  CHECK(stats.running_jobs() == 4);
  CHECK(stats.decision_latency().count() == 5);
}

}  // namespace
}  // namespace tessera
