// VictimEligibility: the one rule for who may be stopped for whom (preemption, reclaim, shrink,
// MIG drain), case by case.
#include "preemption/victim_eligibility.h"

#include <doctest/doctest.h>

namespace tessera {
namespace {

constexpr int64_t kSecondUs = 1'000'000;
const ResourceVector kGpu{0, 0, 1000, 0};

v1::QueueSpec Queue(const std::string& name, int64_t guarantee_gpu_milli = 0) {
  v1::QueueSpec spec;
  spec.set_name(name);
  spec.set_weight(1.0);
  if (guarantee_gpu_milli > 0) spec.mutable_guarantee()->set_gpu_milli(guarantee_gpu_milli);
  return spec;
}

// Two queues on an 8-GPU cluster: "a" guaranteed 2 GPUs, "b" none.
struct RuleFixture {
  RuleFixture() : guard(Options()) {
    tree.SetCapacity(kGpu * 8);
    a = *tree.Create(Queue("a", 2000));
    b = *tree.Create(Queue("b"));
  }
  static PreemptionOptions Options() {
    PreemptionOptions options;
    options.min_runtime = std::chrono::seconds(60);
    options.cooldown = std::chrono::seconds(300);
    return options;
  }
  // A running, preemptible one-GPU job of `queue` at `priority`, started at t = 0.
  VictimFacts Running(uint64_t id, QueueId queue, int32_t priority) {
    VictimFacts v;
    v.job = id;
    v.queue = queue;
    v.priority = priority;
    v.running = true;
    v.preemptible = true;
    v.live_tasks = 1;
    v.gang_min = 1;
    v.started_us = 1;
    v.allocated = &one_gpu;
    return v;
  }
  VictimVerdict Judge(const Preemptor& p, const VictimFacts& v,
                      TimestampUs now = 3600 * kSecondUs) {
    return VictimEligibility(tree, guard).Judge(p, v, now);
  }

