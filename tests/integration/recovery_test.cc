// Durability: what is acknowledged survives a restart and a kill -9, and nothing runs twice.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

Options DurableOptions(const std::string& path, std::shared_ptr<ManualClock> clock) {
  Options options;
  options.store.path = path;
  options.clock = std::move(clock);
  options.simulated_cluster = OneNode(4);
  return options;
}

TEST_CASE(
    "recovery: a restart keeps queues, node flags, pending and finished jobs, and "
    "requeues what was running") {
  ScratchDir dir;
  auto clock = std::make_shared<ManualClock>();
  const Options options = DurableOptions(dir.File("state.db"), clock);
  uint64_t finished_id, running_id, pending_id, last_seq;
  {
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    CreateQueue(s, QueueSpec("team", 2));
    finished_id =
        MustSubmit(s, JobSpecBuilder("team").Gpus(2).SimulatedDurationMs(1000).Build()).id();
    t->WaitIdle();
    clock->AdvanceUs(1'000'000);
    t->WaitIdle();
    running_id = MustSubmit(s, JobSpecBuilder("team").Gpus(3).Build()).id();
    pending_id = MustSubmit(s, JobSpecBuilder("team").Gpus(2).Build()).id();
    REQUIRE(s->CordonNode("node-0", false).ok());
    t->WaitIdle();
    CHECK(MustGet(s, running_id).status().state() == v1::RUNNING);
    CHECK(MustGet(s, pending_id).status().state() == v1::PENDING);
    last_seq = s->GetStats().last_event_seq();
  }
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  t->WaitIdle();
  CHECK(s->GetQueue("team")->spec().weight() == 2);
  CHECK(MustGet(s, finished_id).status().state() == v1::SUCCEEDED);
  // The simulated executor lost its tasks with the process: the running job was requeued with
  // its original submit time, ahead of the pending one, and runs again as attempt 2.
  const v1::Job requeued = MustGet(s, running_id);
  CHECK(requeued.status().attempt() == 2);
  CHECK(requeued.status().state() == v1::RUNNING);
  CHECK(MustGet(s, pending_id).status().state() == v1::PENDING);
  auto events = s->WatchEvents(last_seq, 100, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  REQUIRE(events->size() >= 3);
  CHECK(events->front().seq() == last_seq + 1);
  CHECK(events->front().to_state() == v1::LOST);
  CHECK((*events)[1].to_state() == v1::PENDING);
}

TEST_CASE("recovery: Open returns with the executor reconciled: a lost job reads as lost at once") {
  ScratchDir dir;
  auto clock = std::make_shared<ManualClock>();
  Options options = DurableOptions(dir.File("state.db"), clock);
  uint64_t id = 0;
  {
    auto t = Open(options);
    id = MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(4).Build()).id();
    t->WaitIdle();
    REQUIRE(MustGet(t.scheduler.get(), id).status().state() == v1::RUNNING);
  }
  // Decisions paused, so what is read is recovery's doing, not a later placement.
  options.engine.start_paused = true;
  auto t = Open(options);
  // No WaitIdle: the simulated executor's task did not survive, and the job says so as soon as
  // Open has returned (requeued as attempt 2), not "RUNNING attempt 1".
  const v1::Job lost = MustGet(t.scheduler.get(), id);
  CHECK(lost.status().state() == v1::PENDING);
  CHECK(lost.status().attempt() == 2);
  CHECK(lost.status().losses() == 1);
}

TEST_CASE("recovery: cordon and drain survive a restart") {
  ScratchDir dir;
  Options options = DurableOptions(dir.File("state.db"), std::make_shared<ManualClock>());
  v1::SimulatedCluster two;
  AddGroup(two, "node", 2, 4);
  options.simulated_cluster = two;
  {
    auto t = Open(options);
    REQUIRE(t->CordonNode("node-0", true).ok());
    REQUIRE(t->DrainNode("node-1").ok());
  }
  auto t = Open(options);
  auto nodes = t->ListNodes();
  REQUIRE(nodes.ok());
  REQUIRE(nodes->size() == 2);
  CHECK((*nodes)[0].status().cordoned());
  CHECK((*nodes)[1].status().draining());
  const v1::Job job = MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(1).Build());
  t->WaitIdle();
  CHECK(MustGet(t.scheduler.get(), job.id()).status().state() == v1::PENDING);
  REQUIRE(t->CordonNode("node-0", false).ok());
  t->WaitIdle();
  CHECK(MustGet(t.scheduler.get(), job.id()).status().state() == v1::RUNNING);
}

