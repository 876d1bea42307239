// ReplayOptions::on_step: after every step but the last, the span of clock time the state holds;
// the spans tile [epoch, end] without gaps, and what the callback reads holds for its span.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "tessera/scheduler.h"
#include "trace_replay.h"

namespace tessera::replay {
namespace {

constexpr TimestampUs kEpochUs = 1'000'000'000;
constexpr int64_t kSecondUs = 1'000'000;

ReplayJob OneGpuJob(int64_t submit_s, int64_t duration_s) {
  ReplayJob job;
  job.submit_offset_us = submit_s * kSecondUs;
  job.spec.set_queue("q");
  job.spec.mutable_task()->set_cpu_milli(1000);
  job.spec.mutable_task()->set_memory_mib(1024);
  job.spec.mutable_task()->set_gpu_count(1);
  job.spec.mutable_simulation()->set_duration_ms(duration_s * 1000);
  return job;
}

TEST_CASE("on_step: spans tile the replay, and the GPUs read in each are held through it") {
  auto clock = std::make_shared<ManualClock>(kEpochUs);
  Options options;
  options.log.level = LogLevel::kWarning;
  options.clock = clock;
  options.default_queue.clear();
  v1::SimulatedCluster cluster;
  v1::SimulatedNodeGroup* group = cluster.add_groups();
  group->set_name_prefix("n");
  group->set_count(1);
  group->set_cpu_milli(8000);
  group->set_memory_mib(16384);
  group->set_gpus(2);
  group->set_gpu_model("T4");
  group->set_gpu_memory_mib(16384);
  options.simulated_cluster = cluster;
  StatusOr<std::unique_ptr<Scheduler>> opened = Scheduler::Open(options);
  REQUIRE(opened.ok());
  Scheduler& scheduler = **opened;
  v1::QueueSpec queue;
  queue.set_name("q");
  REQUIRE(scheduler.CreateQueue(queue).ok());

  // GPU 1 busy 0..100 s, GPU 2 busy 10..40 s: 130 GPU-seconds.
  const std::vector<ReplayJob> jobs = {OneGpuJob(0, 100), OneGpuJob(10, 30)};
  std::vector<std::pair<TimestampUs, TimestampUs>> spans;
  double gpu_us = 0;
  ReplayOptions replay_options;
  replay_options.epoch_us = kEpochUs;
  replay_options.on_step = [&](TimestampUs now, TimestampUs until) -> Status {
    spans.emplace_back(now, until);
    StatusOr<std::vector<v1::Node>> nodes = scheduler.ListNodes();
    if (!nodes.ok()) return nodes.status();
    for (const v1::Node& node : *nodes) {
      gpu_us += static_cast<double>(node.status().allocated().gpu_milli()) / 1000 *
                static_cast<double>(until - now);
    }
    return Status::Ok();
  };
  StatusOr<ReplayResult> result = ReplayTrace(scheduler, *clock, jobs, replay_options);
  REQUIRE(result.ok());
  REQUIRE(!spans.empty());
  CHECK(spans.front().first == kEpochUs);
  for (size_t i = 1; i < spans.size(); ++i) CHECK(spans[i].first == spans[i - 1].second);
  CHECK(spans.back().second == result->end_us);
  CHECK(static_cast<int64_t>(spans.size()) == result->steps - 1);
  CHECK(gpu_us == doctest::Approx(130.0 * kSecondUs));
}

TEST_CASE("on_step: an error from the callback ends the replay with it") {
  auto clock = std::make_shared<ManualClock>(kEpochUs);
  Options options;
  options.log.level = LogLevel::kWarning;
  options.clock = clock;
  StatusOr<std::unique_ptr<Scheduler>> opened = Scheduler::Open(options);
  REQUIRE(opened.ok());
  ReplayOptions replay_options;
  replay_options.epoch_us = kEpochUs;
  replay_options.on_step = [](TimestampUs, TimestampUs) -> Status {
    return InternalError("the callback says no");
  };
  StatusOr<ReplayResult> result =
      ReplayTrace(**opened, *clock, {OneGpuJob(0, 10), OneGpuJob(5, 10)}, replay_options);
  REQUIRE(!result.ok());
  CHECK(result.status().message() == "the callback says no");
}

}  // namespace
}  // namespace tessera::replay
