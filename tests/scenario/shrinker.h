// Shrinker: from a scenario that breaks an invariant, a smaller one that breaks the same
// invariant, by removing steps (halves, then quarters, ... then single steps, as delta debugging
// does) and keeping every removal after which the violation remains. The result is usually a
// handful of steps: the reproduction a report prints and a regression test keeps.
#pragma once

#include "scenario/runner.h"
#include "scenario/scenario.h"

namespace tessera::scenario {

struct Shrunk {
  Scenario scenario;
  RunResult result;  // the violation of the shrunk scenario
  int runs = 0;      // scenarios tried
};

Shrunk Shrink(const Scenario& failing, const RunResult& failure, const RunOptions& options,
              int max_runs = 400);

}  // namespace tessera::scenario
