// Scheduler::DryRun through the public API: each answer (starts now, waits with an estimated
// start, waits for another job's reservation, waits on quota or its turn, infeasible, would
// preempt), the submit's errors, and that a dry run changes nothing. Where it can, each test
// then submits the same spec and checks the scheduler does what the dry run said.
#include <google/protobuf/util/message_differencer.h>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;
using google::protobuf::util::MessageDifferencer;

constexpr int64_t kSecond = 1'000'000;

v1::DryRunResult MustDryRun(Scheduler* s, const v1::JobSpec& spec) {
  auto result = s->DryRun(spec);
  REQUIRE_MESSAGE(result.ok(), result.status().ToString());
  return *result;
}

std::vector<v1::Event> AllEvents(Scheduler* s) {
  auto events = s->WatchEvents(0, 10000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  return *events;
}

std::vector<v1::Job> AllJobs(Scheduler* s) {
  v1::ListJobsRequest request;
  request.set_page_size(1000);
  auto page = s->ListJobs(request);
  REQUIRE(page.ok());
  return {page->jobs().begin(), page->jobs().end()};
}

Options WithClasses() {
  Options options;
  options.priority_classes = {{"low", 0, true}, {"normal", 100, true}, {"critical", 10000, true}};
  return options;
}

TEST_CASE("dry run: a job that fits starts now, where the submit then puts it") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build());
  t->WaitIdle();
  const v1::JobSpec spec = JobSpecBuilder("default").Tasks(2).Gpus(1).Build();
  const v1::DryRunResult dry = MustDryRun(s, spec);
  CHECK(dry.verdict() == v1::DryRunResult::STARTS_NOW);
  CHECK(dry.wait_cause() == v1::DryRunResult::WAIT_CAUSE_UNSPECIFIED);
  CHECK(dry.queue() == "default");
  CHECK(dry.estimated_start_us() == t.clock->NowUs());
  CHECK(dry.jobs_ahead() == 0);
  REQUIRE(dry.placements_size() == 2);

  const v1::Job job = MustSubmit(s, spec);
  t->WaitIdle();
  const v1::Job placed = MustGet(s, job.id());
  REQUIRE(placed.status().placements_size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(placed.status().placements(i).node() == dry.placements(i).node());
    CHECK(std::vector<int>(placed.status().placements(i).gpus().begin(),
                           placed.status().placements(i).gpus().end()) ==
          std::vector<int>(dry.placements(i).gpus().begin(), dry.placements(i).gpus().end()));
  }
}

