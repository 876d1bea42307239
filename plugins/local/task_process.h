// Processes of the local backend's tasks: starting one in its own process group, reading
// /proc/<pid>/stat, and the record each task leaves in <state>/tasks/ so that a restarted host
// finds it again.
//
// A pid alone does not name a process across a restart (pids are reused), so a record also
// keeps the process's start time from /proc/<pid>/stat (clock ticks since boot); a process
// with that pid and a different start time is someone else.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/plugin/plugin.h"

namespace tessera::local {

struct TaskRecord {
  v1::TaskRef ref;
  pid_t pid = 0;
  pid_t pgid = 0;
  uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22.
  int64_t started_us = 0;    // host clock at launch.
  std::string log_path;
};

// "<job>-<attempt>-<task>", the stem of a task's log and record file names.
std::string TaskStem(const v1::TaskRef& ref);

// Writes <dir>/<stem>.task atomically (write, then rename). Not fsynced: a record matters only
// while its process lives, and a machine crash ends both.
plugin::PluginStatus WriteTaskRecord(const std::string& dir, const TaskRecord& record);
// Every record in `dir`; unreadable ones are skipped and named in *problems.
std::vector<TaskRecord> ReadTaskRecords(const std::string& dir, std::vector<std::string>* problems);
void RemoveTaskRecord(const std::string& dir, const v1::TaskRef& ref);

struct ProcStat {
  char state = '?';  // R, S, D, Z (zombie), X (dead), ...
  pid_t pgid = 0;
  uint64_t start_ticks = 0;
};
// /proc/<pid>/stat, or nothing when the process does not exist.
std::optional<ProcStat> ReadProcStat(pid_t pid);

// Starts argv[0] (searched in the host's PATH, not in `env`'s) with exactly `env`
// ("NAME=value"), in a new process group it leads, stdin from /dev/null, stdout and stderr
// appended to `log_path`, every signal at its default disposition and none blocked (whatever the
// host ignores or blocks). Errors: INVALID_ARGUMENT when the command cannot be executed,
// INTERNAL otherwise.
plugin::PluginStatus SpawnTask(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env, const std::string& log_path,
                               pid_t* pid);

}  // namespace tessera::local
