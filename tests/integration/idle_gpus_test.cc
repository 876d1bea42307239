// Idle-GPU reclaim end to end (QueueSpec.idle_gpus), with GPU telemetry reported through the
// public API as a backend would: a job whose GPUs all stay below the threshold is flagged after
// the window and not before, a busy one never; an exemption counts only where the queue allows
// it; under a reclaiming policy the job is warned and then preempted (with its grace period)
// only when another job waits for its room; and the same readings give the same event log.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;

v1::QueueSpec Watched(const std::string& name, bool reclaim = false, bool allow_exemption = false) {
  v1::QueueSpec spec = QueueSpec(name);
  v1::IdleGpuPolicy& idle = *spec.mutable_idle_gpus();
  idle.set_below_pct(10);
  idle.set_idle_for_s(60);
  idle.set_reclaim(reclaim);
  idle.set_warning_s(reclaim ? 30 : 0);
  idle.set_allow_exemption(allow_exemption);
  return spec;
}

// Reports one reading of every GPU of "node-0": `pct_of(gpu)` percent, at the clock's now.
template <typename PctOf>
void ReadGpus(TestScheduler& t, int gpus, PctOf pct_of) {
  for (int gpu = 0; gpu < gpus; ++gpu) {
    v1::GpuTelemetry reading;
    reading.set_node("node-0");
    reading.set_gpu(gpu);
    reading.set_utilization_pct(pct_of(gpu));
    reading.set_temperature_c(50);
    REQUIRE(t->ReportTelemetry(reading).ok());
  }
  t->WaitIdle();
}

// The GPUs job `id` holds on "node-0" now.
std::set<int> GpusOf(Scheduler* s, uint64_t id) {
  std::set<int> gpus;
  const v1::Job job = MustGet(s, id);
  for (const auto& p : job.status().placements()) {
    if (!p.exited()) gpus.insert(p.gpus().begin(), p.gpus().end());
  }
  return gpus;
}

std::vector<v1::Event> EventsOf(Scheduler* s, uint64_t id, v1::EventKind kind) {
  auto events = s->WatchEvents(0, 10000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  std::vector<v1::Event> out;
  for (const v1::Event& e : *events) {
    if (e.job_id() == id && e.kind() == kind) out.push_back(e);
  }
  return out;
}

TEST_CASE("idle gpus: an idle job is flagged after the window, not before; a busy one never") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, Watched("watched"));
  const uint64_t idle = MustSubmit(s, JobSpecBuilder("watched").Gpus(2).Build()).id();
  const uint64_t busy = MustSubmit(s, JobSpecBuilder("watched").Gpus(2).Build()).id();
  t->WaitIdle();
  const std::set<int> idle_gpus = GpusOf(s, idle);
  REQUIRE(idle_gpus.size() == 2);
  auto pct = [&](int gpu) { return idle_gpus.count(gpu) ? 2.0 : 80.0; };
  // A reading every 10 s from the start: at 50 s the window (60 s) is not over.
  for (int step = 0; step <= 5; ++step) {
    if (step > 0) t.clock->AdvanceUs(10 * kSecond);
    ReadGpus(t, 4, pct);
  }
  CHECK(EventsOf(s, idle, v1::JOB_GPU_IDLE).empty());
  CHECK(t->GetStats().idle_gpu_jobs() == 0);
  t.clock->AdvanceUs(10 * kSecond);
  ReadGpus(t, 4, pct);  // 60 s.
  const std::vector<v1::Event> flagged = EventsOf(s, idle, v1::JOB_GPU_IDLE);
  REQUIRE(flagged.size() == 1);
  CHECK(flagged[0].reason() ==
        "GPUs idle: 2 GPU(s) below 10% utilisation for 60 s (queue 'watched' idle_gpus)");
  CHECK(MustGet(s, idle).status().reason() == flagged[0].reason());
  CHECK(t->GetStats().idle_gpu_jobs() == 1);
  CHECK(t->GetStats().idle_gpu_flags() == 1);
  // Hours more: flagged once, never preempted (the policy does not reclaim), the busy job never.
  for (int step = 0; step < 60; ++step) {
    t.clock->AdvanceUs(60 * kSecond);
    ReadGpus(t, 4, pct);
  }
  CHECK(EventsOf(s, idle, v1::JOB_GPU_IDLE).size() == 1);
  CHECK(EventsOf(s, busy, v1::JOB_GPU_IDLE).empty());
  CHECK(MustGet(s, idle).status().state() == v1::RUNNING);
  // Busy again: the flag ends, and the metric follows.
  ReadGpus(t, 4, [](int) { return 50.0; });
  const std::vector<v1::Event> after = EventsOf(s, idle, v1::JOB_GPU_IDLE);
  REQUIRE(after.size() == 2);
  CHECK(after[1].reason().rfind("GPUs busy again: GPU ", 0) == 0);
  CHECK(t->GetStats().idle_gpu_jobs() == 0);
  // Idle again for a window: flagged again; the admin drops the policy: no longer counted.
  for (int step = 0; step <= 6; ++step) {
    ReadGpus(t, 4, pct);
    t.clock->AdvanceUs(10 * kSecond);
  }
  CHECK(t->GetStats().idle_gpu_jobs() == 1);
  CHECK(t->GetStats().idle_gpu_flags() == 2);
  REQUIRE(s->UpdateQueue(QueueSpec("watched")).ok());
  ReadGpus(t, 4, pct);
  CHECK(t->GetStats().idle_gpu_jobs() == 0);
}

