// The fake `nvidia-cuda-mps-control`'s daemon state and its command language: what the real
// control daemon keeps (its defaults, its servers and their settings) and how it answers the
// commands of NVIDIA's tools reference (nvidia-cuda-mps-control(1), backends-reference.md
// section 4), one line in, one answer out.
//
// Commands: get_server_list, get_server_status <PID>, start_server -uid <UID>,
// shutdown_server <PID> [-f], get_client_list <PID>, set_default_active_thread_percentage <pct>,
// get_default_active_thread_percentage, set_active_thread_percentage <PID> <pct>,
// get_active_thread_percentage <PID>, set_default_device_pinned_mem_limit <dev> <value>,
// get_default_device_pinned_mem_limit <dev>, set_device_pinned_mem_limit <PID> <dev> <value>,
// get_device_pinned_mem_limit <PID> <dev>, quit. A percentage is a number in (0, 100]; a
// memory value an integer followed by G or M, as the reference says; a device an ordinal
// among the daemon's CUDA_VISIBLE_DEVICES or a UUID there (or its prefix, as CUDA accepts).
// Percentages are answered as "%.1f" ("100.0", as third-party transcripts of the real tool
// show); the default is 100.
//
// Where it differs from the real daemon:
//   - there are no GPUs and no CUDA: servers exist only when `start_server -uid` makes one
//     (a real daemon starts one for its first client), their PIDs are numbers the fake makes up
//     (the daemon's PID + 1, + 2, ...; no process has them), and they never have clients, so
//     get_client_list answers nothing for a known server;
//   - NVIDIA does not document the text of refusals. The fake answers "Unknown command: <line>",
//     "Invalid <what>: <value>" (percentage, memory limit value, device, PID), "Server <PID> not
//     found", "Usage: <command> <arguments>" for a wrong argument count, and "A server for user
//     <UID> already exists": its own wording;
//   - set_default_active_thread_percentage and set_active_thread_percentage echo the value as
//     set ("25.0"); the other set commands, start_server, shutdown_server and quit answer
//     nothing; get_*_device_pinned_mem_limit answers the value as it was set ("8192M", "2G") or
//     "0" when none is (the real format is not documented);
//   - shutdown_server ends a server at once, with or without -f;
//   - a test may name one command the daemon refuses (TESSERA_FAKE_MPS_REFUSE, read by
//     fake_mps_control.cc); a real daemon refuses only what is wrong.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace tessera::fake_mps {

struct Server {
  pid_t pid = 0;
  long uid = 0;
  double active_thread_pct = 100.0;
  std::map<std::string, std::string> pinned_mem_limit;  // by device as named (canonical: ordinal).
};

class DaemonState {
 public:
  // `pid`: the daemon's; `devices`: its CUDA_VISIBLE_DEVICES entries (ordinal = position);
  // `refused`: a command word answered "Refused: <line>" and otherwise ignored, for tests of
  // a daemon that says no ("" for none).
  DaemonState(pid_t pid, std::vector<std::string> devices, std::string refused = "");

  // One command line (no newline) → the answer (possibly empty; each line ends in '\n'). Sets
  // *quit for `quit`.
  std::string Execute(const std::string& line, bool* quit);

  // The state as JSON, for tests: {"pid", "running", "visible_devices",
  // "default_active_thread_percentage", "default_device_pinned_mem_limit": {"0": "8192M"},
  // "servers": [{"pid", "uid", "active_thread_percentage", "device_pinned_mem_limit"}],
  // "commands": [every line received, in order]}.
  std::string ToJson(bool running) const;

 private:
  // The canonical name (the ordinal, as a string) of device `name`, or "" when there is none.
  std::string Device(const std::string& name) const;
  Server* FindServer(const std::string& pid_text);

  pid_t pid_;
  std::vector<std::string> devices_;
  std::string refused_;
  double default_active_thread_pct_ = 100.0;
  std::map<std::string, std::string> default_pinned_mem_limit_;
  std::vector<Server> servers_;
  pid_t next_server_pid_;
  std::vector<std::string> commands_;
};

}  // namespace tessera::fake_mps
