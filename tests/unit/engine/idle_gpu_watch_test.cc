// IdleGpuWatch: a job is flagged once every GPU it holds has read below the threshold for the
// whole window (not before), a busy reading ends the flag and starts the window over, a
// reclaiming policy makes it reclaimable after the warning; and ResolveIdleGpuRule: the nearest
// queue that sets a policy decides, exemption only where it is allowed.
#include "engine/idle_gpu_watch.h"

#include <doctest/doctest.h>

namespace tessera {
namespace {

constexpr int64_t kSecond = 1'000'000;

IdleGpuWatch::Policy Policy(bool reclaim = false, int64_t warning_s = 0) {
  IdleGpuWatch::Policy p;
  p.below_pct = 5;
  p.idle_for_us = 60 * kSecond;
  p.reclaim = reclaim;
  p.warning_us = warning_s * kSecond;
  return p;
}

const std::vector<GpuRef> kTwoGpus = {{0, 0}, {0, 1}};

struct Readings {
  IdleGpuWatch watch;
  IdleGpuWatch::Policy policy = Policy();
  std::vector<GpuRef> gpus = kTwoGpus;
  // Both GPUs read `pct` at `t_s`; what either reading changed.
  IdleGpuWatch::Verdict Both(double pct, int64_t t_s, uint64_t job = 1) {
    IdleGpuWatch::Verdict all;
    for (const GpuRef& g : gpus) {
      const IdleGpuWatch::Verdict v =
          watch.Record(job, policy, g, pct, t_s * kSecond, [this] { return gpus; });
      if (v.flagged || v.reclaimable) {
        all.idle_since = v.idle_since;
        all.gpus = v.gpus;
      }
      all.flagged |= v.flagged;
      all.reclaimable |= v.reclaimable;
      all.busy_again |= v.busy_again;
    }
    return all;
  }
};

TEST_CASE("idle GPU watch: flagged after the window, not before") {
  Readings r;
  for (int64_t t = 0; t < 60; t += 10) CHECK_FALSE(r.Both(1, t).flagged);
  CHECK_FALSE(r.watch.Flagged(1));
  const IdleGpuWatch::Verdict v = r.Both(1, 60);
  CHECK(v.flagged);
  CHECK(v.idle_since == 0);
  CHECK(v.gpus == 2);
  CHECK(r.watch.Flagged(1));
  CHECK(r.watch.flagged_jobs() == 1);
  CHECK_FALSE(r.Both(1, 70).flagged);   // flagged once.
  CHECK_FALSE(r.watch.Reclaimable(1));  // the policy does not reclaim.
}

TEST_CASE("idle GPU watch: one busy GPU keeps the job busy, and a busy reading starts over") {
  Readings r;
  for (int64_t t = 0; t <= 120; t += 10) {
    r.watch.Record(1, r.policy, kTwoGpus[0], 0, t * kSecond, [&] { return r.gpus; });
    CHECK_FALSE(
        r.watch.Record(1, r.policy, kTwoGpus[1], 40, t * kSecond, [&] { return r.gpus; }).flagged);
  }
  CHECK_FALSE(r.watch.Flagged(1));
  // Idle from 130 s on: flagged at 190 s, not at 180 s.
  for (int64_t t = 130; t <= 180; t += 10) CHECK_FALSE(r.Both(2, t).flagged);
  CHECK(r.Both(2, 190).flagged);
  // Busy again: the flag ends, and the window starts over.
  CHECK(r.Both(90, 200).busy_again);
  CHECK(r.watch.flagged_jobs() == 0);
  CHECK_FALSE(r.Both(0, 250).flagged);
  CHECK_FALSE(r.Both(0, 300).flagged);
  CHECK(r.Both(0, 310).flagged);
}

TEST_CASE("idle GPU watch: a GPU that never reported is not idle") {
  Readings r;
  for (int64_t t = 0; t <= 600; t += 10) {
    CHECK_FALSE(
        r.watch.Record(1, r.policy, kTwoGpus[0], 0, t * kSecond, [&] { return r.gpus; }).flagged);
  }
  CHECK_FALSE(r.watch.Flagged(1));
  // A job without GPUs is never idle either.
  r.gpus.clear();
  CHECK_FALSE(r.watch.Record(2, r.policy, {0, 0}, 0, 0, [&] { return r.gpus; }).flagged);
  CHECK_FALSE(
      r.watch.Record(2, r.policy, {0, 0}, 0, 600 * kSecond, [&] { return r.gpus; }).flagged);
}

TEST_CASE("idle GPU watch: a reclaiming policy makes the job reclaimable after the warning") {
  Readings r;
  r.policy = Policy(/*reclaim=*/true, /*warning_s=*/30);
  CHECK(r.Both(0, 0).flagged == false);
  const IdleGpuWatch::Verdict flagged = r.Both(0, 60);
  CHECK(flagged.flagged);
  CHECK_FALSE(flagged.reclaimable);
  CHECK_FALSE(r.Both(0, 80).reclaimable);
  CHECK_FALSE(r.watch.AnyReclaimable());
  CHECK(r.Both(0, 90).reclaimable);
  CHECK(r.watch.Reclaimable(1));
  CHECK(r.watch.AnyReclaimable());
  CHECK(r.Both(50, 100).busy_again);
  CHECK_FALSE(r.watch.AnyReclaimable());
  // A policy that stops reclaiming takes the job out of the victims at its next reading.
  r.Both(0, 110);
  CHECK(r.Both(0, 170).flagged);
  CHECK(r.Both(0, 200).reclaimable);
  r.policy.reclaim = false;
  r.Both(0, 210);
  CHECK_FALSE(r.watch.Reclaimable(1));
  CHECK(r.watch.Flagged(1));
  // Without a warning period: flagged and reclaimable with one reading.
  Readings now;
  now.policy = Policy(true, 0);
  now.Both(0, 0);
  const IdleGpuWatch::Verdict at_once = now.Both(0, 60);
  CHECK(at_once.flagged);
  CHECK(at_once.reclaimable);
  now.watch.Forget(1);
  CHECK(now.watch.flagged_jobs() == 0);
  CHECK_FALSE(now.watch.AnyReclaimable());
}

v1::QueueSpec Queue(const std::string& name) {
  v1::QueueSpec spec;
  spec.set_name(name);
  return spec;
}

TEST_CASE("idle GPU rule: the nearest queue that sets a policy decides, exemption if allowed") {
  QueueTree tree;
  v1::QueueSpec org = Queue("org");
  org.mutable_idle_gpus()->set_below_pct(10);
  org.mutable_idle_gpus()->set_idle_for_s(600);
  org.mutable_idle_gpus()->set_reclaim(true);
  const QueueId org_id = *tree.Create(org);
  const QueueId team = *tree.Create(Queue("org/team"));
  v1::QueueSpec lab = Queue("org/lab");
  lab.mutable_idle_gpus()->set_below_pct(0);  // off for this subtree.
  const QueueId lab_id = *tree.Create(lab);
  v1::QueueSpec open = Queue("org/open");
  open.mutable_idle_gpus()->set_below_pct(5);
  open.mutable_idle_gpus()->set_idle_for_s(60);
  open.mutable_idle_gpus()->set_allow_exemption(true);
  const QueueId open_id = *tree.Create(open);
  const QueueId other = *tree.Create(Queue("other"));

  const IdleGpuRule inherited = ResolveIdleGpuRule(tree, team, false);
  CHECK(inherited.watched);
  CHECK(inherited.from == org_id);
  CHECK(inherited.policy.below_pct == 10);
  CHECK(inherited.policy.idle_for_us == 600 * kSecond);
  CHECK(inherited.policy.reclaim);
  // An exemption the policy does not allow is refused: still watched.
  const IdleGpuRule refused = ResolveIdleGpuRule(tree, team, true);
  CHECK(refused.watched);
  CHECK(refused.exemption_refused);
  CHECK_FALSE(ResolveIdleGpuRule(tree, lab_id, false).watched);
  CHECK(ResolveIdleGpuRule(tree, open_id, false).watched);
  CHECK_FALSE(ResolveIdleGpuRule(tree, open_id, true).watched);
  CHECK_FALSE(ResolveIdleGpuRule(tree, other, false).watched);
}

}  // namespace
}  // namespace tessera