TEST_CASE("idle gpus: a job exempts itself only where its queue allows it") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, Watched("strict"));
  CreateQueue(s, Watched("lenient", false, /*allow_exemption=*/true));
  v1::JobSpec exempt = JobSpecBuilder("strict").Gpus(2).Build();
  exempt.set_idle_gpu_exempt(true);
  auto refused = s->Submit(exempt);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kPermissionDenied);
  CHECK(refused.status().message() ==
        "idle_gpu_exempt: queue 'strict' does not allow jobs to exempt themselves from its "
        "idle-GPU policy (idle_gpus.allow_exemption)");

  exempt.set_queue("lenient");
  const uint64_t spared = MustSubmit(s, exempt).id();
  const uint64_t watched = MustSubmit(s, JobSpecBuilder("lenient").Gpus(2).Build()).id();
  t->WaitIdle();
  for (int step = 0; step <= 12; ++step) {
    ReadGpus(t, 4, [](int) { return 0.0; });
    t.clock->AdvanceUs(10 * kSecond);
  }
  CHECK(EventsOf(s, spared, v1::JOB_GPU_IDLE).empty());
  CHECK(EventsOf(s, watched, v1::JOB_GPU_IDLE).size() == 1);

  // The admin withdraws the exemption: the job is watched from then on, and its event says why.
  v1::QueueSpec withdrawn = Watched("lenient");
  REQUIRE(s->UpdateQueue(withdrawn).ok());
  for (int step = 0; step <= 7; ++step) {
    ReadGpus(t, 4, [](int) { return 0.0; });
    t.clock->AdvanceUs(10 * kSecond);
  }
  const std::vector<v1::Event> now_flagged = EventsOf(s, spared, v1::JOB_GPU_IDLE);
  REQUIRE(now_flagged.size() == 1);
  CHECK(now_flagged[0].reason().find(
            "idle_gpu_exempt is not allowed there (idle_gpus.allow_exemption)") !=
        std::string::npos);
}

