#include "mps/mps_daemon.h"

#include <signal.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "mps/control_process.h"

namespace tessera::mps {
namespace {

using plugin::PluginStatus;
using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::milliseconds(20);
constexpr size_t kLogTailLines = 20;

struct ProcessState {
  char state = '?';
  uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22.
};

std::optional<ProcessState> ReadProcessState(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  // "pid (comm) state ...": comm may hold spaces and parentheses; count from the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string field; fields >> field;) f.push_back(field);
  if (f.size() < 20) return std::nullopt;  // f[n - 3] is field n.
  ProcessState state;
  state.state = f[0].empty() ? '?' : f[0][0];
  state.start_ticks = std::strtoull(f[22 - 3].c_str(), nullptr, 10);
  return state;
}

std::string ReadFileFrom(const std::string& path, std::streamoff offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(offset);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::streamoff FileSize(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<std::streamoff>(size);
}

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.pop_back();
  }
  size_t begin = 0;
  while (begin < text.size() && (text[begin] == '\n' || text[begin] == ' ')) ++begin;
  return text.substr(begin);
}

// The last `count` lines of `text`, joined by " | " to keep a status message on one line.
std::string LastLines(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!Trimmed(line).empty()) lines.push_back(Trimmed(line));
  }
  std::string joined;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) {
    joined += (joined.empty() ? "" : " | ") + lines[i];
  }
  return joined;
}

// The device as the daemon's commands name it: its UUID when that is what CUDA_VISIBLE_DEVICES
// holds, else ordinal 0, the only device a daemon started with one visible GPU has. (Whether an
// ordinal here counts before or after the server renumbers is not documented; a UUID avoids the
// question, which is one more reason to give one.)
std::string CommandDevice(const std::string& device) {
  return device.rfind("GPU-", 0) == 0 ? device : "0";
}

}  // namespace

MpsDaemon::MpsDaemon(MpsDaemonOptions options) : options_(std::move(options)) {}

PluginStatus MpsDaemon::FindBinary(std::string* path) const {
  if (std::optional<std::string> found = FindControlBinary(options_.control_binary)) {
    *path = *found;
    return PluginStatus::Ok();
  }
  if (options_.control_binary.find('/') != std::string::npos) {
    return PluginStatus::Error(TESSERA_NOT_FOUND, "MPS control binary " + options_.control_binary +
                                                      ": no such executable file");
  }
  const char* search = std::getenv("PATH");
  return PluginStatus::Error(
      TESSERA_NOT_FOUND,
      "MPS control binary " + options_.control_binary + ": not found in PATH (" +
          (search != nullptr && *search != '\0' ? search : "/usr/bin:/bin") +
          "); install the NVIDIA driver's CUDA MPS tools or name the binary's path");
}

PluginStatus MpsDaemon::Command(const std::string& line, std::string* answer) const {
  answer->clear();
  if (line.find('\n') != std::string::npos) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT, "MPS command: one line, no newline");
  }
  std::string binary;
  PluginStatus status = FindBinary(&binary);
  if (!status.ok()) return status;
  ControlRun run;
  run.env = EnvironmentWith({"CUDA_MPS_PIPE_DIRECTORY=" + options_.pipe_dir,
                             "CUDA_MPS_LOG_DIRECTORY=" + options_.log_dir},
                            {});
  run.stdin_text = line + "\n";
  run.timeout = options_.command_timeout;
  ControlResult result;
  status = RunControl(binary, run, &result);
  if (!status.ok()) return status;
  if (result.timed_out) {
    return PluginStatus::Error(TESSERA_UNAVAILABLE,
                               "MPS control daemon on " + options_.pipe_dir + " did not answer '" +
                                   line + "' within " +
                                   std::to_string(options_.command_timeout.count()) + " ms");
  }
  if (result.exit_status != 0) {
    std::string said = Trimmed(result.err + (result.err.empty() ? "" : " ") + result.out);
    return PluginStatus::Error(TESSERA_UNAVAILABLE,
                               options_.control_binary + " '" + line + "' on " + options_.pipe_dir +
                                   " exited with status " + std::to_string(result.exit_status) +
                                   (said.empty() ? "" : ": " + said));
  }
  *answer = std::move(result.out);
  return PluginStatus::Ok();
}

