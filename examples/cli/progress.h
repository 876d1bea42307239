// Progress of a long tessctl operation (a backup download, a restore) on stderr, so that stdout
// keeps only the result scripts read. On a terminal the line is redrawn in place as often as
// every 100 ms; otherwise (a log file, CI) a new line is written at most every 5 seconds. Nothing
// at all with `quiet`.
//
// Thread safety: one Progress per operation, on one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tessera::cli {

class Progress {
 public:
  Progress(std::string label, bool quiet);

  // Shows "<label>: <detail>" unless the last line is too recent.
  void Update(const std::string& detail);
  // Shows "<label>: <detail>" now and ends the line.
  void Finish(const std::string& detail);

 private:
  void Show(const std::string& detail, bool final);

  const std::string label_;
  const bool quiet_;
  const bool terminal_;
  std::chrono::steady_clock::time_point last_;
  bool shown_ = false;
};

// "40.0 MiB", "512 KiB", "100 B".
std::string HumanBytes(uint64_t bytes);

}  // namespace tessera::cli
