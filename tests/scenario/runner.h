// Runner: plays a Scenario against a real Scheduler through its public API and runs the
// Checker after every step. In virtual time (a ManualClock) it also stops at every moment the
// scheduler has something to do (NextWakeupUs) between steps and checks there too, so a
// violation is reported at the first moment it is visible. After the last step it recovers
// every node and lets the cluster run dry, then checks that everything that could run did.
//
// RunIsolated runs the scenario in a child process, so a CHECK that aborts the scheduler, or a
// hang, is reported as a violation (no_check_fires, no_hang) instead of ending the test run.
#pragma once

#include <chrono>
#include <set>
#include <string>

#include "scenario/invariants.h"
#include "scenario/scenario.h"

namespace tessera::scenario {

enum class Clocking { kVirtual, kRealTime };

struct RunResult {
  bool ok = true;
  Violation violation;  // when !ok
  int step = -1;        // index of the step after which it was seen; steps.size() = at the end
  int64_t at_ms = 0;    // virtual (or real) time since the scenario began
  int submitted = 0;    // acknowledged submits
  int rejected = 0;     // submits the scheduler refused (a generator mistake if many)
  int checks = 0;       // times the checker ran

  std::string Describe() const;
};

struct RunOptions {
  Clocking clocking = Clocking::kVirtual;
  std::set<std::string> skipped_invariants;  // see Checker
  std::chrono::seconds timeout{8};           // RunIsolated: longer is a hang
  bool trace = false;                        // print every event as the checker reads it
};

RunResult RunScenario(const Scenario& scenario, const RunOptions& options = {});

RunResult RunIsolated(const Scenario& scenario, const RunOptions& options = {});

}  // namespace tessera::scenario