// A 4-GPU job left idle in a reclaiming queue; at `submit_other_s`, a 1-GPU job of another
// queue, of the same priority, that waits. The event log, for comparing runs.
std::vector<std::string> ReclaimScenario(uint64_t* idle_id, uint64_t* other_id,
                                         TestScheduler* keep = nullptr) {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, Watched("idle", /*reclaim=*/true));
  CreateQueue(s, QueueSpec("other"));
  v1::JobSpec spec = JobSpecBuilder("idle").Gpus(4).Build();
  spec.set_checkpoint_grace_s(20);
  const uint64_t idle = MustSubmit(s, spec).id();
  t->WaitIdle();
  uint64_t other = 0;
  for (int step = 0; step <= 30; ++step) {  // 0 .. 300 s, a reading every 10 s.
    if (step == 7) other = MustSubmit(s, JobSpecBuilder("other").Gpus(1).Build()).id();
    ReadGpus(t, 4, [](int) { return 1.0; });
    if (step == 8) {
      // 80 s: flagged (at 60 s) and warned, the warning (30 s) not over: the newcomer waits.
      CHECK(MustGet(s, idle).status().state() == v1::RUNNING);
      CHECK(MustGet(s, other).status().state() == v1::PENDING);
    }
    t.clock->AdvanceUs(10 * kSecond);
  }
  *idle_id = idle;
  *other_id = other;
  auto events = s->WatchEvents(0, 10000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  std::vector<std::string> log;
  for (const v1::Event& e : *events) {
    log.push_back(std::to_string(e.seq()) + " " + std::to_string(e.time_us()) + " " +
                  v1::EventKind_Name(e.kind()) + " " + std::to_string(e.job_id()) + " " +
                  e.reason());
  }
  if (keep) *keep = std::move(t);
  return log;
}

TEST_CASE("idle gpus: nobody waits, nobody is preempted; once a job waits, the idle one goes") {
  {
    // Nobody waits: flagged and warned, and it runs on.
    auto t = OpenCluster(OneNode(4));
    Scheduler* s = t.scheduler.get();
    CreateQueue(s, Watched("idle", /*reclaim=*/true));
    const uint64_t idle = MustSubmit(s, JobSpecBuilder("idle").Gpus(4).Build()).id();
    t->WaitIdle();
    for (int step = 0; step <= 60; ++step) {
      ReadGpus(t, 4, [](int) { return 0.0; });
      t.clock->AdvanceUs(10 * kSecond);
    }
    CHECK(MustGet(s, idle).status().state() == v1::RUNNING);
    const std::vector<v1::Event> events = EventsOf(s, idle, v1::JOB_GPU_IDLE);
    REQUIRE(events.size() == 2);
    CHECK(events[1].reason() ==
          "warning: GPUs idle; the job may be preempted for a job that waits for its room in "
          "30 s, unless its GPUs get busy");
    CHECK(t->GetStats().idle_gpu_preemptions() == 0);
  }
  uint64_t idle = 0;
  uint64_t other = 0;
  TestScheduler t;
  ReclaimScenario(&idle, &other, &t);
  Scheduler* s = t.scheduler.get();
  const v1::Job preempted = MustGet(s, idle);
  CHECK(preempted.status().preemptions() == 1);
  CHECK(MustGet(s, other).status().state() == v1::RUNNING);
  CHECK(t->GetStats().idle_gpu_preemptions() == 1);
  bool noticed = false;
  int64_t noticed_us = 0;
  for (const v1::Event& e : EventsOf(s, idle, v1::JOB_STATE_CHANGED)) {
    if (e.to_state() != v1::PREEMPTING) continue;
    noticed = true;
    noticed_us = e.time_us();
    CHECK(e.reason() ==
          "preempted to make room for job " + std::to_string(other) + " (its GPUs stayed idle)");
  }
  CHECK(noticed);
  // The grace period was given: the newcomer started 20 s after the notice.
  for (const v1::Event& e : EventsOf(s, other, v1::JOB_STATE_CHANGED)) {
    if (e.to_state() == v1::ADMITTED) CHECK(e.time_us() - noticed_us >= 20 * kSecond);
  }
}

TEST_CASE("idle gpus: the same readings give the same event log") {
  uint64_t idle = 0;
  uint64_t other = 0;
  const std::vector<std::string> first = ReclaimScenario(&idle, &other);
  const std::vector<std::string> second = ReclaimScenario(&idle, &other);
  CHECK(first.size() > 8);
  CHECK(first == second);
}

}  // namespace
}  // namespace tessera
