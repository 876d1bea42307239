// A stand-in for NVIDIA's `nvidia-cuda-mps-control`, built by the tests
// (tessera_fake_mps_control, to build/plugins/testing/mps/nvidia-cuda-mps-control) for machines
// without the CUDA MPS tools. It is the control binary as NVIDIA's tools reference and
// nvidia-cuda-mps-control(1) describe it, and as others have recorded it running:
//
//   nvidia-cuda-mps-control -d   starts the control daemon in the background and returns 0. The
//       daemon takes its pipe directory from CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps;
//       created when missing), listens there on the Unix socket `control`, holds `control_lock`
//       and writes its PID to `nvidia-cuda-mps-control.pid`; it logs to control.log in
//       CUDA_MPS_LOG_DIRECTORY (default /var/log/nvidia-mps) in the real format ("[2026-01-02
//       03:04:05.678 Control 1234] Starting control daemon using socket <dir>/control"; "NEW UI",
//       "Cmd:<line>", "UI closed" around each client). A second `-d` on a pipe directory whose
//       daemon runs prints "An instance of this daemon is already running" on stderr and exits
//       1; one whose daemon died (kill -9 leaves the socket and the PID file behind) takes the
//       directory over, as the real one does. `quit` removes the PID file and leaves the socket.
//   nvidia-cuda-mps-control -f   the same daemon in the foreground.
//   nvidia-cuda-mps-control      the client: connects to the daemon of CUDA_MPS_PIPE_DIRECTORY,
//       sends each line of stdin and prints each answer on stdout, and exits 0 at end of input.
//       With no daemon it prints "Cannot find MPS control daemon process" on stderr and exits 1.
//
// The commands and their answers are fake_mps_commands.h's. After every command the daemon
// writes its state to <pipe_dir>/tessera-fake-mps-state.json, for tests to check.
//
// Where it differs from the real tool:
//   - no GPU, no CUDA, no `nvidia-cuda-mps-server`: fake_mps_commands.h says what that changes;
//   - the state file above, and two knobs for tests: TESSERA_FAKE_MPS_FAIL_START, when set,
//     makes the daemon log its value to control.log and exit 1 before it listens (a daemon that
//     cannot start); TESSERA_FAKE_MPS_REFUSE names a command word the daemon refuses ("Refused:
//     <line>"), `quit` included (a daemon that will not stop);
//   - the exit status of the client after the daemon refused a command is 0 (the real one's is
//     not documented; Tessera reads settings back rather than rely on it), and which stream
//     (stdout or stderr) the real tool writes its two fixed messages to is taken from others'
//     scripts, not from NVIDIA;
//   - `-d` returns as soon as the daemon is forked, before it listens: callers must wait for it
//     to answer, as they must for the real one;
//   - -v, -S, `quit -t`, `terminate_client`, `ps`, client priorities, MPS v3 options and the
//     privileged socket are not modelled; an unknown option prints usage and exits 1;
//   - SIGTERM ends the daemon as kill -9 does (the real one's handling is not documented).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "mps/testing/fake_mps_commands.h"

namespace tessera::fake_mps {
namespace {

constexpr char kAlreadyRunning[] = "An instance of this daemon is already running";
constexpr char kNoDaemon[] = "Cannot find MPS control daemon process";

std::string EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

std::string PipeDir() { return EnvOr("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"); }
std::string LogDir() { return EnvOr("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps"); }

class Log {
 public:
  explicit Log(const std::string& dir) {
    ::mkdir(dir.c_str(), 0755);
    fd_ = ::open((dir + "/control.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  void Line(const std::string& text) const {
    if (fd_ < 0) return;
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    const int millis = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000);
    std::tm local{};
    ::localtime_r(&seconds, &local);
    char stamp[64];
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &local);
    char prefix[128];
    std::snprintf(prefix, sizeof(prefix), "[%s.%03d Control %5d] ", stamp, millis,
                  static_cast<int>(::getpid()));
    const std::string line = prefix + text + "\n";
    [[maybe_unused]] ssize_t n = ::write(fd_, line.data(), line.size());
  }

 private:
  int fd_ = -1;
};

// The daemon's CUDA_VISIBLE_DEVICES entries: one device "0" when unset (a machine with one GPU).
std::vector<std::string> VisibleDevices() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  if (value == nullptr) return {"0"};
  std::vector<std::string> devices;
  std::string entry;
  for (const char* c = value;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!entry.empty()) devices.push_back(entry);
      entry.clear();
      if (*c == '\0') break;
    } else {
      entry += *c;
    }
  }
  return devices;
}

