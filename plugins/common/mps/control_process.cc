#include "mps/control_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

extern char** environ;

namespace tessera::mps {
namespace {

using plugin::PluginStatus;
using Clock = std::chrono::steady_clock;

bool IsExecutableFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// Both ends of a pipe, closed on every path.
struct Pipe {
  int read = -1;
  int write = -1;
  bool Open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read = fds[0];
    write = fds[1];
    return true;
  }
  static void Close(int* fd) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  ~Pipe() {
    Close(&read);
    Close(&write);
  }
};

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

// Writes to a pipe whose reader may have gone: SIGPIPE is held back for this thread, and a
// pending one consumed, so the host is not killed by a control binary that exited early.
ssize_t WriteNoSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const ssize_t written = ::write(fd, data, size);
  const int saved = errno;
  if (written < 0 && saved == EPIPE) {
    const timespec zero{0, 0};
    sigtimedwait(&pipe_only, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return written;
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::optional<std::string> FindControlBinary(const std::string& binary) {
  if (binary.empty()) return std::nullopt;
  if (binary.find('/') != std::string::npos) {
    if (IsExecutableFile(binary)) return binary;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr && *path != '\0' ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + binary;
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

std::vector<std::string> EnvironmentWith(const std::vector<std::string>& overrides,
                                         const std::vector<std::string>& removed) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t equals = entry.find('=');
    if (equals != std::string::npos) vars[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  for (const std::string& name : removed) vars.erase(name);
  for (const std::string& entry : overrides) {
    const size_t equals = entry.find('=');
    if (equals != std::string::npos) vars[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  std::vector<std::string> env;
  env.reserve(vars.size());
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

PluginStatus RunControl(const std::string& binary, const ControlRun& run, ControlResult* result) {
  *result = ControlResult();
  Pipe in, out, err;
  const bool capture = run.output_file.empty();
  const bool feed = !run.stdin_text.empty();
  if ((feed && !in.Open()) || (capture && (!out.Open() || !err.Open()))) {
    return PluginStatus::Error(TESSERA_INTERNAL,
                               std::string("cannot create a pipe: ") + std::strerror(errno));
  }

  SpawnSetup setup;
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&setup.attr, &signals);
  sigfillset(&signals);
  sigdelset(&signals, SIGKILL);
  sigdelset(&signals, SIGSTOP);
  posix_spawnattr_setsigdefault(&setup.attr, &signals);
  // A group of its own: a terminal's ^C to the host does not reach the daemon it leaves.
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (feed) {
    posix_spawn_file_actions_adddup2(&setup.actions, in.read, STDIN_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  if (capture) {
    posix_spawn_file_actions_adddup2(&setup.actions, out.write, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&setup.actions, err.write, STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&setup.actions, STDOUT_FILENO, run.output_file.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&setup.actions, STDOUT_FILENO, STDERR_FILENO);
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // The host's descriptors are none of the daemon's business (and one it kept open would
  // outlive the host's use of it).
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
#endif

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& a : run.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : run.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = 0;
  const int spawn_error =
      ::posix_spawn(&pid, binary.c_str(), &setup.actions, &setup.attr, argv.data(), envp.data());
  if (spawn_error != 0) {
    return PluginStatus::Error(TESSERA_INTERNAL,
                               "cannot start " + binary + ": " + std::strerror(spawn_error));
  }
  Pipe::Close(&in.read);
  Pipe::Close(&out.write);
  Pipe::Close(&err.write);

  const Clock::time_point deadline = Clock::now() + run.timeout;
  size_t fed = 0;
  if (!feed) Pipe::Close(&in.write);
  if (in.write >= 0) ::fcntl(in.write, F_SETFL, O_NONBLOCK);
  while (in.write >= 0 || out.read >= 0 || err.read >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd fds[3];
    int count = 0;
    if (in.write >= 0) fds[count++] = {in.write, POLLOUT, 0};
    if (out.read >= 0) fds[count++] = {out.read, POLLIN, 0};
    if (err.read >= 0) fds[count++] = {err.read, POLLIN, 0};
    const int ready = ::poll(fds, count, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    for (int i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in.write) {
        const ssize_t n =
            WriteNoSigpipe(in.write, run.stdin_text.data() + fed, run.stdin_text.size() - fed);
        if (n > 0) fed += static_cast<size_t>(n);
        if ((n < 0 && errno != EAGAIN) || fed == run.stdin_text.size()) Pipe::Close(&in.write);
        continue;
      }
      int* fd = fds[i].fd == out.read ? &out.read : &err.read;
      std::string* sink = fds[i].fd == out.read ? &result->out : &result->err;
      char buffer[4096];
      const ssize_t n = ::read(*fd, buffer, sizeof(buffer));
      if (n > 0) {
        sink->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        Pipe::Close(fd);
      }
    }
  }
  Pipe::Close(&in.write);

  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      result->exit_status = DecodeWaitStatus(status);
      break;
    }
    if (done < 0 && errno != EINTR) break;  // reaped by someone else: unknown.
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      if (::waitpid(pid, &status, 0) == pid) result->exit_status = DecodeWaitStatus(status);
      result->timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return PluginStatus::Ok();
}

}  // namespace tessera::mps