TEST_CASE("dry run: changes nothing (jobs, next job id, events, nodes, later decisions)") {
  auto t = OpenCluster(OneNode(4), WithClasses());
  Scheduler* s = t.scheduler.get();
  v1::JobSpec low = JobSpecBuilder("default").Gpus(1).PriorityClass("low").Build();
  low.set_time_limit_s(600);
  for (int i = 0; i < 3; ++i) MustSubmit(s, low);
  t->WaitIdle();
  t.clock->AdvanceUs(120 * kSecond);  // past the minimum runtime: the low jobs may be victims.
  t->WaitIdle();
  const std::vector<v1::Job> jobs_before = AllJobs(s);
  const std::vector<v1::Event> events_before = AllEvents(s);
  auto nodes_before = s->ListNodes();
  REQUIRE(nodes_before.ok());
  const v1::SchedulerStats stats_before = t->GetStats();

  // One of each kind: fits, preempts, waits, infeasible.
  CHECK(MustDryRun(s, JobSpecBuilder("default").Gpus(1).Build()).verdict() ==
        v1::DryRunResult::STARTS_NOW);
  CHECK(MustDryRun(s, JobSpecBuilder("default").Gpus(3).PriorityClass("critical").Build())
            .verdict() == v1::DryRunResult::PREEMPTS);
  CHECK(MustDryRun(s, JobSpecBuilder("default").Gpus(2).PriorityClass("low").Build()).verdict() ==
        v1::DryRunResult::WAITS);
  CHECK(MustDryRun(s, JobSpecBuilder("default").Gpus(8).Build()).verdict() ==
        v1::DryRunResult::INFEASIBLE);
  t->WaitIdle();

  const std::vector<v1::Job> jobs_after = AllJobs(s);
  REQUIRE(jobs_after.size() == jobs_before.size());
  for (size_t i = 0; i < jobs_after.size(); ++i) {
    CHECK(MessageDifferencer::Equals(jobs_after[i], jobs_before[i]));
  }
  CHECK(AllEvents(s).size() == events_before.size());
  auto nodes_after = s->ListNodes();
  REQUIRE(nodes_after.ok());
  REQUIRE(nodes_after->size() == nodes_before->size());
  for (size_t i = 0; i < nodes_after->size(); ++i) {
    CHECK(MessageDifferencer::Equals((*nodes_after)[i], (*nodes_before)[i]));
  }
  const v1::SchedulerStats stats_after = t->GetStats();
  CHECK(stats_after.preemptions() == stats_before.preemptions());
  CHECK(stats_after.placements() == stats_before.placements());
  CHECK(stats_after.pending_jobs() == stats_before.pending_jobs());

  // No job id was used up, and the job the dry run said would start does, where it said.
  const v1::DryRunResult dry = MustDryRun(s, JobSpecBuilder("default").Gpus(1).Build());
  const v1::Job next = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build());
  CHECK(next.id() == jobs_before.back().id() + 1);
  t->WaitIdle();
  const v1::Job placed = MustGet(s, next.id());
  CHECK(placed.status().state() == v1::RUNNING);
  REQUIRE(placed.status().placements_size() == 1);
  CHECK(placed.status().placements(0).gpus(0) == dry.placements(0).gpus(0));
}

TEST_CASE("dry run: a job that does not fit waits, with its start from running time limits") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  v1::JobSpec limited = JobSpecBuilder("default").Gpus(3).Build();
  limited.set_time_limit_s(600);
  const v1::Job running = MustSubmit(s, limited);
  t->WaitIdle();
  t.clock->AdvanceUs(100 * kSecond);
  t->WaitIdle();
  const int64_t started = MustGet(s, running.id()).status().start_time_us();

  const v1::JobSpec big = JobSpecBuilder("default").Gpus(2).Build();
  const v1::DryRunResult dry = MustDryRun(s, big);
  CHECK(dry.verdict() == v1::DryRunResult::WAITS);
  CHECK(dry.wait_cause() == v1::DryRunResult::CAPACITY);
  CHECK(dry.estimated_start_us() == started + 600 * kSecond);
  CHECK(dry.start_unknown_reason().empty());
  CHECK(dry.reason() == "waiting for capacity: 0 of 1 tasks fit now, expected start in 500 s");
  REQUIRE(dry.placements_size() == 1);
  CHECK(dry.placements(0).node() == "node-0");
  CHECK(dry.victims_size() == 0);  // the running job has the same priority.

  // Submitted, it gets the reservation the dry run foresaw.
  const v1::Job job = MustSubmit(s, big);
  t->WaitIdle();
  CHECK(MustGet(s, job.id()).status().reserved_start_us() == dry.estimated_start_us());
}

TEST_CASE("dry run: the start is unknown when the room it needs is held without a time limit") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  MustSubmit(s, JobSpecBuilder("default").Gpus(3).Build());  // no time limit.
  t->WaitIdle();
  const v1::DryRunResult dry = MustDryRun(s, JobSpecBuilder("default").Gpus(2).Build());
  CHECK(dry.verdict() == v1::DryRunResult::WAITS);
  CHECK(dry.wait_cause() == v1::DryRunResult::CAPACITY);
  CHECK(dry.estimated_start_us() == 0);
  CHECK(dry.start_unknown_reason().find("running jobs without a time limit") != std::string::npos);
  CHECK(dry.reason() == "waiting for capacity: 0 of 1 tasks fit now");
}

