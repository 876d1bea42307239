#include "scenario/shrinker.h"

#include <algorithm>

namespace tessera::scenario {

Shrunk Shrink(const Scenario& failing, const RunResult& failure, const RunOptions& options,
              int max_runs) {
  Shrunk best{failing, failure, 0};
  // Steps after the one where the violation was seen cannot be needed, except for the checks
  // at the end (every_job_finishes needs the scenario to settle, which it always does).
  if (failure.step >= 0 && failure.step + 1 < static_cast<int>(best.scenario.steps.size())) {
    Scenario cut = best.scenario;
    cut.steps.resize(failure.step + 1);
    const RunResult r = RunIsolated(cut, options);
    ++best.runs;
    if (!r.ok && r.violation.invariant == failure.violation.invariant) best = {cut, r, best.runs};
  }
  size_t chunk = std::max<size_t>(1, best.scenario.steps.size() / 2);
  while (best.runs < max_runs) {
    bool removed = false;
    for (size_t at = 0; at < best.scenario.steps.size() && best.runs < max_runs;) {
      Scenario trial = best.scenario;
      const size_t end = std::min(trial.steps.size(), at + chunk);
      trial.steps.erase(trial.steps.begin() + at, trial.steps.begin() + end);
      const RunResult r = RunIsolated(trial, options);
      ++best.runs;
      if (!r.ok && r.violation.invariant == failure.violation.invariant) {
        best.scenario = std::move(trial);
        best.result = r;
        removed = true;
      } else {
        at += chunk;
      }
    }
    if (chunk == 1 && !removed) break;
    if (!removed) chunk = std::max<size_t>(1, chunk / 2);
  }
  return best;
}

}  // namespace tessera::scenario
