// What a backend reports about one task, apart from its exit: a task lost (evicted) and a launch
// rejected, retryably or for good. Each affects only its job; the backend stays healthy. Driven
// through the public API in virtual time with the sim plugin's scripted faults.
#include <string>

#include "integration/fixture.h"

#if TESSERA_HAVE_BACKEND_PLUGINS
namespace tessera {
namespace {

using namespace testing;

Options SimPlugin(const std::string& config) {
  Options options;
  options.plugin_dirs = {TESSERA_PLUGIN_DIR};
  PluginOptions plugin;
  plugin.plugin = "sim";
  plugin.config = config;
  options.executor_plugin = plugin;
  return options;
}

std::string Group(const std::string& prefix) {
  return R"({"namePrefix":")" + prefix +
         R"(","count":1,"cpuMilli":64000,"memoryMib":262144,"gpus":8,"gpuModel":"A100",)"
         R"("gpuMemoryMib":81920})";
}

void RunUntil(TestScheduler& t, TimestampUs start, int64_t until_ms) {
  while (t.clock->NowUs() < start + until_ms * 1000) {
    t.clock->AdvanceUs(1'000'000);
    t->WaitIdle();
  }
}

bool AllReady(Scheduler* s) {
  auto nodes = s->ListNodes();
  REQUIRE(nodes.ok());
  for (const v1::Node& n : *nodes) {
    if (n.status().cordoned()) return false;
  }
  return true;
}

TEST_CASE("backend reports: an evicted task's job is requeued and runs again, no attempt spent") {
  Options options =
      SimPlugin(R"({"groups":[)" + Group("a") + R"(],"changes":[{"atMs":5000,"evict":["a-0"]}]})");
  options.engine.max_attempts = 1;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const TimestampUs start = t.clock->NowUs();
  const v1::Job job =
      MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(20000).Build());
  t->WaitIdle();
  RunUntil(t, start, 6000);
  v1::Job now = MustGet(s, job.id());
  CHECK(now.status().state() == v1::RUNNING);  // requeued at 5 s and placed again at once.
  CHECK(now.status().attempt() == 2);
  CHECK(now.status().losses() == 0);
  CHECK(now.status().start_time_us() == start + 5'000'000);
  RunUntil(t, start, 30000);
  CHECK(MustGet(s, job.id()).status().state() == v1::SUCCEEDED);
  CHECK(AllReady(s));
}

TEST_CASE("backend reports: a node that rejects launches fails only the job placed there") {
  Options options = SimPlugin(R"({"groups":[)" + Group("bad") + "," + Group("ok") +
                              R"(],"rejecting_nodes":["bad-0"]})");
  options.engine.max_attempts = 3;
  auto t = Open(options);
  Scheduler* s = t.scheduler.get();
  const TimestampUs start = t.clock->NowUs();
  const v1::Job a =
      MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(10000).Build());
  const v1::Job b =
      MustSubmit(s, JobSpecBuilder("default").Gpus(8).SimulatedDurationMs(10000).Build());
  t->WaitIdle();
  RunUntil(t, start, 1000);
  // One job went to ok-0 and runs; the other was refused on bad-0 (the only node free for it)
  // each time it was placed, spending an attempt each time, until it failed.
  const v1::Job ja = MustGet(s, a.id());
  const v1::Job jb = MustGet(s, b.id());
  const v1::Job& refused = ja.status().state() == v1::FAILED ? ja : jb;
  const v1::Job& running = ja.status().state() == v1::FAILED ? jb : ja;
  CHECK(refused.status().state() == v1::FAILED);
  CHECK(refused.status().losses() == 3);
  CHECK(running.status().state() == v1::RUNNING);
  CHECK(running.status().placements(0).node() == "ok-0");
  CHECK(AllReady(s));  // the backend stayed healthy.
  auto events = s->WatchEvents(0, 1000, std::chrono::milliseconds(0));
  REQUIRE(events.ok());
  int rejections = 0;
  for (const v1::Event& e : *events) {
    rejections +=
        e.job_id() == refused.id() &&
        e.reason().find("rejected the launch of task 0: node 'bad-0' refuses") != std::string::npos;
  }
  CHECK(rejections == 3);
  RunUntil(t, start, 15000);
  CHECK(MustGet(s, running.id()).status().state() == v1::SUCCEEDED);
}

TEST_CASE("backend reports: a launch rejected for good fails its job at once with the reason") {
  auto t = Open(SimPlugin(R"({"groups":[)" + Group("bad") +
                          R"(],"rejecting_nodes":["bad-0"],"rejections_final":true})"));
  Scheduler* s = t.scheduler.get();
  const v1::Job job =
      MustSubmit(s, JobSpecBuilder("default").Gpus(1).SimulatedDurationMs(1000).Build());
  t->WaitIdle();
  t.clock->AdvanceUs(1'000'000);
  t->WaitIdle();
  const v1::Job failed = MustGet(s, job.id());
  CHECK(failed.status().state() == v1::FAILED);
  CHECK(failed.status().attempt() == 1);
  CHECK(failed.status().reason().find("rejected the launch of task 0 for good") !=
        std::string::npos);
  CHECK(AllReady(s));
}

}  // namespace
}  // namespace tessera
#endif  // TESSERA_HAVE_BACKEND_PLUGINS