TEST_CASE("recovery: a job lost more often than max_attempts fails instead of looping") {
  ScratchDir dir;
  Options options = DurableOptions(dir.File("state.db"), std::make_shared<ManualClock>());
  options.engine.max_attempts = 2;
  uint64_t id;
  {
    auto t = Open(options);
    id = MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(1).Build()).id();
    t->WaitIdle();
  }
  {
    auto t = Open(options);  // lost once: attempt 2.
    t->WaitIdle();
    CHECK(MustGet(t.scheduler.get(), id).status().attempt() == 2);
  }
  auto t = Open(options);  // lost twice: gives up.
  t->WaitIdle();
  const v1::Job job = MustGet(t.scheduler.get(), id);
  CHECK(job.status().state() == v1::FAILED);
  CHECK(job.status().reason().find("lost 2 times") != std::string::npos);
}

TEST_CASE("recovery: a backup taken while running opens as a store with the same jobs") {
  ScratchDir dir;
  auto clock = std::make_shared<ManualClock>();
  const Options options = DurableOptions(dir.File("state.db"), clock);
  auto t = Open(options);
  for (int i = 0; i < 50; ++i) MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Build());
  t->WaitIdle();
  const std::string backup = dir.File("backup.db");
  REQUIRE(t->Backup(backup).ok());
  const auto original = CountStates(t.scheduler.get());
  t.scheduler.reset();  // the live store is closed; the copy must stand alone.

  Options restored = options;
  restored.store.path = backup;
  auto r = Open(restored);
  auto states = CountStates(r.scheduler.get());
  int total = 0;
  for (const auto& [state, count] : states) total += count;
  CHECK(total == 50);
  CHECK(original.size() >= 1);
}

