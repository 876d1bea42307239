// A queue ordered by attained service (QueueSpec.attained_service): jobs that have had less
// GPU time go first, a job whose service takes it past a band limit gives way to a lower band
// of its queue when the queue allows preemption, and a job that waits long after a run returns
// to the first band.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr TimestampUs kS = 1'000'000;

v1::QueueSpec ServiceQueue(bool preempt, double starvation_factor) {
  v1::QueueSpec spec = QueueSpec("las");
  v1::AttainedServiceOrder* order = spec.mutable_attained_service();
  order->add_band_limits_gpu_s(100);  // band 0 below 100 GPU-seconds.
  order->set_preempt(preempt);
  order->set_starvation_factor(starvation_factor);
  return spec;
}

v1::JobSpec Job(int gpus, int64_t seconds) {
  return JobSpecBuilder("las").Gpus(gpus).SimulatedDurationMs(seconds * 1000).Build();
}

struct Story {
  TestScheduler t;
  TimestampUs t0 = 0;
  uint64_t long_job = 0;
  uint64_t short_job = 0;
};

// One node of 2 GPUs. A 2-GPU job of 1,000 s starts at t0 (its service reaches 100 GPU-s at
// t0 + 50 s); a 1-GPU job of 20 s arrives at t0 + 1 s.
Story Start(bool preempt, double starvation_factor = 0) {
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(10);
  Story s{OpenCluster(OneNode(2), options)};
  Scheduler* sched = s.t.scheduler.get();
  CreateQueue(sched, ServiceQueue(preempt, starvation_factor));
  s.long_job = MustSubmit(sched, Job(2, 1000)).id();
  s.t->WaitIdle();
  s.t0 = s.t.clock->NowUs();
  s.t.clock->AdvanceToUs(s.t0 + kS);
  s.short_job = MustSubmit(sched, Job(1, 20)).id();
  s.t->WaitIdle();
  return s;
}

void RunUntil(TestScheduler& t, TimestampUs until) {
  while (auto next = t->NextWakeupUs()) {
    if (*next > until) break;
    t.clock->AdvanceToUs(*next);
    t->WaitIdle();
  }
  t.clock->AdvanceToUs(until);
  t->WaitIdle();
}

TEST_CASE("service order: a job past its band limit gives way to a lower band of its queue") {
  Story s = Start(/*preempt=*/true);
  Scheduler* sched = s.t.scheduler.get();
  RunUntil(s.t, s.t0 + 49 * kS);
  CHECK(MustGet(sched, s.short_job).status().state() == v1::PENDING);  // same band so far.

  RunUntil(s.t, s.t0 + 51 * kS);
  const v1::Job short_job = MustGet(sched, s.short_job);
  CHECK(short_job.status().state() == v1::RUNNING);
  CHECK(short_job.status().start_time_us() == s.t0 + 50 * kS);
  const v1::Job preempted = MustGet(sched, s.long_job);
  CHECK(preempted.status().state() == v1::PENDING);
  CHECK(preempted.status().preemptions() == 1);
  CHECK(preempted.status().attained_gpu_s() == 100);
  CHECK(preempted.status().service_band() == 1);

  // A 2-GPU job submitted later, with no service yet, goes before the one with 100 GPU-s.
  s.t.clock->AdvanceToUs(s.t0 + 60 * kS);
  const uint64_t fresh = MustSubmit(sched, Job(2, 30)).id();
  s.t->WaitIdle();
  RunUntil(s.t, s.t0 + 71 * kS);  // the short job ended at 70 s.
  CHECK(MustGet(sched, fresh).status().state() == v1::RUNNING);
  CHECK(MustGet(sched, s.long_job).status().state() == v1::PENDING);
  CHECK(MustGet(sched, short_job.id()).status().state() == v1::SUCCEEDED);
}

TEST_CASE("service order: without preempt, bands only order the waiting jobs") {
  Story s = Start(/*preempt=*/false);
  RunUntil(s.t, s.t0 + 200 * kS);
  CHECK(MustGet(s.t.scheduler.get(), s.short_job).status().state() == v1::PENDING);
  CHECK(MustGet(s.t.scheduler.get(), s.long_job).status().preemptions() == 0);
}

TEST_CASE("service order: a job that waits its starvation limit returns to band 0") {
  // Preempted at 50 s after running 50 s: with a factor of 2 it is back in band 0 at 150 s, and
  // then preempts the 2-GPU job that took the node at 70 s once that one has passed 100 GPU-s.
  Story s = Start(/*preempt=*/true, /*starvation_factor=*/2);
  Scheduler* sched = s.t.scheduler.get();
  RunUntil(s.t, s.t0 + 60 * kS);
  const uint64_t rival = MustSubmit(sched, Job(2, 1000)).id();
  s.t->WaitIdle();
  RunUntil(s.t, s.t0 + 149 * kS);
  CHECK(MustGet(sched, s.long_job).status().service_band() == 1);
  CHECK(MustGet(sched, rival).status().state() == v1::RUNNING);  // from 70 s, 100 GPU-s at 120 s.
  RunUntil(s.t, s.t0 + 151 * kS);
  const v1::Job promoted = MustGet(sched, s.long_job);
  CHECK(promoted.status().state() == v1::RUNNING);
  CHECK(promoted.status().start_time_us() == s.t0 + 150 * kS);
  CHECK(MustGet(sched, rival).status().preemptions() == 1);
}

TEST_CASE("service order: bad band limits and starvation factors name the field") {
  TestScheduler t = OpenCluster(OneNode(1));
  v1::QueueSpec spec = ServiceQueue(false, 0);
  spec.mutable_attained_service()->add_band_limits_gpu_s(50);
  Status status = t->CreateQueue(spec);
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK(status.message().find("attained_service.band_limits_gpu_s[1]") != std::string::npos);
  CHECK(status.message().find("ascend") != std::string::npos);

  spec = ServiceQueue(false, 0);
  spec.mutable_attained_service()->set_band_limits_gpu_s(0, 0);
  status = t->CreateQueue(spec);
  CHECK(status.message().find("attained_service.band_limits_gpu_s[0]") != std::string::npos);

  spec = ServiceQueue(false, -1);
  status = t->CreateQueue(spec);
  CHECK(status.message().find("attained_service.starvation_factor") != std::string::npos);
}

}  // namespace
}  // namespace tessera
