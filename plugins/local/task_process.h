// Processes of the local backend's tasks: starting one in its own process group under a small
// wrapper, reading /proc/<pid>/stat, and the exit status file the wrapper writes. Where the
// records and those files live is task_journal.h's business.
//
// A pid alone does not name a process across a restart (pids are reused), so a record also
// keeps the process's start time from /proc/<pid>/stat (clock ticks since boot); a process
// with that pid and a different start time is someone else.
//
// Only a process's parent can read its exit status, and after a restart of the host the task's
// parent is gone. So the task's first process is a small /bin/sh wrapper that runs the command
// in the foreground, writes its exit status to a file, and exits with it: whoever watches the
// task then knows how it ended, parent or not. The file is written in place (no truncation, no
// new inode when it exists) with one fixed-width line, "<pid> <status>\n" as "%010d %03d\n", so
// that each write covers the last one whole and the file can be reused task after task; the
// pid (the wrapper's, which is the task's) tells this task's line from a former occupant's.
// The wrapper traps SIGTERM, SIGINT and SIGHUP only to outlive the command (the command gets
// them at their defaults); SIGKILL ends it before it can write, and the status is then unknown.
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
  int exit_slot = 0;         // which exit status file (task_journal.h).
  // The GPU share the task holds that a restarted backend must take back, one token: "-" for
  // none, "mps:<gpu>:<thread pct>:<pinned MiB>" for an MPS client, "vgpu:<gpu>:<device>" for a
  // vGPU device (its mdev UUID or VF address).
  std::string share = "-";
  std::string log_path;
};

// "<job>-<attempt>-<task>", the stem of a task's log file name.
std::string TaskStem(const v1::TaskRef& ref);

// Makes `path` hold a line no wrapper writes (creating it when missing), so that the next
// task's status is not confused with what was there. Errors: INTERNAL.
plugin::PluginStatus ResetExitStatus(const std::string& path);
// The exit status the wrapper of process `pid` wrote to `path`: the command's exit code, or
// 128 + N when a signal N ended it. Nothing when the file holds no status of that pid.
std::optional<int32_t> ReadExitStatus(const std::string& path, pid_t pid);

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
