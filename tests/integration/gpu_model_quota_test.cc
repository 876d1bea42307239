// Quotas and fair share per GPU model end to end, on a mixed cluster of H100 and T4 nodes:
// guarantees per model served first, caps per model steering a job that accepts both models,
// reclaim that takes back the model a queue is owed, and per-model usage in the queue status.
#include "integration/fixture.h"

namespace tessera {
namespace {

using namespace testing;

constexpr int64_t kSecond = 1'000'000;

// One node of 4 H100s ("h100-0") and one of 4 T4s ("t4-0").
v1::SimulatedCluster MixedCluster() {
  v1::SimulatedCluster cluster;
  AddGroup(cluster, "h100", 1, 4, "H100-80GB");
  AddGroup(cluster, "t4", 1, 4, "T4");
  return cluster;
}

v1::QueueSpec WithModelQuota(v1::QueueSpec spec, const std::string& model, int64_t guarantee,
                             std::optional<int64_t> cap = std::nullopt) {
  v1::GpuModelQuota* q = spec.add_gpu_models();
  q->set_model(model);
  q->set_guarantee_gpu_milli(guarantee);
  if (cap) q->set_cap_gpu_milli(*cap);
  return spec;
}

// Milli-GPUs of `model` the queue holds, from its status.
int64_t HeldOf(Scheduler* s, const std::string& queue, const std::string& model) {
  auto q = s->GetQueue(queue);
  REQUIRE_MESSAGE(q.ok(), q.status().ToString());
  for (const v1::GpuModelUsage& m : q->status().gpu_models()) {
    if (m.model() == model) return m.allocated_gpu_milli();
  }
  return 0;
}

// The node the job's first task runs on.
std::string NodeOf(Scheduler* s, uint64_t id) {
  const v1::Job job = MustGet(s, id);
  return job.status().placements_size() > 0 ? job.status().placements(0).node() : "";
}

v1::JobSpec EitherModel(const std::string& queue) {
  return JobSpecBuilder(queue).Gpus(1).GpuModel("H100-80GB").GpuModel("T4").Build();
}

TEST_CASE("gpu model quotas: two queues with guarantees per model get the models they are owed") {
  auto t = OpenCluster(MixedCluster());
  Scheduler* s = t.scheduler.get();
  t->PauseDecisions();
  CreateQueue(s, WithModelQuota(QueueSpec("vision"), "H100-80GB", 3000));
  CreateQueue(s, WithModelQuota(QueueSpec("speech"), "T4", 3000));
  CreateQueue(s, QueueSpec("batch"));
  for (int i = 0; i < 8; ++i) {
    MustSubmit(s, EitherModel("batch"));
    MustSubmit(s, JobSpecBuilder("vision").Gpus(1).GpuModel("H100-80GB").Build());
    MustSubmit(s, JobSpecBuilder("speech").Gpus(1).GpuModel("T4").Build());
  }
  t->ResumeDecisions();
  t->WaitIdle();
  // Each guaranteed queue is served first up to its guarantee on its model; batch, with no
  // guarantee, gets what is left of both models (the order then prices an H100 above a T4).
  CHECK(HeldOf(s, "vision", "H100-80GB") >= 3000);
  CHECK(HeldOf(s, "speech", "T4") >= 3000);
  CHECK(HeldOf(s, "batch", "H100-80GB") + HeldOf(s, "batch", "T4") >= 1000);
  auto vision = s->GetQueue("vision");
  REQUIRE(vision.ok());
  REQUIRE(vision->status().gpu_models_size() == 1);
  CHECK(vision->status().gpu_models(0).capacity_gpu_milli() == 4000);
  CHECK(vision->status().gpu_models(0).weight() == doctest::Approx(2.1));
  CHECK(vision->status().weighted_gpu_share() > 0);
}

TEST_CASE("gpu model quotas: a cap on one model sends a job that accepts both to the other") {
  auto t = OpenCluster(MixedCluster());
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, WithModelQuota(QueueSpec("capped"), "H100-80GB", 0, 1000));
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(MustSubmit(s, EitherModel("capped")).id());
  t->WaitIdle();
  CHECK(CountStates(s, "capped")[v1::RUNNING] == 4);
  CHECK(HeldOf(s, "capped", "H100-80GB") == 1000);
  CHECK(HeldOf(s, "capped", "T4") == 3000);
  // A job that accepts only the capped model waits, and says for which model.
  const v1::Job h100_only =
      MustSubmit(s, JobSpecBuilder("capped").Gpus(1).GpuModel("H100-80GB").Build());
  t->WaitIdle();
  const v1::Job waiting = MustGet(s, h100_only.id());
  CHECK(waiting.status().state() == v1::PENDING);
  CHECK(waiting.status().reason() ==
        "waiting for quota: queue 'capped' cap on H100-80GB gpu_milli");
}

TEST_CASE("gpu model quotas: reclaim takes back an H100 for a queue owed H100s, not a T4") {
  Options options;
  options.preemption.min_runtime = std::chrono::seconds(0);
  auto t = OpenCluster(MixedCluster(), options);
  Scheduler* s = t.scheduler.get();
  CreateQueue(s, WithModelQuota(QueueSpec("owed"), "H100-80GB", 2000));
  CreateQueue(s, QueueSpec("borrower"));
  // The T4 work started later: it would lose the least if stopped, so without the rule it is
  // what a reclaim would take.
  std::map<uint64_t, std::string> borrowed;  // job -> node
  for (const char* model : {"H100-80GB", "T4"}) {
    for (int i = 0; i < 4; ++i) {
      borrowed[MustSubmit(s, JobSpecBuilder("borrower").Gpus(1).GpuModel(model).Build()).id()] = "";
    }
    t->WaitIdle();
    t.clock->AdvanceUs(600 * kSecond);
    t->WaitIdle();
  }
  REQUIRE(CountStates(s, "borrower")[v1::RUNNING] == 8);
  for (auto& [id, node] : borrowed) node = NodeOf(s, id);

  // A job that could run on either model: only H100 work is taken back for it.
  const v1::Job claim = MustSubmit(s, EitherModel("owed"));
  t->WaitIdle();
  t.clock->AdvanceUs(60 * kSecond);
  t->WaitIdle();
  CHECK(MustGet(s, claim.id()).status().state() == v1::RUNNING);
  CHECK(NodeOf(s, claim.id()) == "h100-0");
  std::vector<std::string> preempted_from;
  for (const auto& [id, node] : borrowed) {
    if (MustGet(s, id).status().preemptions() > 0) preempted_from.push_back(node);
  }
  CHECK(preempted_from == std::vector<std::string>{"h100-0"});
  CHECK(HeldOf(s, "borrower", "T4") == 4000);
  CHECK(HeldOf(s, "owed", "H100-80GB") == 1000);

  // Owed H100s, it may not take T4s: a T4-only job waits, and nothing more is preempted.
  const v1::Job t4_only = MustSubmit(s, JobSpecBuilder("owed").Gpus(1).GpuModel("T4").Build());
  t->WaitIdle();
  t.clock->AdvanceUs(60 * kSecond);
  t->WaitIdle();
  CHECK(MustGet(s, t4_only.id()).status().state() == v1::PENDING);
  CHECK(HeldOf(s, "borrower", "T4") == 4000);
}

}  // namespace
}  // namespace tessera