// The child submits jobs as fast as it can and reports each acknowledged id on a pipe until
// the parent kills it with SIGKILL.
[[noreturn]] void SubmitUntilKilled(const std::string& path, int fd) {
  Options options;
  options.store.path = path;
  options.simulated_cluster = OneNode(8);
  auto opened = Scheduler::Open(options);
  if (!opened.ok()) _exit(3);
  std::unique_ptr<Scheduler> s = std::move(*opened);
  std::mutex mu;
  for (int i = 0;; ++i) {
    v1::JobSpec spec =
        JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(i % 3 == 0 ? 1 : 0).Build();
    s->SubmitAsync(spec, {}, [fd, &mu](StatusOr<v1::Job> job) {
      if (!job.ok()) return;
      std::lock_guard<std::mutex> lock(mu);
      const uint64_t id = job->id();
      if (write(fd, &id, sizeof(id)) != sizeof(id)) _exit(4);
    });
    if (i % 64 == 63) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST_CASE(
    "recovery: after kill -9 under load every acknowledged job is there and none runs "
    "twice") {
  ScratchDir dir;
  const std::string path = dir.File("state.db");
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(pipe_fds[0]);
    SubmitUntilKilled(path, pipe_fds[1]);
  }
  close(pipe_fds[1]);
  std::set<uint64_t> acknowledged;
  uint64_t id;
  while (acknowledged.size() < 3000 && read(pipe_fds[0], &id, sizeof(id)) == sizeof(id)) {
    acknowledged.insert(id);
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  while (read(pipe_fds[0], &id, sizeof(id)) == sizeof(id)) acknowledged.insert(id);
  close(pipe_fds[0]);
  REQUIRE(acknowledged.size() >= 3000);

  Options options;
  options.store.path = path;
  options.simulated_cluster = OneNode(8);
  options.clock = std::make_shared<ManualClock>();
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  t->WaitIdle();
  int missing = 0;
  for (uint64_t acked : acknowledged) {
    if (!s->GetJob(acked).ok()) ++missing;
  }
  CHECK(missing == 0);
  // Nothing runs twice: jobs that finished before the kill stay finished on their first
  // attempt; at most the eight that held GPUs at the kill are on a second attempt.
  v1::ListJobsRequest request;
  request.set_page_size(1000);
  int second_attempts = 0, succeeded = 0;
  while (true) {
    auto page = s->ListJobs(request);
    REQUIRE(page.ok());
    for (const v1::Job& j : page->jobs()) {
      if (j.status().state() == v1::SUCCEEDED) {
        ++succeeded;
        CHECK(j.status().attempt() == 1);
      }
      if (j.status().attempt() > 1) ++second_attempts;
    }
    if (page->next_page_token().empty()) break;
    request.set_page_token(page->next_page_token());
  }
  CHECK(second_attempts <= 8);
  MESSAGE("acknowledged " << acknowledged.size() << ", succeeded before the kill " << succeeded
                          << ", requeued " << second_attempts);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

using namespace testing;

Options TestBackendOptions(const std::string& store, std::shared_ptr<ManualClock> clock,
                           const std::string& config) {
  Options options;
  options.store.path = store;
  options.clock = std::move(clock);
  PluginOptions plugin;
  plugin.plugin = std::string(TESSERA_TEST_PLUGIN_DIR) + "/libtessera_plugin_test_backend.so";
  plugin.config = config;
  options.executor_plugin = plugin;
  return options;
}

TEST_CASE("recovery: a task of a superseded attempt is stopped before its GPUs are used again") {
  ScratchDir dir;
  auto clock = std::make_shared<ManualClock>();
  const std::string store = dir.File("state.db");
  uint64_t job = 0;
  {
    auto t = Open(TestBackendOptions(store, clock, "nodes=1"));
    job = MustSubmit(t.scheduler.get(), JobSpecBuilder("default").Gpus(8).Build()).id();
    t->WaitIdle();
    REQUIRE(MustGet(t.scheduler.get(), job).status().state() == v1::RUNNING);
  }
  {
    // The backend lost sight of attempt 1 (as a crash-looping plugin does): the job is
    // requeued as attempt 2, which has nowhere to run yet.
    auto t = Open(TestBackendOptions(store, clock, "nodes=0"));
    t->WaitIdle();
    const v1::Job requeued = MustGet(t.scheduler.get(), job);
    REQUIRE(requeued.status().attempt() == 2);
    REQUIRE(requeued.status().state() == v1::PENDING);
  }
  // Attempt 1's task is still running on test-0, which is back: it is stopped, and attempt 2
  // waits for it to be gone (5 s after the stop) before it takes the node's GPUs.
  auto t = Open(TestBackendOptions(
      store, clock,
      "nodes=1\nleftover_job=" + std::to_string(job) + "\nleftover_attempt=1\nstop_delay_ms=5000"));
  Scheduler* s = t.scheduler.get();
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::PENDING);
  clock->AdvanceUs(4'000'000);
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::PENDING);
  clock->AdvanceUs(1'000'000);
  t->WaitIdle();
  const v1::Job running = MustGet(s, job);
  CHECK(running.status().state() == v1::RUNNING);
  CHECK(running.status().attempt() == 2);
}

TEST_CASE("recovery: a job whose cancel was acknowledged is not run again after a restart") {
  ScratchDir dir;
  auto clock = std::make_shared<ManualClock>();
  const Options options = DurableOptions(dir.File("state.db"), clock);
  uint64_t id = 0;
  uint64_t last_seq = 0;
  {
    auto t = Open(options);
    Scheduler* s = t.scheduler.get();
    // Its tasks take their whole grace to stop, so the cancel is still in progress when the
    // scheduler goes away.
    v1::JobSpec spec = JobSpecBuilder("default").Gpus(2).Build();
    spec.set_checkpoint_grace_s(30);
    id = MustSubmit(s, spec).id();
    t->WaitIdle();
    REQUIRE(MustGet(s, id).status().state() == v1::RUNNING);
    auto cancelled = s->Cancel(id);
    REQUIRE(cancelled.ok());
    REQUIRE(cancelled->status().cancel_requested());
    REQUIRE(cancelled->status().state() == v1::RUNNING);
    last_seq = s->GetStats().last_event_seq();
  }
  // The simulated executor lost the task with the process: the job has stopped.
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  t->WaitIdle();
  clock->AdvanceUs(60'000'000);
  t->WaitIdle();
  const v1::Job job = MustGet(s, id);
  CHECK(job.status().state() == v1::CANCELLED);
  CHECK(job.status().attempt() == 1);
  CHECK(job.status().reason().find("cancelled") == 0);
  auto events = s->WatchEvents(last_seq, 100, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  for (const v1::Event& e : *events) {
    INFO(e.ShortDebugString());
    CHECK(e.to_state() != v1::ADMITTED);
    CHECK(e.to_state() != v1::PENDING);
  }
}

}  // namespace
}  // namespace tessera