TEST_CASE("dry run: room held for another job's reservation, and backfill before it") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  v1::JobSpec limited = JobSpecBuilder("default").Gpus(2).Build();
  limited.set_time_limit_s(600);
  MustSubmit(s, limited);
  const v1::Job gang = MustSubmit(s, JobSpecBuilder("default").Gpus(4).Build());  // reserves.
  t->WaitIdle();
  REQUIRE(MustGet(s, gang.id()).status().reserved_start_us() > 0);

  // Two GPUs are free, but the node is held for the gang from the running job's end.
  v1::JobSpec two = JobSpecBuilder("default").Gpus(2).Build();
  const v1::DryRunResult held = MustDryRun(s, two);
  CHECK(held.verdict() == v1::DryRunResult::WAITS);
  CHECK(held.jobs_ahead() == 1);  // the gang, first in the queue.
  CHECK(held.wait_cause() == v1::DryRunResult::TURN);

  // In a queue of its own, the reservation is what holds it back.
  CreateQueue(s, QueueSpec("other"));
  two.set_queue("other");
  const v1::DryRunResult other = MustDryRun(s, two);
  CHECK(other.verdict() == v1::DryRunResult::WAITS);
  CHECK(other.wait_cause() == v1::DryRunResult::RESERVATION);
  CHECK(other.reason().find("held for job " + std::to_string(gang.id())) != std::string::npos);
  CHECK(other.estimated_start_us() == 0);

  // With a time limit that ends before the reservation starts, it backfills now.
  two.set_time_limit_s(300);
  const v1::DryRunResult backfill = MustDryRun(s, two);
  CHECK(backfill.verdict() == v1::DryRunResult::STARTS_NOW);
  const v1::Job job = MustSubmit(s, two);
  t->WaitIdle();
  CHECK(MustGet(s, job.id()).status().state() == v1::RUNNING);
}

TEST_CASE("dry run: a job that could never run is infeasible, with the reason a submit gets") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  const v1::JobSpec spec = JobSpecBuilder("default").Gpus(8).Build();
  const v1::DryRunResult dry = MustDryRun(s, spec);
  CHECK(dry.verdict() == v1::DryRunResult::INFEASIBLE);
  CHECK(!dry.reason().empty());
  const v1::Job job = MustSubmit(s, spec);
  t->WaitIdle();
  const v1::Job stored = MustGet(s, job.id());
  CHECK(stored.status().infeasible());
  CHECK(stored.status().reason() == dry.reason());
}

TEST_CASE("dry run: a higher-priority job would preempt the work that loses least") {
  auto t = OpenCluster(OneNode(4), WithClasses());
  Scheduler* s = t.scheduler.get();
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) {
    v1::JobSpec spec = JobSpecBuilder("default").Gpus(1).PriorityClass("low").Build();
    spec.set_checkpoint_grace_s(30);
    if (i % 2 == 0) spec.mutable_simulation()->set_checkpoint_every_ms(50'000);
    ids.push_back(MustSubmit(s, spec).id());
  }
  t->WaitIdle();
  t.clock->AdvanceUs(120 * kSecond);
  t->WaitIdle();
  const v1::JobSpec urgent = JobSpecBuilder("default").Gpus(2).PriorityClass("critical").Build();
  const v1::DryRunResult dry = MustDryRun(s, urgent);
  CHECK(dry.verdict() == v1::DryRunResult::PREEMPTS);
  CHECK(dry.reason() == "preempting 2 victim(s) to make room");
  CHECK(dry.estimated_start_us() == t.clock->NowUs() + 30 * kSecond);
  REQUIRE(dry.victims_size() == 2);
  std::vector<uint64_t> victims;
  for (const v1::DryRunVictim& v : dry.victims()) {
    victims.push_back(v.job_id());
    CHECK(v.queue() == "default");
    CHECK(v.priority() == 0);
    CHECK(v.tasks() == 1);
    CHECK(!v.shrink_only());
    CHECK(v.reason() == "preempted to make room for this job (higher priority)");
  }
  std::sort(victims.begin(), victims.end());
  // The two that checkpointed 20 s ago, as the preemption itself chooses.
  CHECK(victims == std::vector<uint64_t>{ids[0], ids[2]});
  for (uint64_t id : ids) CHECK(MustGet(s, id).status().state() == v1::RUNNING);

  MustSubmit(s, urgent);
  t->WaitIdle();
  CHECK(MustGet(s, ids[0]).status().state() == v1::PREEMPTING);
  CHECK(MustGet(s, ids[2]).status().state() == v1::PREEMPTING);
  CHECK(MustGet(s, ids[1]).status().state() == v1::RUNNING);
}

