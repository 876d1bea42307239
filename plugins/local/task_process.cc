#include "task_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::local {
namespace {

// $0 is the name ps shows, $1 the exit status file, the rest the command. The status line goes
// over the file's first bytes through <> (read-write, neither truncating nor appending), in one
// write of the printf builtin. A trapped signal (not
// an ignored one) is reset to its default in the command, and the trap runs only once the
// foreground command has ended, so the wrapper outlives the command and records how it ended.
// A signal that reaches the wrapper before the command has started (a stop sent just after the
// launch) would otherwise be lost, and the command run to its end or its kill: the trap notes
// it, and the command is then not started, the wrapper ending as the signal would have ended
// it (128 + its number). The window left is between that check and the command's exec.
constexpr const char* kWrapperScript =
    "f=$1; shift; early=; trap 'early=143' TERM; trap 'early=130' INT; trap 'early=129' HUP; "
    "if [ -n \"$early\" ]; then code=$early; else \"$@\"; code=$?; fi; "
    "printf '%010d %03d\\n' \"$$\" \"$code\" 1<>\"$f\"; exit \"$code\"";

// The wrapper's line: ten digits of pid, a space, three of status, a newline.
constexpr size_t kExitLineSize = 15;
// What ResetExitStatus writes: as long as a status line, so that it covers one whole, and
// never one itself.
constexpr const char kNoExitStatus[] = "---------- ---\n";
static_assert(sizeof(kNoExitStatus) - 1 == kExitLineSize);

// argv[0] as posix_spawnp would find it in the host's PATH, or why it cannot be run.
std::optional<std::string> FindExecutable(const std::string& command, int* error) {
  if (command.find('/') != std::string::npos) {
    if (::access(command.c_str(), X_OK) != 0) {
      *error = errno;
      return std::nullopt;
    }
    if (std::filesystem::is_directory(command)) {
      *error = EACCES;
      return std::nullopt;
    }
    return command;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr && *path != '\0' ? path : "/usr/bin:/bin";
  *error = ENOENT;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + command;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return candidate;
    }
    if (errno == EACCES) *error = EACCES;
    start = end + 1;
  }
  return std::nullopt;
}

// posix_spawn's attribute and file-action objects, destroyed on every path.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

std::string TaskStem(const v1::TaskRef& ref) {
  return std::to_string(ref.job()) + "-" + std::to_string(ref.attempt()) + "-" +
         std::to_string(ref.task());
}

plugin::PluginStatus ResetExitStatus(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return plugin::PluginStatus::Error(TESSERA_INTERNAL,
                                       "cannot open " + path + ": " + std::strerror(errno));
  }
  const ssize_t written = ::pwrite(fd, kNoExitStatus, kExitLineSize, 0);
  const int error = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(kExitLineSize)) {
    return plugin::PluginStatus::Error(
        TESSERA_INTERNAL,
        "cannot write " + path + ": " + (written < 0 ? std::strerror(error) : "short write"));
  }
  return plugin::PluginStatus::Ok();
}

std::optional<int32_t> ReadExitStatus(const std::string& path, pid_t pid) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char line[kExitLineSize];
  const ssize_t got = ::pread(fd, line, sizeof(line), 0);
  ::close(fd);
  if (got != static_cast<ssize_t>(kExitLineSize) || line[10] != ' ' || line[14] != '\n') {
    return std::nullopt;
  }
  int64_t written_pid = 0;
  int32_t code = 0;
  auto [pid_end, pid_error] = std::from_chars(line, line + 10, written_pid);
  auto [code_end, code_error] = std::from_chars(line + 11, line + 14, code);
  if (pid_error != std::errc() || pid_end != line + 10 || code_error != std::errc() ||
      code_end != line + 14 || written_pid != pid || code < 0 || code > 255) {
    return std::nullopt;
  }
  return code;
}

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return std::nullopt;
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so fields are
  // counted from the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string field; fields >> field;) f.push_back(field);
  // f[0] is field 3 (state), so field n is f[n - 3].
  if (f.size() < 20) return std::nullopt;
  ProcStat stat;
  stat.state = f[0].empty() ? '?' : f[0][0];
  stat.pgid = static_cast<pid_t>(std::stol(f[5 - 3]));
  stat.start_ticks = std::stoull(f[22 - 3]);
  return stat;
}

plugin::PluginStatus SpawnTask(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env, const std::string& log_path,
                               const std::string& exit_status_path, pid_t* pid) {
  // The wrapper runs the command by path, so it is looked for here, in the host's PATH, and a
  // command that cannot run is refused as it was before there was a wrapper.
  int missing = 0;
  const std::optional<std::string> executable = FindExecutable(argv[0], &missing);
  if (!executable) {
    return plugin::PluginStatus::Error(
        missing == ENOENT || missing == EACCES || missing == ENOTDIR ? TESSERA_INVALID_ARGUMENT
                                                                     : TESSERA_INTERNAL,
        "command[0]: cannot execute '" + argv[0] + "': " + std::strerror(missing));
  }
  // Open the log here first, so that an unwritable path is reported as such rather than as a
  // failed spawn.
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    return plugin::PluginStatus::Error(TESSERA_INTERNAL,
                                       "cannot open log " + log_path + ": " + std::strerror(errno));
  }
  ::close(log);

  SpawnSetup setup;
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&setup.attr, &signals);
  sigfillset(&signals);
  sigdelset(&signals, SIGKILL);
  sigdelset(&signals, SIGSTOP);
  posix_spawnattr_setsigdefault(&setup.attr, &signals);
  posix_spawnattr_setpgroup(&setup.attr, 0);  // its own group, so Stop can signal all of it.
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&setup.actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&setup.actions, STDOUT_FILENO, STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // The host's descriptors (sockets, the SQLite file) are none of the task's business.
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
#endif

  std::vector<std::string> wrapped = {"/bin/sh",        "-c",       kWrapperScript, "tessera-task",
                                      exit_status_path, *executable};
  wrapped.insert(wrapped.end(), argv.begin() + 1, argv.end());
  std::vector<char*> args;
  for (const std::string& a : wrapped) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // glibc's posix_spawn reports a failed exec as its return value (it uses vfork semantics).
  const int error =
      ::posix_spawn(pid, args[0], &setup.actions, &setup.attr, args.data(), envp.data());
  if (error != 0) {
    return plugin::PluginStatus::Error(
        TESSERA_INTERNAL, "cannot start /bin/sh for '" + argv[0] + "': " + std::strerror(error));
  }
  return plugin::PluginStatus::Ok();
}

}  // namespace tessera::local
