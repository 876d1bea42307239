// Elastic size rules end to end (JobSpec.elastic.sizes): a job starts, grows and shrinks (for
// preemption and for reclaim) only to the task counts its rule allows, and a rule that allows
// none is refused at submit.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;

v1::JobSpec PowersOfTwo(const std::string& queue, int min, int max) {
  v1::JobSpec spec = JobSpecBuilder(queue).Elastic(min, max).Gpus(1).Build();
  spec.mutable_elastic()->mutable_sizes()->set_powers_of_two(true);
  return spec;
}

int LiveTasks(Scheduler* s, uint64_t id) {
  int live = 0;
  const v1::Job job = MustGet(s, id);
  for (const auto& p : job.status().placements()) live += p.exited() ? 0 : 1;
  return live;
}

// The reasons of the job's events, in order.
std::vector<std::string> Reasons(Scheduler* s, uint64_t id) {
  auto events = s->WatchEvents(0, 10000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  std::vector<std::string> out;
  for (const v1::Event& e : *events) {
    if (e.job_id() == id) out.push_back(e.reason());
  }
  return out;
}

bool HasReason(Scheduler* s, uint64_t id, const std::string& reason) {
  const std::vector<std::string> reasons = Reasons(s, id);
  return std::find(reasons.begin(), reasons.end(), reason) != reasons.end();
}

TEST_CASE("elastic sizes: a powers-of-two job grows 1 -> 2 -> 4, never to 3") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  // Three one-GPU jobs that end at 10, 20 and 30 s; the elastic job gets the fourth GPU.
  for (int64_t ends : {10, 20, 30}) {
    MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(ends * 1000).Build());
  }
  t->WaitIdle();
  const uint64_t elastic = MustSubmit(s, PowersOfTwo("default", 1, 4)).id();
  t->WaitIdle();
  CHECK(LiveTasks(s, elastic) == 1);
  t.clock->AdvanceUs(10 * kSecond);
  t->WaitIdle();
  CHECK(LiveTasks(s, elastic) == 2);
  // One GPU frees: 3 is not a power of two, so the job waits for the next one.
  t.clock->AdvanceUs(10 * kSecond);
  t->WaitIdle();
  CHECK(LiveTasks(s, elastic) == 2);
  CHECK(t->ListNodes()->at(0).status().allocated().gpu_milli() == 3000);
  t.clock->AdvanceUs(10 * kSecond);
  t->WaitIdle();
  CHECK(LiveTasks(s, elastic) == 4);
  CHECK(HasReason(s, elastic, "placed 1 more task(s)"));
  CHECK(HasReason(s, elastic, "placed 2 more task(s)"));
}

TEST_CASE("elastic sizes: a job starts at the largest allowed count that fits") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(10'000).Build());
  t->WaitIdle();
  // Seven GPUs free: it starts with 4, and 8 needs four more.
  const uint64_t elastic = MustSubmit(s, PowersOfTwo("default", 1, 8)).id();
  t->WaitIdle();
  CHECK(MustGet(s, elastic).status().state() == v1::RUNNING);
  CHECK(LiveTasks(s, elastic) == 4);
  t.clock->AdvanceUs(10 * kSecond);
  t->WaitIdle();
  CHECK(LiveTasks(s, elastic) == 8);

  // multiple_of: 2..10 in multiples of 3 starts with 6 of the 7 GPUs of a node.
  auto u = OpenCluster(OneNode(7));
  v1::JobSpec threes = JobSpecBuilder("default").Elastic(2, 10).Gpus(1).Build();
  threes.mutable_elastic()->mutable_sizes()->set_multiple_of(3);
  const uint64_t id = MustSubmit(u.scheduler.get(), threes).id();
  u->WaitIdle();
  CHECK(LiveTasks(u.scheduler.get(), id) == 6);
}

TEST_CASE("elastic sizes: reclaim shrinks a powers-of-two job 8 -> 4, not 7") {
  auto t = OpenCluster(OneNode(8));
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec owed = QueueSpec("owed");
  owed.mutable_guarantee()->set_gpu_milli(1000);
  CreateQueue(s, owed);
  CreateQueue(s, QueueSpec("borrower"));
  const uint64_t elastic = MustSubmit(s, PowersOfTwo("borrower", 1, 8)).id();
  t->WaitIdle();
  REQUIRE(LiveTasks(s, elastic) == 8);
  t.clock->AdvanceUs(61 * kSecond);  // past preemption.min_runtime.
  const uint64_t claim = MustSubmit(s, JobSpecBuilder("owed").Gpus(1).Build()).id();
  t->WaitIdle();
  t.clock->AdvanceUs(1 * kSecond);
  t->WaitIdle();
  CHECK(MustGet(s, claim).status().state() == v1::RUNNING);
  CHECK(LiveTasks(s, elastic) == 4);
  CHECK(HasReason(s, elastic,
                  "shrinking to make room for job " + std::to_string(claim) +
                      " (queue below its guarantee): 8 -> 4 tasks"));
  // Three GPUs stay free: growing back would need four.
  t.clock->AdvanceUs(10 * kSecond);
  t->WaitIdle();
  CHECK(LiveTasks(s, elastic) == 4);
  CHECK(MustGet(s, elastic).status().preemptions() == 0);
}

TEST_CASE("elastic sizes: a job at its smallest allowed count is preempted whole, not shrunk") {
  Options options;
  options.priority_classes = {{"low", 0, true}, {"normal", 100, true}};
  auto t = OpenCluster(OneNode(4), options);
  Scheduler* s = t.scheduler.get();
  // Counts 4 and 8 only, though min_tasks is 2: 4 -> 3 is not allowed, and nothing below 4 is.
  v1::JobSpec spec = JobSpecBuilder("default").Elastic(2, 8).Gpus(1).PriorityClass("low").Build();
  spec.mutable_elastic()->mutable_sizes()->add_counts(4);
  spec.mutable_elastic()->mutable_sizes()->add_counts(8);
  const uint64_t elastic = MustSubmit(s, spec).id();
  t->WaitIdle();
  REQUIRE(LiveTasks(s, elastic) == 4);
  t.clock->AdvanceUs(61 * kSecond);
  const uint64_t urgent = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  t.clock->AdvanceUs(1 * kSecond);
  t->WaitIdle();
  CHECK(MustGet(s, urgent).status().state() == v1::RUNNING);
  const v1::Job victim = MustGet(s, elastic);
  CHECK(victim.status().state() == v1::PENDING);
  CHECK(victim.status().preemptions() == 1);
}

TEST_CASE("elastic sizes: a rule that allows no count is refused at submit, naming the field") {
  auto t = OpenCluster(OneNode(8));
  v1::JobSpec none = PowersOfTwo("default", 5, 7);
  auto refused = t->Submit(none);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().field() == "elastic.sizes.powers_of_two");
  v1::JobSpec outside = JobSpecBuilder("default").Elastic(2, 8).Gpus(1).Build();
  outside.mutable_elastic()->mutable_sizes()->add_counts(16);
  refused = t->Submit(outside);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().field() == "elastic.sizes.counts[0]");
}

}  // namespace
}  // namespace tessera
