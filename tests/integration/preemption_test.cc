// Cooperative preemption end to end: priority preemption, fair-share reclaim, elastic shrink
// first, victims chosen to lose the least work, grace periods, requeue with the original
// submit time, and the guards against thrashing.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;

Options WithClasses() {
  Options options;
  options.priority_classes = {
      {"low", 0, true}, {"normal", 100, true}, {"high", 1000, false}, {"critical", 10000, true}};
  return options;
}

v1::JobSpec Running(const std::string& queue, const std::string& priority_class, int gpus = 1) {
  v1::JobSpec spec = JobSpecBuilder(queue).Gpus(gpus).PriorityClass(priority_class).Build();
  spec.set_checkpoint_grace_s(30);
  return spec;
}

v1::JobState StateOf(Scheduler* s, uint64_t id) { return MustGet(s, id).status().state(); }

TEST_CASE("preemption: a higher-priority job stops the lower-priority work that loses least") {
  auto t = OpenCluster(OneNode(4), WithClasses());
  Scheduler* s = t.scheduler.get();
  // Four low-priority jobs; two checkpoint every 50 s, two never do.
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) {
    v1::JobSpec spec = Running("default", "low");
    if (i % 2 == 0) spec.mutable_simulation()->set_checkpoint_every_ms(50'000);
    ids.push_back(MustSubmit(s, spec).id());
  }
  t->WaitIdle();
  t.clock->AdvanceUs(120 * kSecond);  // past the minimum runtime; checkpoints at 50 and 100 s.
  t->WaitIdle();
  const v1::Job urgent = MustSubmit(s, Running("default", "critical", 2));
  t->WaitIdle();
  // The two that checkpointed 20 s ago lose 20 s each; the others would lose 120 s.
  CHECK(StateOf(s, ids[0]) == v1::PREEMPTING);
  CHECK(StateOf(s, ids[2]) == v1::PREEMPTING);
  CHECK(StateOf(s, ids[1]) == v1::RUNNING);
  CHECK(StateOf(s, ids[3]) == v1::RUNNING);
  CHECK(StateOf(s, urgent.id()) == v1::PENDING);
  CHECK(MustGet(s, urgent.id()).status().reason().find("preempting 2 victim(s)") !=
        std::string::npos);
  const v1::SchedulerStats stats = t->GetStats();
  CHECK(stats.preemptions() == 2);
  CHECK(stats.lost_gpu_seconds() == 40);

  // The victims get their 30 s grace period, then exit and are requeued.
  t.clock->AdvanceUs(29 * kSecond);
  t->WaitIdle();
  CHECK(StateOf(s, ids[0]) == v1::PREEMPTING);
  t.clock->AdvanceUs(1 * kSecond);
  t->WaitIdle();
  CHECK(StateOf(s, urgent.id()) == v1::RUNNING);
  const v1::Job victim = MustGet(s, ids[0]);
  CHECK(victim.status().state() == v1::PENDING);
  CHECK(victim.status().attempt() == 2);
  CHECK(victim.status().preemptions() == 1);
  CHECK(victim.status().submit_time_us() == MustGet(s, ids[1]).status().submit_time_us());

  // The log shows notice, then requeue.
  auto events = s->WatchEvents(0, 1000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  std::vector<v1::JobState> states;
  std::string requeue_reason;
  for (const v1::Event& e : *events) {
    if (e.job_id() != ids[0] || e.kind() != v1::JOB_STATE_CHANGED) continue;
    states.push_back(e.to_state());
    requeue_reason = e.reason();
  }
  CHECK(requeue_reason == "requeued after preemption (attempt 2)");
  CHECK(states == std::vector<v1::JobState>{v1::PENDING, v1::ADMITTED, v1::STARTING, v1::RUNNING,
                                            v1::PREEMPTING, v1::PENDING});
}

TEST_CASE("preemption: non-preemptible jobs are never victims; young jobs are spared") {
  auto t = OpenCluster(OneNode(2), WithClasses());
  Scheduler* s = t.scheduler.get();
  const uint64_t guarded = MustSubmit(s, Running("default", "high")).id();
  const uint64_t young = MustSubmit(s, Running("default", "low")).id();
  t->WaitIdle();
  t.clock->AdvanceUs(10 * kSecond);
  const uint64_t urgent = MustSubmit(s, Running("default", "critical")).id();
  t->WaitIdle();
  CHECK(StateOf(s, guarded) == v1::RUNNING);
  CHECK(StateOf(s, young) == v1::RUNNING);  // 10 s < the 60 s minimum runtime.
  CHECK(StateOf(s, urgent) == v1::PENDING);
  // Once the low-priority job is old enough, it goes; the non-preemptible one never does.
  // Nothing else happens; the scheduler looks again when the minimum runtime is over.
  t.clock->AdvanceUs(50 * kSecond);
  t->WaitIdle();
  CHECK(StateOf(s, young) == v1::PREEMPTING);
  CHECK(StateOf(s, guarded) == v1::RUNNING);
}

TEST_CASE("preemption: a queue below its guarantee reclaims what another queue borrowed") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec gold = QueueSpec("gold");
  gold.mutable_guarantee()->set_gpu_milli(4000);
  CreateQueue(s, gold);
  CreateQueue(s, QueueSpec("bronze"));
  for (int i = 0; i < 8; ++i) MustSubmit(s, Running("bronze", "normal"));
  t->WaitIdle();
  t.clock->AdvanceUs(120 * kSecond);
  t->WaitIdle();
  for (int i = 0; i < 6; ++i) MustSubmit(s, Running("gold", "normal"));
  t->WaitIdle();
  t.clock->AdvanceUs(30 * kSecond);
  t->WaitIdle();
  // Equal priorities: only the guarantee justifies it, and only up to the guarantee.
  CHECK(t->GetQueue("gold")->status().allocated().gpu_milli() == 4000);
  CHECK(t->GetQueue("bronze")->status().allocated().gpu_milli() == 4000);
  CHECK(CountStates(s, "bronze")[v1::PENDING] == 4);
}