TEST_CASE("dry run: a queue at its cap waits for quota") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec capped = QueueSpec("capped");
  capped.mutable_cap()->set_gpu_milli(2000);
  CreateQueue(s, capped);
  MustSubmit(s, JobSpecBuilder("capped").Gpus(2).Build());
  t->WaitIdle();
  const v1::JobSpec spec = JobSpecBuilder("capped").Gpus(1).Build();
  const v1::DryRunResult dry = MustDryRun(s, spec);
  CHECK(dry.verdict() == v1::DryRunResult::WAITS);
  CHECK(dry.wait_cause() == v1::DryRunResult::QUOTA);
  CHECK(dry.reason() == "waiting for quota: queue 'capped' cap on gpu_milli");
  CHECK(dry.estimated_start_us() == 0);
  const v1::Job job = MustSubmit(s, spec);
  t->WaitIdle();
  CHECK(MustGet(s, job.id()).status().reason() == dry.reason());
}

TEST_CASE("dry run: behind the blocked head of a strict FIFO queue, a job waits for its turn") {
  auto t = OpenCluster(OneNode(4));
  Scheduler* s = t.scheduler.get();
  v1::QueueSpec fifo = QueueSpec("fifo");
  fifo.set_queueing(v1::STRICT_FIFO);
  CreateQueue(s, fifo);
  MustSubmit(s, JobSpecBuilder("fifo").Gpus(3).Build());
  MustSubmit(s, JobSpecBuilder("fifo").Gpus(4).Build());  // the head, blocked.
  t->WaitIdle();
  const v1::DryRunResult dry = MustDryRun(s, JobSpecBuilder("fifo").Gpus(1).Build());
  CHECK(dry.verdict() == v1::DryRunResult::WAITS);
  CHECK(dry.wait_cause() == v1::DryRunResult::TURN);
  CHECK(dry.jobs_ahead() == 1);
  CHECK(dry.reason().rfind("waiting for its turn: 1 job(s) ahead of it in queue 'fifo'", 0) == 0);
}

TEST_CASE("dry run: a spec a submit would refuse gets the submit's error") {
  Options options;
  options.max_pending_jobs_per_queue = 1;
  auto t = OpenCluster(OneNode(4), options);
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, QueueSpec("org"));
  CreateQueue(s, QueueSpec("org/team"));
  v1::JobSpec bad = JobSpecBuilder("default").Gpus(1).Build();
  bad.mutable_task()->set_gpu_milli(1500);
  v1::JobSpec unknown_class = JobSpecBuilder("default").Gpus(1).PriorityClass("nope").Build();
  const std::vector<v1::JobSpec> refused = {bad, JobSpecBuilder("ghost").Gpus(1).Build(),
                                            JobSpecBuilder("org").Gpus(1).Build(), unknown_class};
  for (const v1::JobSpec& spec : refused) {
    const Status dry = s->DryRun(spec).status();
    const Status submit = s->Submit(spec).status();
    CHECK(!dry.ok());
    CHECK(dry.code() == submit.code());
    CHECK(dry.message() == submit.message());
  }
  // The queue's pending limit: one job waits already.
  MustSubmit(s, JobSpecBuilder("default").Gpus(8).Build());
  const Status full = s->DryRun(JobSpecBuilder("default").Gpus(1).Build()).status();
  CHECK(full.code() == StatusCode::kResourceExhausted);
  CHECK(full.message() == s->Submit(JobSpecBuilder("default").Gpus(1).Build()).status().message());
}

}  // namespace
}  // namespace tessera
