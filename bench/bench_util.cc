// Implementation of the shared benchmark plumbing declared in bench_util.h.
#include "bench_util.h"

#include <malloc.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace tessera::bench {
namespace {

// Progress lines show time since the program started, so long phases can be told apart.
const std::chrono::steady_clock::time_point kProgramStart = std::chrono::steady_clock::now();

std::string FormatValue(const Json& value) {
  if (value.is_number_float()) {
    char buffer[64];
    const double v = value.get<double>();
    std::snprintf(buffer, sizeof(buffer), std::fabs(v) >= 100 ? "%.1f" : "%.3f", v);
    return buffer;
  }
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

}  // namespace

int64_t TrimmedRssBytes() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0;
  int64_t resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

double PeakRssMib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux.
}

double ThreadCpuSeconds(const std::string& thread_name) {
  double seconds = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name != thread_name) continue;
    std::ifstream stat_file(task.path() / "stat");
    std::string stat;
    std::getline(stat_file, stat);
    // Fields after the parenthesised name (which may hold spaces): state is field 3, utime and
    // stime fields 14 and 15, in clock ticks.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    int64_t utime = 0;
    int64_t stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14) utime = std::stoll(field);
      if (i == 15) stime = std::stoll(field);
    }
    seconds += static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return seconds;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Json Summarize(const std::vector<Json>& runs, const std::string& headline) {
  if (runs.empty()) return Json::object();
  Json summary = Json::object();
  for (const auto& [key, first] : runs.front().items()) {
    if (!first.is_number() || first.is_boolean()) {
      summary[key] = first;
      continue;
    }
    std::vector<double> values;
    bool all_integers = true;
    for (const Json& run : runs) {
      const Json& v = run.at(key);
      values.push_back(v.get<double>());
      all_integers = all_integers && v.is_number_integer();
    }
    const double median = Median(values);
    if (all_integers && median == std::floor(median)) {
      summary[key] = static_cast<int64_t>(median);
    } else {
      summary[key] = median;
    }
  }
  summary["runs"] = runs.size();
  Json per_run = Json::array();
  for (const Json& run : runs) per_run.push_back(run.value(headline, Json()));
  summary[headline + "_runs"] = per_run;
  return summary;
}

void EmitJsonLine(const Json& result) {
  std::cout << result.dump() << '\n';
  std::cout.flush();
}

void PrintTable(const Json& result, const std::vector<std::string>& fields) {
  size_t width = 0;
  for (const std::string& f : fields) width = std::max(width, f.size());
  std::cerr << "== " << result.value("benchmark", std::string("?")) << " ("
            << result.value("runs", 0) << " run(s), medians)\n";
  for (const std::string& f : fields) {
    if (!result.contains(f)) continue;
    std::cerr << "  " << f << std::string(width - f.size() + 2, ' ') << FormatValue(result.at(f))
              << '\n';
  }
}

void Progress(const std::string& message) {
  const double t =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - kProgramStart).count();
  char prefix[48];
  std::snprintf(prefix, sizeof(prefix), "[tessera-bench +%.1fs] ", t);
  std::cerr << prefix << message << std::endl;
}

ScratchDir::ScratchDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed for '" + pattern + "'");
  }
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string BuildPluginsDir() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "plugins")
      .string();
}

int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

std::string DecisionLogPath(const std::string& path, int run, int repeat) {
  return repeat == 1 ? path : path + "." + std::to_string(run);
}

}  // namespace tessera::bench
