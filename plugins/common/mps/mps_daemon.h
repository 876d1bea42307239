// MpsDaemon: one CUDA MPS control daemon for one GPU, with a pipe and a log directory of its
// own (backends-reference.md section 4).
//
// Start() runs `nvidia-cuda-mps-control -d` with CUDA_MPS_PIPE_DIRECTORY, CUDA_MPS_LOG_DIRECTORY
// and CUDA_VISIBLE_DEVICES (the GPU, by UUID where known: the server renumbers devices, so a
// client that named the host's index would name a device the server does not have) set, as
// NVIDIA's k8s device plugin does per resource, then waits until the daemon answers a
// `get_server_list`, sets the defaults it was given and reads them back. The `-d` process forks
// the daemon and returns; the daemon writes its PID to <pipe_dir>/nvidia-cuda-mps-control.pid
// (NVIDIA's tools reference), which is how Alive() finds it: by that PID and the process's
// start time in /proc, so a reused PID is not mistaken for it.
//
// A daemon already answering on the pipe directory when Start() runs is one an earlier
// instance of the backend left running (Shutdown leaves tasks, and so their daemon, running):
// it is adopted, its defaults set again. A second daemon on one pipe directory is what the
// real tool refuses ("An instance of this daemon is already running"), and so does Start()
// when adopt_running is false.
//
// The daemon's defaults are the ceiling for every client on the GPU; each client's own share
// is set in its environment (mps_limits.h says why).
//
// Not thread-safe: the caller serialises calls (MpsManager's caller holds its own mutex). The
// object does not stop the daemon when destroyed; Stop() does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mps/mps_limits.h"
#include "tessera/plugin/plugin.h"

namespace tessera::mps {

inline constexpr char kDefaultControlBinary[] = "nvidia-cuda-mps-control";
// Written by the control daemon in its pipe directory; holds its PID.
inline constexpr char kPidFileName[] = "nvidia-cuda-mps-control.pid";
// The socket clients connect to, in the pipe directory.
inline constexpr char kControlSocketName[] = "control";
// What the `-d` run printed, appended in the log directory (the daemon's own log is
// control.log there).
inline constexpr char kStartOutputFileName[] = "tessera-mps-start.log";
// sun_path holds 108 bytes with its terminator: a longer <pipe_dir>/control cannot be bound,
// and the real daemon then exits saying only that no daemon can be found.
inline constexpr size_t kMaxSocketPath = 107;

struct MpsDaemonOptions {
  // The control binary: a path, or a name looked up in PATH. Default: nvidia-cuda-mps-control.
  std::string control_binary = kDefaultControlBinary;
  // CUDA_VISIBLE_DEVICES for the daemon: the GPU's UUID ("GPU-...", preferred) or its index.
  // Required.
  std::string device;
  // The daemon's pipe directory (sockets, pipes, its PID file) and log directory (control.log);
  // created when missing. Required, and this daemon's alone.
  std::string pipe_dir;
  std::string log_dir;
  // The GPU-wide ceiling: set with set_default_active_thread_percentage and
  // set_default_device_pinned_mem_limit (device 0, the only one the daemon sees) when narrower
  // than 100% / no limit. Servers started afterwards apply them to every client.
  MpsLimits defaults;
  // Adopt a daemon already answering on pipe_dir (true), or refuse it (ALREADY_EXISTS).
  bool adopt_running = true;
  // How long Start() waits for the daemon to answer, and each command for its answer.
  std::chrono::milliseconds start_timeout{10000};
  std::chrono::milliseconds command_timeout{5000};
  // How long Stop() waits for the daemon to exit after `quit` before killing it.
  std::chrono::milliseconds stop_timeout{10000};
};

class MpsDaemon {
 public:
  explicit MpsDaemon(MpsDaemonOptions options);
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;

  // Starts (or adopts) the daemon and sets its defaults. Errors:
  //   INVALID_ARGUMENT: a required option missing, defaults out of range, a pipe directory
  //     too long for a Unix socket;
  //   NOT_FOUND: no control binary (named, with the PATH searched);
  //   ALREADY_EXISTS: a daemon answers on pipe_dir and adopt_running is false;
  //   UNAVAILABLE: the daemon did not start or answer in start_timeout (what `-d` printed and
  //     the end of control.log in the message), or refused a default (it is then stopped: a
  //     daemon without its ceiling is worse than none);
  //   INTERNAL: the directories cannot be made, the binary cannot be run.
  [[nodiscard]] plugin::PluginStatus Start();

  // Sends one command line (no newline) through the control binary's client mode and puts its
  // stdout in *answer. Errors: INVALID_ARGUMENT for a line with a newline; UNAVAILABLE when the
  // client exits non-zero (no daemon: its message is in the status) or times out; NOT_FOUND /
  // INTERNAL as for Start(). A command the daemon refuses is answered on stdout, so callers
  // that set something read it back (the tool's exit status is not documented to say).
  [[nodiscard]] plugin::PluginStatus Command(const std::string& line, std::string* answer) const;

  // Sends `quit` and waits for the daemon to exit; kills it (SIGKILL) after stop_timeout.
  // Ok when no daemon was running. Errors: UNAVAILABLE when it had to be killed, or `quit`
  // could not be sent to a daemon that is alive.
  [[nodiscard]] plugin::PluginStatus Stop();

  // Whether the daemon Start() found is still running (not a zombie, same start time). False
  // before Start() and after Stop() or a crash.
  bool Alive() const;
  // The daemon's PID, from its PID file at Start(); 0 before.
  pid_t pid() const { return pid_; }
  // Whether Start() adopted a daemon that was already running.
  bool adopted() const { return adopted_; }
  const MpsDaemonOptions& options() const { return options_; }

 private:
  plugin::PluginStatus FindBinary(std::string* path) const;
  plugin::PluginStatus WaitUntilAnswering(const std::string& start_output);
  plugin::PluginStatus ApplyDefaults();
  plugin::PluginStatus ApplyDefaultsOrStop();
  bool RecordDaemonProcess();
  std::string Diagnostics(const std::string& start_output) const;

  MpsDaemonOptions options_;
  pid_t pid_ = 0;
  uint64_t start_ticks_ = 0;
  bool adopted_ = false;
};

}  // namespace tessera::mps
