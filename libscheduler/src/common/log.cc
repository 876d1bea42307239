#include "common/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace tessera {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "unknown";
}

namespace {

// "[2026-01-31 12:00:00.123] [tessera] [warning] message\n", in one write so that lines from
// several threads do not interleave. Local time, as spdlog's default pattern has it.
void WriteToStderr(LogLevel level, std::string_view message) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm local{};
  localtime_r(&seconds, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
  const std::string line =
      fmt::format("[{}.{:03}] [tessera] [{}] {}\n", stamp, millis, LogLevelName(level), message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace

void WriteLog(const LogOptions& log, LogLevel level, std::string_view message) {
  if (!log.sink) {
    WriteToStderr(level, message);
    return;
  }
  // No exception crosses into the library's threads: a sink that throws loses its line to stderr.
  try {
    log.sink(level, message);
  } catch (...) {
    WriteToStderr(level, message);
  }
}

}  // namespace tessera
