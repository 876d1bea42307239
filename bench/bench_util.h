// Shared plumbing for tessera-bench: timers, memory readings, medians over repeats, the JSON
// result line on stdout, the human table and progress lines on stderr, and scratch directories.
//
// Every benchmark produces one nlohmann::json object per repeat; Summarize folds them into the
// single line that is printed, so that all benchmarks report repeats the same way.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "percentile.h"
#include "stopwatch.h"

namespace tessera::bench {

using Json = nlohmann::json;

// Options every benchmark takes.
struct CommonFlags {
  int repeat = 3;
  uint64_t seed = 1;
};

// Wall-clock interval and nearest-rank percentile, shared with tessera-replay (replay/).
using replay::Percentile;
using replay::Stopwatch;

// Resident set size in bytes, read from /proc/self/statm after malloc_trim(0) so that memory
// the allocator merely keeps cached is returned first. Still an upper bound on what the
// measured objects need: allocator fragmentation and SQLite's page cache are included.
int64_t TrimmedRssBytes();

// Peak resident set size of this process so far, in MiB (getrusage ru_maxrss).
double PeakRssMib();

// CPU seconds (user + system) used so far by this process's threads named `thread_name` (as
// pthread_setname_np set it), summed; 0 when none exists. Read from /proc/self/task, so it tells
// which thread a benchmark saturates.
double ThreadCpuSeconds(const std::string& thread_name);

// Median of `values` (mean of the middle two for an even count); 0 for an empty vector.
double Median(std::vector<double> values);

// Folds the per-repeat results into one line: every numeric field becomes the median over the
// runs (integers stay integers when the median is whole), other fields are taken from the first
// run, "runs" is the number of runs, and "<headline>_runs" lists the headline field of each run
// so that noise is visible.
Json Summarize(const std::vector<Json>& runs, const std::string& headline);

// Writes `result` as one line on stdout and flushes, so a reader of a pipe sees it at once.
void EmitJsonLine(const Json& result);

// Writes a two-column "field  value" table of `fields` from `result` to stderr.
void PrintTable(const Json& result, const std::vector<std::string>& fields);

// A progress line on stderr, prefixed with the benchmark name and seconds since start.
void Progress(const std::string& message);

// Where run `run` of `repeat` writes a --decision-log: `path` for a single run, else path.run.
std::string DecisionLogPath(const std::string& path, int run, int repeat);

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The plugins directory of the build this program belongs to (<build>/plugins, beside bench/).
std::string BuildPluginsDir();

// Size of a file in bytes, or 0 when it does not exist.
int64_t FileBytes(const std::string& path);

}  // namespace tessera::bench