TEST_CASE("preemption: an elastic job shrinks before anyone is preempted, once past min_runtime") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  const uint64_t elastic =
      MustSubmit(s, JobSpecBuilder("default").Elastic(2, 8).Gpus(1).Build()).id();
  t->WaitIdle();
  REQUIRE(MustGet(s, elastic).status().placements_size() == 8);
  // A job of the same priority, seconds later: no priority preemption, but a shrink, once the
  // elastic job has run its minimum runtime (60 s by default), as for any victim.
  t.clock->AdvanceUs(5 * kSecond);
  const uint64_t newcomer = MustSubmit(s, JobSpecBuilder("default").Gpus(3).Build()).id();
  t->WaitIdle();
  CHECK(StateOf(s, newcomer) == v1::PENDING);
  t.clock->AdvanceUs(54 * kSecond);
  t->WaitIdle();
  CHECK(StateOf(s, newcomer) == v1::PENDING);
  t.clock->AdvanceUs(1 * kSecond);
  t->WaitIdle();
  CHECK(StateOf(s, newcomer) == v1::RUNNING);
  const v1::Job shrunk = MustGet(s, elastic);
  CHECK(shrunk.status().state() == v1::RUNNING);
  int live = 0;
  for (const auto& p : shrunk.status().placements()) live += p.exited() ? 0 : 1;
  CHECK(live == 5);
  auto events = s->WatchEvents(0, 1000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  bool shrink_logged = false;
  for (const v1::Event& e : *events) {
    if (e.job_id() != elastic || e.reason().find("8 -> 5 tasks") == std::string::npos) continue;
    shrink_logged = true;
    // Not "(higher priority)": both jobs have the same.
    CHECK(e.reason() == "shrinking to make room for job " + std::to_string(newcomer) +
                            " (equal priority; tasks above the elastic minimum give way): "
                            "8 -> 5 tasks");
  }
  CHECK(shrink_logged);
  CHECK(shrunk.status().preemptions() == 0);
}

