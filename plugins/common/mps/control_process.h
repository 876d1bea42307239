// One run of the MPS control binary (`nvidia-cuda-mps-control`): found in PATH the way a shell
// would, started with an exact environment, fed its stdin, and waited for with a time limit.
//
// The control binary is both the daemon (`-d`, which forks into the background and returns)
// and its client (no arguments: it reads commands on stdin, one a line, and prints the answers).
// A client's output comes back through pipes. The `-d` run's output goes to a file instead: the
// daemon it leaves behind may keep the descriptors it inherited, and a pipe it holds would
// never reach end of file.
//
// Thread-safe: nothing is shared between runs. Children are reaped with waitpid on their own
// pid, so a host that reaps every child itself (SIGCHLD ignored, a waitpid(-1) loop) makes the
// exit status unknown (-1).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tessera/plugin/plugin.h"

namespace tessera::mps {

// `binary` as execvp would find it: a path with a '/' as given, otherwise the first executable
// file of that name in PATH (/usr/bin:/bin when PATH is unset). Nothing when there is none.
std::optional<std::string> FindControlBinary(const std::string& binary);

struct ControlRun {
  std::vector<std::string> args;  // after the binary's own name.
  std::vector<std::string> env;   // "NAME=value", exactly the child's environment.
  std::string stdin_text;         // written, then stdin is closed.
  std::chrono::milliseconds timeout{5000};
  // When set, stdout and stderr are appended to this file and not captured (the `-d` run).
  std::string output_file;
};

struct ControlResult {
  int exit_status = -1;    // the exit code; 128 + N when signal N ended it; -1 when unknown.
  bool timed_out = false;  // killed (SIGKILL) when `timeout` passed.
  std::string out;         // stdout, unless output_file was given.
  std::string err;         // stderr, unless output_file was given.
};

// Runs `binary` (a path, as FindControlBinary returns) once. Errors: INTERNAL when it cannot be
// started at all (a binary that runs and fails is an Ok status with its exit status).
plugin::PluginStatus RunControl(const std::string& binary, const ControlRun& run,
                                ControlResult* result);

// The host's environment with `overrides` set and the names in `removed` taken out.
std::vector<std::string> EnvironmentWith(const std::vector<std::string>& overrides,
                                         const std::vector<std::string>& removed);

}  // namespace tessera::mps