std::string MpsDaemon::Diagnostics(const std::string& start_output) const {
  std::string text;
  const std::string started = Trimmed(start_output);
  if (!started.empty()) text += "; `" + options_.control_binary + " -d` printed: " + started;
  const std::string log_path = options_.log_dir + "/control.log";
  const std::string log = LastLines(ReadFileFrom(log_path, 0), kLogTailLines);
  text += log.empty() ? "; " + log_path + " is empty or missing" : "; " + log_path + ": " + log;
  return text;
}

bool MpsDaemon::RecordDaemonProcess() {
  std::ifstream in(options_.pipe_dir + "/" + kPidFileName);
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return false;
  const std::optional<ProcessState> state = ReadProcessState(static_cast<pid_t>(pid));
  if (!state || state->state == 'Z' || state->state == 'X') return false;
  pid_ = static_cast<pid_t>(pid);
  start_ticks_ = state->start_ticks;
  return true;
}

PluginStatus MpsDaemon::WaitUntilAnswering(const std::string& start_output) {
  const Clock::time_point deadline = Clock::now() + options_.start_timeout;
  PluginStatus last;
  while (true) {
    std::string answer;
    last = Command("get_server_list", &answer);
    if (last.ok() && RecordDaemonProcess()) return PluginStatus::Ok();
    if (last.code == TESSERA_NOT_FOUND || last.code == TESSERA_INTERNAL) return last;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  const std::string why =
      last.ok() ? "it answers but left no readable " + std::string(kPidFileName) + " there"
                : "the last try said: " + last.message;
  return PluginStatus::Error(TESSERA_UNAVAILABLE,
                             "MPS control daemon for " + options_.device + " on " +
                                 options_.pipe_dir + " did not come up within " +
                                 std::to_string(options_.start_timeout.count()) + " ms (" + why +
                                 ")" + Diagnostics(start_output));
}

PluginStatus MpsDaemon::ApplyDefaults() {
  // Set even when 100%: an adopted daemon may hold another instance's default.
  const std::string set_pct =
      "set_default_active_thread_percentage " + std::to_string(options_.defaults.active_thread_pct);
  std::string answer;
  PluginStatus status = Command(set_pct, &answer);
  if (!status.ok()) return status;
  std::string readback;
  status = Command("get_default_active_thread_percentage", &readback);
  if (!status.ok()) return status;
  const std::optional<double> pct = ParseThreadPercentage(readback);
  if (!pct || std::fabs(*pct - options_.defaults.active_thread_pct) > 0.05) {
    return PluginStatus::Error(
        TESSERA_UNAVAILABLE, "MPS control daemon on " + options_.pipe_dir + " refused '" + set_pct +
                                 "' (it answered '" + Trimmed(answer) +
                                 "'; get_default_active_thread_percentage says '" +
                                 Trimmed(readback) + "')");
  }
  if (options_.defaults.pinned_memory_mib > 0) {
    const std::string device = CommandDevice(options_.device);
    const std::string set_memory = "set_default_device_pinned_mem_limit " + device + " " +
                                   PinnedMemoryValue(options_.defaults.pinned_memory_mib);
    status = Command(set_memory, &answer);
    if (!status.ok()) return status;
    status = Command("get_default_device_pinned_mem_limit " + device, &readback);
    if (!status.ok()) return status;
    // The answer's format is not documented: a value read that differs is a refusal; one that
    // cannot be read is taken as set.
    const std::optional<int64_t> mib = ParsePinnedMemoryMib(readback);
    if (mib && *mib != options_.defaults.pinned_memory_mib) {
      return PluginStatus::Error(TESSERA_UNAVAILABLE,
                                 "MPS control daemon on " + options_.pipe_dir + " refused '" +
                                     set_memory + "' (it answered '" + Trimmed(answer) +
                                     "'; get_default_device_pinned_mem_limit says '" +
                                     Trimmed(readback) + "')");
    }
  }
  return PluginStatus::Ok();
}

PluginStatus MpsDaemon::Start() {
  if (options_.device.empty() || options_.pipe_dir.empty() || options_.log_dir.empty()) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                               "MPS daemon: device, pipe_dir and log_dir are required");
  }
  PluginStatus status = CheckLimits(options_.defaults, "MPS daemon defaults");
  if (!status.ok()) return status;
  const std::string socket = options_.pipe_dir + "/" + kControlSocketName;
  if (socket.size() > kMaxSocketPath) {
    return PluginStatus::Error(TESSERA_INVALID_ARGUMENT,
                               "MPS pipe directory " + options_.pipe_dir + ": its socket " +
                                   socket + " is " + std::to_string(socket.size()) +
                                   " bytes, over the " + std::to_string(kMaxSocketPath) +
                                   "-byte limit of a Unix socket path; choose a shorter directory");
  }
  std::string binary;
  status = FindBinary(&binary);
  if (!status.ok()) return status;
  for (const std::string& dir : {options_.pipe_dir, options_.log_dir}) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) {
      return PluginStatus::Error(TESSERA_INTERNAL, "cannot create " + dir + ": " + error.message());
    }
  }

  pid_ = 0;
  adopted_ = false;
  std::string answer;
  if (Command("get_server_list", &answer).ok()) {
    if (!options_.adopt_running) {
      RecordDaemonProcess();
      const pid_t other = pid_;
      pid_ = 0;  // not ours: Alive() and Stop() leave it alone.
      return PluginStatus::Error(TESSERA_ALREADY_EXISTS,
                                 "an MPS control daemon" +
                                     (other > 0 ? " (pid " + std::to_string(other) + ")" : "") +
                                     " already answers on " + options_.pipe_dir);
    }
    status = WaitUntilAnswering("");
    if (!status.ok()) return status;
    adopted_ = true;
    return ApplyDefaultsOrStop();
  }

  ControlRun run;
  run.args = {"-d"};
  // The daemon's defaults are set by command, never inherited from the host's environment.
  run.env = EnvironmentWith(
      {"CUDA_MPS_PIPE_DIRECTORY=" + options_.pipe_dir, "CUDA_MPS_LOG_DIRECTORY=" + options_.log_dir,
       "CUDA_VISIBLE_DEVICES=" + options_.device},
      {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"});
  run.timeout = options_.start_timeout;
  run.output_file = options_.log_dir + "/" + kStartOutputFileName;
  const std::streamoff before = FileSize(run.output_file);
  ControlResult result;
  status = RunControl(binary, run, &result);
  if (!status.ok()) return status;
  const std::string start_output = ReadFileFrom(run.output_file, before);
  if (result.timed_out || result.exit_status != 0) {
    return PluginStatus::Error(
        TESSERA_UNAVAILABLE,
        "`" + options_.control_binary + " -d` for " + options_.device + " on " + options_.pipe_dir +
            (result.timed_out ? " did not return within " +
                                    std::to_string(options_.start_timeout.count()) + " ms"
                              : " exited with status " + std::to_string(result.exit_status)) +
            Diagnostics(start_output));
  }
  status = WaitUntilAnswering(start_output);
  if (!status.ok()) return status;
  return ApplyDefaultsOrStop();
}

PluginStatus MpsDaemon::ApplyDefaultsOrStop() {
  const PluginStatus applied = ApplyDefaults();
  if (applied.ok()) return applied;
  // A daemon without its ceiling would admit clients to more than the GPU allows: none is
  // better, and the caller's next start tries again.
  const PluginStatus stopped = Stop();
  if (stopped.ok()) return applied;
  return PluginStatus::Error(applied.code, applied.message + "; stopping it: " + stopped.message);
}

PluginStatus MpsDaemon::Stop() {
  if (!Alive()) {
    pid_ = 0;
    return PluginStatus::Ok();
  }
  std::string answer;
  const PluginStatus quit = Command("quit", &answer);
  const Clock::time_point deadline = Clock::now() + options_.stop_timeout;
  while (Alive() && Clock::now() < deadline) std::this_thread::sleep_for(kPollInterval);
  if (!Alive()) {
    pid_ = 0;
    return PluginStatus::Ok();
  }
  ::kill(pid_, SIGKILL);
  const pid_t killed = pid_;
  const Clock::time_point kill_deadline = Clock::now() + std::chrono::seconds(2);
  while (Alive() && Clock::now() < kill_deadline) std::this_thread::sleep_for(kPollInterval);
  pid_ = 0;
  return PluginStatus::Error(
      TESSERA_UNAVAILABLE,
      "MPS control daemon " + std::to_string(killed) + " on " + options_.pipe_dir +
          (quit.ok() ? " did not exit within " + std::to_string(options_.stop_timeout.count()) +
                           " ms of quit"
                     : " could not be sent quit (" + quit.message + ")") +
          "; killed");
}

bool MpsDaemon::Alive() const {
  if (pid_ <= 0) return false;
  const std::optional<ProcessState> state = ReadProcessState(pid_);
  return state && state->state != 'Z' && state->state != 'X' && state->start_ticks == start_ticks_;
}

}  // namespace tessera::mps