  QueueTree tree;
  PreemptionGuard guard;
  QueueId a = 0;
  QueueId b = 0;
  ResourceVector one_gpu = kGpu;
};

using Extent = VictimVerdict::Extent;

TEST_CASE("victim rule: only running, preemptible jobs not already stopping, never oneself") {
  RuleFixture f;
  const Preemptor high{100, f.b, 10, std::nullopt};
  VictimFacts v = f.Running(1, f.b, 0);
  CHECK(f.Judge(high, v).MayStopNow(Extent::kWhole));
  VictimFacts not_preemptible = v;
  not_preemptible.preemptible = false;
  CHECK(f.Judge(high, not_preemptible).extent == Extent::kNone);
  VictimFacts pending = v;
  pending.running = false;
  CHECK(f.Judge(high, pending).extent == Extent::kNone);
  VictimFacts stopping = v;
  stopping.stopping = true;
  CHECK(f.Judge(high, stopping).extent == Extent::kNone);
  VictimFacts self = v;
  self.job = high.job;
  CHECK(f.Judge(high, self).extent == Extent::kNone);
}

TEST_CASE("victim rule: a lower priority gives way, an equal or higher one does not") {
  RuleFixture f;
  const Preemptor normal{100, f.b, 5, std::nullopt};
  const VictimVerdict lower = f.Judge(normal, f.Running(1, f.b, 4));
  CHECK(lower.MayStopNow(Extent::kWhole));
  CHECK(lower.by_priority);
  CHECK(f.Judge(normal, f.Running(2, f.b, 5)).extent == Extent::kNone);
  CHECK(f.Judge(normal, f.Running(3, f.b, 6)).extent == Extent::kNone);
}

TEST_CASE("victim rule: another queue's job within its guarantee does not give way to priority") {
  RuleFixture f;
  // "a" holds one GPU of its two guaranteed: taking it would be reclaimed at once.
  f.tree.AddAllocation(f.a, kGpu, 0);
  const Preemptor high{100, f.b, 10, std::nullopt};
  CHECK(f.Judge(high, f.Running(1, f.a, 0)).extent == Extent::kNone);
  // Beyond its guarantee, what it holds is borrowed and gives way.
  f.tree.AddAllocation(f.a, kGpu * 2, 0);
  CHECK(f.Judge(high, f.Running(1, f.a, 0)).MayStopNow(Extent::kWhole));
}

TEST_CASE(
    "victim rule: a queue below its guarantee reclaims from a borrower, whatever the priority") {
  RuleFixture f;
  f.tree.AddAllocation(f.b, kGpu * 8, 0);  // "b" borrowed everything.
  const Preemptor reclaiming{100, f.a, 0, f.a};
  const VictimVerdict verdict = f.Judge(reclaiming, f.Running(1, f.b, 10));
  CHECK(verdict.MayStopNow(Extent::kWhole));
  CHECK_FALSE(verdict.by_priority);
  // Without a claimant the same job is safe from a lower priority.
  const Preemptor plain{100, f.a, 0, std::nullopt};
  CHECK(f.Judge(plain, f.Running(1, f.b, 10)).extent == Extent::kNone);
}

TEST_CASE("victim rule: an elastic job above its minimum only shrinks, at its own priority too") {
  RuleFixture f;
  const Preemptor normal{100, f.b, 5, std::nullopt};
  VictimFacts elastic = f.Running(1, f.b, 5);
  elastic.elastic = true;
  elastic.live_tasks = 3;
  elastic.gang_min = 1;
  CHECK(f.Judge(normal, elastic).MayStopNow(Extent::kShrink));
  elastic.priority = 4;  // lower: still only the tasks above the minimum.
  CHECK(f.Judge(normal, elastic).MayStopNow(Extent::kShrink));
  // At its minimum it is an ordinary job: whole, and only for a lower priority.
  elastic.live_tasks = 1;
  CHECK(f.Judge(normal, elastic).MayStopNow(Extent::kWhole));
  elastic.priority = 5;
  CHECK(f.Judge(normal, elastic).extent == Extent::kNone);
}

TEST_CASE("victim rule: the guards say when a victim may be stopped") {
  RuleFixture f;
  const Preemptor high{100, f.b, 10, std::nullopt};
  VictimFacts young = f.Running(1, f.b, 0);
  young.started_us = 100 * kSecondUs;
  const VictimVerdict verdict = f.Judge(high, young, 120 * kSecondUs);
  CHECK(verdict.extent == Extent::kWhole);
  CHECK_FALSE(verdict.allowed_now);
  CHECK(verdict.allowed_at == 160 * kSecondUs);  // 60 s of minimum runtime.
  VictimFacts preempted = f.Running(2, f.b, 0);
  preempted.preempted_us = 1000 * kSecondUs;
  const VictimVerdict cooling = f.Judge(high, preempted, 1100 * kSecondUs);
  CHECK_FALSE(cooling.allowed_now);
  CHECK(cooling.allowed_at == 1300 * kSecondUs);  // 300 s of cooldown.
  CHECK(f.Judge(high, preempted, 1300 * kSecondUs).allowed_now);
}

TEST_CASE("victim rule: a job whose GPUs stayed idle gives way whole to anyone, with the guards") {
  RuleFixture f;
  // "a" holds one GPU within its guarantee, at a high priority: safe from priority and reclaim.
  f.tree.AddAllocation(f.a, kGpu, 0);
  const Preemptor low{100, f.b, 0, std::nullopt};
  VictimFacts idle = f.Running(1, f.a, 10);
  CHECK(f.Judge(low, idle).extent == Extent::kNone);
  idle.idle_reclaimable = true;
  const VictimVerdict verdict = f.Judge(low, idle);
  CHECK(verdict.MayStopNow(Extent::kWhole));
  CHECK(verdict.by_idle_gpus);
  CHECK_FALSE(verdict.by_priority);
  // Never a job that is not preemptible, and the minimum runtime still protects a young one.
  VictimFacts kept = idle;
  kept.preemptible = false;
  CHECK(f.Judge(low, kept).extent == Extent::kNone);
  const VictimVerdict young = f.Judge(low, idle, 30 * kSecondUs);
  CHECK(young.extent == Extent::kWhole);
  CHECK_FALSE(young.allowed_now);
  // A preemptor that may only reclaim a guarantee takes nothing for idleness alone.
  const Preemptor reclaim_only{100, f.b, 0, std::nullopt, true};
  CHECK(f.Judge(reclaim_only, idle).extent == Extent::kNone);
  // A lower priority stays the reason where it holds.
  const Preemptor high{100, f.a, 20, std::nullopt};
  const VictimVerdict by_priority = f.Judge(high, idle);
  CHECK(by_priority.by_priority);
  CHECK_FALSE(by_priority.by_idle_gpus);
}

}  // namespace
}  // namespace tessera
