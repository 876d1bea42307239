// GPU health from telemetry: a fatal error fails the GPU and requeues its tasks; heat keeps new
// work off a GPU until it cools; an operator brings a failed GPU back by uncordoning its node.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

v1::GpuTelemetry Reading(int gpu, double temperature_c = 60) {
  v1::GpuTelemetry t;
  t.set_node("node-0");
  t.set_gpu(gpu);
  t.set_temperature_c(temperature_c);
  t.set_utilization_pct(90);
  t.set_power_w(300);
  return t;
}

const v1::GpuState* StateOf(const std::vector<v1::Node>& nodes, int gpu) {
  for (const v1::GpuState& g : nodes.at(0).status().gpus()) {
    if (g.index() == gpu) return &g;
  }
  return nullptr;
}

TEST_CASE("gpu health: a fatal XID fails the GPU and requeues the task on it") {
  auto t = OpenCluster(OneNode(2));
  Scheduler* s = t.scheduler.get();
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  const int gpu = MustGet(s, job).status().placements(0).gpus(0);
  v1::GpuTelemetry bad = Reading(gpu);
  bad.add_xid_errors(79);  // fallen off the bus.
  REQUIRE(t->ReportTelemetry(bad).ok());
  t->WaitIdle();
  const v1::Job requeued = MustGet(s, job);
  // Requeued and started again on the other GPU, without counting as a preemption.
  CHECK(requeued.status().attempt() == 2);
  CHECK(requeued.status().preemptions() == 0);
  CHECK(requeued.status().state() == v1::RUNNING);
  CHECK(requeued.status().placements(0).gpus(0) != gpu);
  auto nodes = t->ListNodes();
  REQUIRE(nodes.ok());
  const v1::GpuState* state = StateOf(*nodes, gpu);
  REQUIRE(state != nullptr);
  CHECK(state->failed());
  CHECK(state->reason() == "XID 79");
  // Nothing new goes to the failed GPU.
  const uint64_t next = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, next).status().state() == v1::PENDING);
  // An operator vouches for the node again: the GPU takes work.
  REQUIRE(t->CordonNode("node-0", false).ok());
  t->WaitIdle();
  CHECK(MustGet(s, next).status().state() == v1::RUNNING);
  CHECK(MustGet(s, next).status().placements(0).gpus(0) == gpu);
}

TEST_CASE("gpu health: a hot GPU takes no new work until it cools below the resume mark") {
  auto t = OpenCluster(OneNode(1));
  Scheduler* s = t.scheduler.get();
  REQUIRE(t->ReportTelemetry(Reading(0, 90)).ok());
  const uint64_t job = MustSubmit(s, JobSpecBuilder("default").Gpus(1).Build()).id();
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::PENDING);
  REQUIRE(t->ReportTelemetry(Reading(0, 84)).ok());  // below the limit, above the resume mark.
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::PENDING);
  REQUIRE(t->ReportTelemetry(Reading(0, 79)).ok());
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::RUNNING);
  // Heat while running does not stop the job.
  REQUIRE(t->ReportTelemetry(Reading(0, 95)).ok());
  t->WaitIdle();
  CHECK(MustGet(s, job).status().state() == v1::RUNNING);
  auto nodes = t->ListNodes();
  REQUIRE(nodes.ok());
  CHECK(StateOf(*nodes, 0)->too_hot());
  CHECK(StateOf(*nodes, 0)->last().temperature_c() == 95);
}

TEST_CASE("gpu health: telemetry for an unknown node or GPU is refused") {
  auto t = OpenCluster(OneNode(2));
  v1::GpuTelemetry unknown = Reading(0);
  unknown.set_node("ghost");
  CHECK(t->ReportTelemetry(unknown).code() == StatusCode::kNotFound);
  Status out_of_range = t->ReportTelemetry(Reading(7));
  CHECK(out_of_range.code() == StatusCode::kInvalidArgument);
  CHECK(out_of_range.message() == "gpu: index 7 out of range for node 'node-0' (2 GPUs)");
}

}  // namespace
}  // namespace tessera
