// Processes of the local backend's tasks: starting one in its own process group, reading
// /proc/<pid>/stat, and the record each task leaves in <state>/tasks/ so that a restarted host
// finds it again.
//
// A pid alone does not name a process across a restart (pids are reused), so a record also
// keeps the process's start time from /proc/<pid>/stat (clock ticks since boot); a process
// with that pid and a different start time is someone else.
//
// Only a process's parent can read its exit status, and after a restart of the host the task's
// parent is gone. So the task's first process is a small /bin/sh wrapper that runs the command
// in the foreground, writes its exit status to <stem>.exit beside the record, and exits with
// it: whoever watches the task then knows how it ended, parent or not. The wrapper traps
// SIGTERM, SIGINT and SIGHUP only to outlive the command (the command gets them at their
// defaults); SIGKILL ends it before it can write, and the status is then unknown.
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
// Removes the record and the exit status file of `ref`.
void RemoveTaskRecord(const std::string& dir, const v1::TaskRef& ref);

// <dir>/<stem>.exit, where the wrapper writes the task's exit status.
std::string ExitStatusPath(const std::string& dir, const v1::TaskRef& ref);
// The exit status the wrapper wrote to `path`: the command's exit code, or 128 + N when a signal
// N ended it. Nothing when there is no such file or it does not hold a number.
std::optional<int32_t> ReadExitStatus(const std::string& path);

struct ProcStat {
  char state = '?';  // R, S, D, Z (zombie), X (dead), ...
  pid_t pgid = 0;
  uint64_t start_ticks = 0;
};
// /proc/<pid>/stat, or nothing when the process does not exist.
std::optional<ProcStat> ReadProcStat(pid_t pid);

// Starts argv[0] (searched in the host's PATH, not in `env`'s) with exactly `env`
// ("NAME=value") under the wrapper, which leads a new process group and writes the exit status
// to `exit_status_path`; stdin from /dev/null, stdout and stderr appended to `log_path`, every
// signal at its default disposition and none blocked (whatever the host ignores or blocks).
// *pid is the wrapper's. Errors: INVALID_ARGUMENT when the command cannot be executed, INTERNAL
// otherwise.
plugin::PluginStatus SpawnTask(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env, const std::string& log_path,
                               const std::string& exit_status_path, pid_t* pid);

}  // namespace tessera::local
