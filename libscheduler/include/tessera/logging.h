// Logging: where the library's log lines go. Each Scheduler writes what it notices (a store write
// that failed and is retried, a plugin restarted, a GPU re-partitioned) to the sink in its
// Options::log, never to stdout, so a host routes the lines into its own logging:
//
//   options.log.level = tessera::LogLevel::kWarning;
//   options.log.sink = [](tessera::LogLevel level, std::string_view message) {
//     my_logger.Write(tessera::LogLevelName(level), message);  // whatever the host uses
//   };
//
// Two schedulers in one process each write to their own sink. With no sink, lines go to stderr
// as "[2026-01-31 12:00:00.123] [tessera] [warning] message".
//
// Thread safety: the sink is called from the library's threads (the decision thread, the store
// writer, plugin threads), possibly several at once: it must be thread-safe, should return
// quickly, and must not call the Scheduler (a call may wait for the thread that is logging).
#pragma once

#include <functional>
#include <string_view>

#include "tessera/export.h"

namespace tessera {

// In increasing order of severity; a sink gets the lines at or above LogOptions::level.
enum class LogLevel {
  kDebug,    // what a plugin says at its debug level; detail for tracing a problem.
  kInfo,     // a notable change: a plugin restarted, a GPU re-partitioned, decisions resumed.
  kWarning,  // something went wrong and the library works around it (telemetry dropped).
  kError,    // something went wrong that needs a person: a store write failing, a plugin down.
  kOff,      // as LogOptions::level: no lines at all.
};

// "debug", "info", "warning", "error" or "off".
TESSERA_EXPORT std::string_view LogLevelName(LogLevel level);

// Receives one line: its level and its text (no trailing newline). The text is only valid during
// the call.
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

struct LogOptions {
  // Lines below this level are dropped before they are formatted.
  LogLevel level = LogLevel::kInfo;
  // Where lines go; empty means stderr.
  LogSink sink;
};

}  // namespace tessera