TEST_CASE("preemption: the per-minute budget and the cooldown stop thrashing") {
  Options options = WithClasses();
  options.preemption.max_per_minute = 1;
  auto t = OpenCluster(OneNode(2), options);
  Scheduler* s = t.scheduler.get();
  const uint64_t a = MustSubmit(s, Running("default", "low")).id();
  const uint64_t b = MustSubmit(s, Running("default", "low")).id();
  t->WaitIdle();
  t.clock->AdvanceUs(120 * kSecond);
  t->WaitIdle();
  MustSubmit(s, Running("default", "critical"));
  MustSubmit(s, Running("default", "critical"));
  t->WaitIdle();
  const int preempting = (StateOf(s, a) == v1::PREEMPTING) + (StateOf(s, b) == v1::PREEMPTING);
  CHECK(preempting == 1);  // the budget allowed one this minute.
  CHECK(t->GetStats().preemptions() == 1);
}

// Advances the clock from wake-up to wake-up until `until_us`, once what was submitted is
// taken in (so that it is decided at the time it was submitted).
void RunUntil(TestScheduler& t, TimestampUs until_us) {
  t->WaitIdle();
  while (auto next = t->NextWakeupUs()) {
    if (*next > until_us) break;
    t.clock->AdvanceToUs(*next);
    t->WaitIdle();
  }
  t.clock->AdvanceToUs(until_us);
  t->WaitIdle();
}

// Two low-priority jobs of queue "batch" (which comes first in fair order) fill one node of
// two GPUs; jobs of queue "prod" at normal priority arrive later and must preempt them.
struct GuardStory {
  TestScheduler t;
  TimestampUs t0 = 0;
};

GuardStory StartGuardStory(const Options& options) {
  GuardStory story{OpenCluster(OneNode(2), options)};
  Scheduler* s = story.t.scheduler.get();
  CreateQueue(s, QueueSpec("batch", 4.0));
  CreateQueue(s, QueueSpec("prod"));
  for (int i = 0; i < 2; ++i) {
    MustSubmit(s, JobSpecBuilder("batch").Gpus(1).PriorityClass("low").Build());
  }
  story.t->WaitIdle();
  story.t0 = story.t.clock->NowUs();
  return story;
}

TEST_CASE("preemption: a cooldown that ends leads to a new attempt, reservations or not") {
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(1);
  options.preemption.cooldown = std::chrono::seconds(8);
  GuardStory story = StartGuardStory(options);
  TestScheduler& t = story.t;
  Scheduler* s = t.scheduler.get();
  // At 3 s a short normal job preempts one low job, which runs again once it ends at 5 s.
  RunUntil(t, story.t0 + 3 * kSecond);
  MustSubmit(
      s, JobSpecBuilder("prod").Gpus(1).PriorityClass("normal").SimulatedDurationMs(2000).Build());
  // At 6 s a second one preempts the other low job; at 9 s a third finds only the low job
  // preempted at 3 s, in its cooldown until 11 s.
  RunUntil(t, story.t0 + 6 * kSecond);
  const uint64_t second =
      MustSubmit(s, JobSpecBuilder("prod").Gpus(1).PriorityClass("normal").Build()).id();
  RunUntil(t, story.t0 + 9 * kSecond);
  const uint64_t third =
      MustSubmit(s, JobSpecBuilder("prod").Gpus(1).PriorityClass("normal").Build()).id();
  RunUntil(t, story.t0 + 10 * kSecond);
  CHECK(StateOf(s, second) == v1::RUNNING);
  CHECK(StateOf(s, third) == v1::PENDING);
  // The cooldown ends at 11 s: the third job preempts then.
  RunUntil(t, story.t0 + 12 * kSecond);
  CHECK(StateOf(s, third) == v1::RUNNING);
  CHECK(CountStates(s, "batch")[v1::PENDING] == 2);
}

TEST_CASE("preemption: a per-minute budget that allows again leads to a new attempt") {
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(1);
  options.preemption.max_per_minute = 1;
  GuardStory story = StartGuardStory(options);
  TestScheduler& t = story.t;
  Scheduler* s = t.scheduler.get();
  RunUntil(t, story.t0 + 3 * kSecond);
  const uint64_t first =
      MustSubmit(s, JobSpecBuilder("prod").Gpus(1).PriorityClass("normal").Build()).id();
  RunUntil(t, story.t0 + 6 * kSecond);
  const uint64_t second =
      MustSubmit(s, JobSpecBuilder("prod").Gpus(1).PriorityClass("normal").Build()).id();
  RunUntil(t, story.t0 + 10 * kSecond);
  CHECK(StateOf(s, first) == v1::RUNNING);
  CHECK(StateOf(s, second) == v1::PENDING);  // one preemption a minute: the next at 63 s.
  RunUntil(t, story.t0 + 64 * kSecond);
  CHECK(StateOf(s, second) == v1::RUNNING);
}