// Takes the pipe directory's lock, which a running daemon holds for its whole life; -1 when
// another holds it.
int TakeLock(const std::string& pipe_dir) {
  const int fd = ::open((pipe_dir + "/control_lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void SaveState(const std::string& pipe_dir, const DaemonState& state, bool running) {
  const std::string path = pipe_dir + "/tessera-fake-mps-state.json";
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << state.ToJson(running);
  }
  std::rename(temporary.c_str(), path.c_str());
}

struct Connection {
  int fd = -1;
  std::string pending;  // bytes read, not yet a whole line.
};

// The daemon's life: listen, answer, until `quit`. Returns its exit status.
int ServeDaemon(const std::string& pipe_dir, int lock_fd) {
  const Log log(LogDir());
  if (const char* fail = std::getenv("TESSERA_FAKE_MPS_FAIL_START"); fail != nullptr) {
    log.Line(fail);
    return 1;
  }
  const std::string socket_path = pipe_dir + "/control";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket_path.size() >= sizeof(address.sun_path) || listener < 0) {
    log.Line("Failed to create the control socket " + socket_path);
    return 1;
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  ::unlink(socket_path.c_str());  // a dead daemon's; the lock says none is alive.
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listener, 64) != 0) {
    log.Line("Failed to bind the control socket " + socket_path + ": " + std::strerror(errno));
    return 1;
  }
  ::chmod(socket_path.c_str(), 0666);
  const std::string pid_path = pipe_dir + "/nvidia-cuda-mps-control.pid";
  {
    std::ofstream pid_file(pid_path, std::ios::trunc);
    pid_file << ::getpid() << "\n";
  }
  DaemonState state(::getpid(), VisibleDevices(), EnvOr("TESSERA_FAKE_MPS_REFUSE", ""));
  SaveState(pipe_dir, state, true);
  log.Line("Starting control daemon using socket " + socket_path);
  log.Line("To connect CUDA applications to this daemon, set env CUDA_MPS_PIPE_DIRECTORY=" +
           pipe_dir);

  std::vector<Connection> connections;
  bool quit = false;
  while (!quit) {
    std::vector<pollfd> fds;
    fds.push_back({listener, POLLIN, 0});
    for (const Connection& c : connections) fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents & POLLIN) {
      const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        log.Line("Accepting connection...");
        log.Line("NEW UI");
        connections.push_back({client, ""});
      }
    }
    for (size_t i = 1; i < fds.size() && !quit; ++i) {
      if (fds[i].revents == 0) continue;
      Connection& c = connections[i - 1];
      char buffer[4096];
      const ssize_t n = ::read(c.fd, buffer, sizeof(buffer));
      if (n <= 0) {
        ::close(c.fd);
        c.fd = -1;
        log.Line("UI closed");
        continue;
      }
      c.pending.append(buffer, static_cast<size_t>(n));
      for (size_t newline; !quit && (newline = c.pending.find('\n')) != std::string::npos;) {
        std::string line = c.pending.substr(0, newline);
        c.pending.erase(0, newline + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        log.Line("Cmd:" + line);
        const std::string answer = state.Execute(line, &quit);
        SaveState(pipe_dir, state, !quit);
        // Framed: the answer's length on a line, then the answer.
        WriteAll(c.fd, std::to_string(answer.size()) + "\n" + answer);
      }
    }
    std::erase_if(connections, [](const Connection& c) { return c.fd < 0; });
  }
  for (const Connection& c : connections) ::close(c.fd);
  ::unlink(pid_path.c_str());
  log.Line("Exit");
  ::close(listener);
  ::close(lock_fd);
  return 0;
}

int StartDaemon(bool foreground) {
  const std::string pipe_dir = PipeDir();
  if (::mkdir(pipe_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "Cannot create the pipe directory %s: %s\n", pipe_dir.c_str(),
                 std::strerror(errno));
    return 1;
  }
  int lock_fd = TakeLock(pipe_dir);
  if (lock_fd < 0) {
    std::fprintf(stderr, "%s\n", kAlreadyRunning);
    return 1;
  }
  if (foreground) return ServeDaemon(pipe_dir, lock_fd);
  ::close(lock_fd);  // the daemon takes it again; a rival that wins in between is refused there.
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child > 0) return 0;
  ::setsid();
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    if (null > STDERR_FILENO) ::close(null);
  }
  lock_fd = TakeLock(pipe_dir);
  if (lock_fd < 0) {
    Log(LogDir()).Line(kAlreadyRunning);
    _exit(1);
  }
  _exit(ServeDaemon(pipe_dir, lock_fd));
}

// Reads one framed answer; false when the daemon closed the connection first.
bool ReadAnswer(int fd, std::string* buffered, std::string* answer) {
  while (true) {
    const size_t newline = buffered->find('\n');
    if (newline != std::string::npos) {
      const size_t size = std::strtoul(buffered->substr(0, newline).c_str(), nullptr, 10);
      if (buffered->size() >= newline + 1 + size) {
        *answer = buffered->substr(newline + 1, size);
        buffered->erase(0, newline + 1 + size);
        return true;
      }
    }
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffered->append(chunk, static_cast<size_t>(n));
  }
}

int RunClient() {
  const std::string socket_path = PipeDir() + "/control";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || socket_path.size() >= sizeof(address.sun_path)) {
    std::fprintf(stderr, "%s\n", kNoDaemon);
    return 1;
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    std::fprintf(stderr, "%s\n", kNoDaemon);
    return 1;
  }
  std::string buffered;
  for (std::string line; std::getline(std::cin, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::string answer;
    if (!WriteAll(fd, line + "\n") || !ReadAnswer(fd, &buffered, &answer)) break;
    std::fwrite(answer.data(), 1, answer.size(), stdout);
    std::fflush(stdout);
  }
  ::close(fd);
  return 0;
}

}  // namespace
}  // namespace tessera::fake_mps

int main(int argc, char** argv) {
  using namespace tessera::fake_mps;
  if (argc == 1) return RunClient();
  const std::string option = argv[1];
  if (argc == 2 && option == "-d") return StartDaemon(false);
  if (argc == 2 && option == "-f") return StartDaemon(true);
  std::fprintf(stderr,
               "Usage: nvidia-cuda-mps-control [-d | -f]\n"
               "  (the Tessera test stand-in; see plugins/common/mps/testing)\n");
  return 1;
}
