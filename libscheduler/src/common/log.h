// Log: the library's log lines, written to the sink of the scheduler they concern
// (Options::log, tessera/logging.h), formatted only when the level lets them through.
//
//   LogWarning(options_.log, "plugin '{}' has no {}", name, what);
//
// Every component that logs holds the LogOptions of its scheduler (a copy: the sink is a
// std::function), so two schedulers in one process never share a sink. Nothing here writes to
// stdout; the fallback for an empty sink is stderr.
#pragma once

#include <spdlog/fmt/fmt.h>

#include <string_view>
#include <utility>

#include "tessera/logging.h"

namespace tessera {

// Hands one formatted line to `log`'s sink, or to stderr when it has none. Thread-safe.
void WriteLog(const LogOptions& log, LogLevel level, std::string_view message);

inline bool LogEnabled(const LogOptions& log, LogLevel level) {
  return level != LogLevel::kOff && level >= log.level;
}

template <typename... Args>
void Log(const LogOptions& log, LogLevel level, fmt::format_string<Args...> format,
         Args&&... args) {
  if (!LogEnabled(log, level)) return;
  WriteLog(log, level, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void LogDebug(const LogOptions& log, fmt::format_string<Args...> format, Args&&... args) {
  Log(log, LogLevel::kDebug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void LogInfo(const LogOptions& log, fmt::format_string<Args...> format, Args&&... args) {
  Log(log, LogLevel::kInfo, format, std::forward<Args>(args)...);
}
template <typename... Args>
void LogWarning(const LogOptions& log, fmt::format_string<Args...> format, Args&&... args) {
  Log(log, LogLevel::kWarning, format, std::forward<Args>(args)...);
}
template <typename... Args>
void LogError(const LogOptions& log, fmt::format_string<Args...> format, Args&&... args) {
  Log(log, LogLevel::kError, format, std::forward<Args>(args)...);
}

}  // namespace tessera