// Queue `claimant` (or its parent, with `on_parent`) is guaranteed 4 GPUs; queue "b" holds all
// 8 GPUs of one node. The claimant's leaf then asks for 4 one-GPU jobs.
void CheckReclaimOfFour(const v1::SimulatedCluster& cluster, bool on_parent) {
  auto t = OpenCluster(cluster);
  Scheduler* s = t.scheduler.get();
  const std::string leaf = on_parent ? "team/a" : "a";
  v1::QueueSpec guaranteed = QueueSpec(on_parent ? "team" : "a");
  guaranteed.mutable_guarantee()->set_gpu_milli(4000);
  CreateQueue(s, guaranteed);
  if (on_parent) CreateQueue(s, QueueSpec(leaf));
  CreateQueue(s, QueueSpec("b"));
  for (int i = 0; i < 8; ++i) MustSubmit(s, JobSpecBuilder("b").Gpus(1).Build());
  t->WaitIdle();
  t.clock->AdvanceUs(120 * kSecond);
  t->WaitIdle();
  for (int i = 0; i < 4; ++i) MustSubmit(s, JobSpecBuilder(leaf).Gpus(1).Build());
  RunUntil(t, t.clock->NowUs() + 12 * kSecond);
  CHECK(t->GetQueue(leaf)->status().allocated().gpu_milli() == 4000);
  CHECK(t->GetQueue("b")->status().allocated().gpu_milli() == 4000);
}

TEST_CASE("preemption: reclaim takes back the whole guarantee on one node as on two") {
  SUBCASE("one node of 8 GPUs") { CheckReclaimOfFour(OneNode(8), false); }
  SUBCASE("two nodes of 4 GPUs") {
    v1::SimulatedCluster cluster;
    AddGroup(cluster, "node", 2, 4);
    CheckReclaimOfFour(cluster, false);
  }
}

TEST_CASE("preemption: a guarantee on a parent queue reclaims for its children") {
  CheckReclaimOfFour(OneNode(8), true);
}

TEST_CASE("preemption: one wake-up for two guards forgets neither") {
  // A normal-priority job starts at 0 s, a low one at 5 s; both are victims only after the
  // 60 s minimum runtime. At 10 s a high job (any victim will do: 60 s) and a normal one (only
  // the low job: 65 s) arrive in their own queues.
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "node", 2, 1);  // one victim on each node.
  auto t = OpenCluster(cluster, WithClasses());
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("x"));
  CreateQueue(s, QueueSpec("y"));
  const TimestampUs t0 = t.clock->NowUs();
  const uint64_t normal = MustSubmit(s, Running("default", "normal")).id();  // 30 s grace.
  t->WaitIdle();
  t.clock->AdvanceUs(5 * kSecond);
  const uint64_t low =
      MustSubmit(s, JobSpecBuilder("default").Gpus(1).PriorityClass("low").Build()).id();
  t->WaitIdle();
  t.clock->AdvanceUs(5 * kSecond);
  const uint64_t high =
      MustSubmit(s, JobSpecBuilder("x").Gpus(1).PriorityClass("high").Build()).id();
  const uint64_t second =
      MustSubmit(s, JobSpecBuilder("y").Gpus(1).PriorityClass("normal").Build()).id();
  RunUntil(t, t0 + 61 * kSecond);
  CHECK(StateOf(s, normal) == v1::PREEMPTING);  // for the high job, until 90 s.
  CHECK(StateOf(s, second) == v1::PENDING);
  // The wake-up at 60 s came too soon for the second job: it still gets its own at 65 s.
  RunUntil(t, t0 + 66 * kSecond);
  CHECK(StateOf(s, second) == v1::RUNNING);
  CHECK(StateOf(s, low) == v1::PENDING);
  RunUntil(t, t0 + 91 * kSecond);
  CHECK(StateOf(s, high) == v1::RUNNING);
}

}  // namespace
}  // namespace tessera
