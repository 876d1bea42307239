#include "plugins/remote/plugin_host_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

extern char** environ;

namespace tessera {
namespace {

using plugin_wire::Frame;
using plugin_wire::FrameKind;
using plugin_wire::Function;

constexpr int kChildSocketFd = 3;  // where tessera-plugin-host expects its socket.

int64_t RealNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

PluginHostProcess::Reply Unavailable(std::string why) {
  return {TESSERA_UNAVAILABLE, "", std::move(why)};
}

}  // namespace

StatusOr<std::unique_ptr<PluginHostProcess>> PluginHostProcess::Start(
    const std::string& executable, const std::string& plugin_path,
    std::chrono::milliseconds deadline, plugin_wire::DescriptorInfo* info) {
  if (access(executable.c_str(), X_OK) != 0) {
    return NotFoundError("plugin host executable '" + executable + "': " + std::strerror(errno));
  }
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return UnavailableError(std::string("socketpair: ") + std::strerror(errno));
  }
  int child_end = fds[1];
  if (child_end == kChildSocketFd) {
    // dup2 onto itself would keep close-on-exec set: move it out of the way first.
    child_end = fcntl(fds[1], F_DUPFD_CLOEXEC, kChildSocketFd + 1);
    close(fds[1]);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, kChildSocketFd);
  std::string exe = executable, plugin = plugin_path;
  char* argv[] = {exe.data(), plugin.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(child_end);
  if (rc != 0) {
    close(fds[0]);
    return UnavailableError("cannot start plugin host '" + executable + "': " + std::strerror(rc));
  }
  std::unique_ptr<PluginHostProcess> process(new PluginHostProcess(pid, fds[0], plugin_path));
  Frame hello;
  {
    std::unique_lock<std::mutex> lock(process->mu_);
    process->changed_.wait_for(lock, deadline,
                               [&] { return process->hello_.has_value() || process->lost_; });
    if (!process->hello_) {
      return UnavailableError("plugin '" + plugin_path + "': its host process " +
                              (process->lost_ ? "ended before it said hello: " + process->lost_why_
                                              : "did not say hello within " +
                                                    std::to_string(deadline.count()) + " ms"));
    }
    hello = *process->hello_;
  }
  if (hello.status != TESSERA_OK) {
    return InvalidArgumentError("plugin '" + plugin_path + "': " + hello.error);
  }
  if (!plugin_wire::DecodeDescriptorInfo(hello.payload, info)) {
    return InternalError("plugin '" + plugin_path + "': its host process sent a malformed hello");
  }
  return process;
}

PluginHostProcess::PluginHostProcess(pid_t pid, int fd, std::string plugin_path)
    : pid_(pid), fd_(fd), plugin_path_(std::move(plugin_path)) {
  reader_ = std::thread([this] { ReadLoop(); });
}

PluginHostProcess::~PluginHostProcess() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    host_ = nullptr;
  }
  shutdown(fd_, SHUT_RDWR);  // the reader sees the end; the process sees it and leaves.
  // The last reference can drop on the reader thread (on_lost's callee may hold it).
  if (reader_.get_id() == std::this_thread::get_id()) {
    reader_.detach();
  } else {
    reader_.join();
  }
  close(fd_);
}

void PluginHostProcess::ReadLoop() {
  pthread_setname_np(pthread_self(), "tessera-phost");
  plugin_wire::FrameDecoder decoder;
  Frame frame;
  std::string error;
  while (plugin_wire::ReadFrame(fd_, decoder, &frame, &error)) {
    switch (frame.kind) {
      case FrameKind::kHello: {
        std::lock_guard<std::mutex> lock(mu_);
        hello_ = std::move(frame);
        changed_.notify_all();
        break;
      }
      case FrameKind::kReply: {
        // After on_shutdown returned, or on_init failed, the plugin may no longer call back.
        if (frame.function == Function::kShutdown ||
            (frame.function == Function::kInit && frame.status != TESSERA_OK)) {
          std::lock_guard<std::mutex> lock(host_mu_);
          host_ = nullptr;
        }
        std::lock_guard<std::mutex> lock(mu_);
        auto it = pending_.find(frame.id);
        if (it != pending_.end()) {
          it->second = Reply{frame.status, std::move(frame.payload), std::move(frame.error)};
          changed_.notify_all();
        }
        break;
      }
      case FrameKind::kEvent: {
        std::lock_guard<std::mutex> lock(host_mu_);
        if (host_) {
          host_->tessera_host_emit_event(host_->context,
                                         reinterpret_cast<const uint8_t*>(frame.payload.data()),
                                         frame.payload.size());
        }
        break;
      }
      case FrameKind::kLog: {
        std::lock_guard<std::mutex> lock(host_mu_);
        if (host_) {
          host_->tessera_host_log(host_->context, frame.status, frame.payload.data(),
                                  frame.payload.size());
        }
        break;
      }
      case FrameKind::kNowRequest: {
        int64_t now;
        {
          std::lock_guard<std::mutex> lock(host_mu_);
          now = host_ ? host_->tessera_host_now_us(host_->context) : RealNowUs();
        }
        Frame answer;
        answer.kind = FrameKind::kNowReply;
        answer.id = frame.id;
        answer.payload = plugin_wire::EncodeInt64(now);
        Send(answer);
        break;
      }
      default:
        error = "unexpected frame kind " + std::to_string(static_cast<int>(frame.kind));
        Lose(error);
        return;
    }
  }
  Lose(error == "end of stream" ? "" : error);
}

void PluginHostProcess::Lose(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!reaped_) kill(pid_, SIGKILL);  // it may still run (it closed fd 3, or spoke nonsense).
  }
  // Wait without reaping, so that Abandon never signals a reused pid.
  siginfo_t info{};
  std::string how = "ended";
  if (waitid(P_PID, pid_, &info, WEXITED | WNOWAIT) == 0) {
    if (info.si_code == CLD_EXITED) {
      how = "exited with code " + std::to_string(info.si_status);
    } else {
      how = "was killed by signal " + std::to_string(info.si_status) + " (" +
            strsignal(info.si_status) + ")";
    }
  }
  std::function<void(const std::string&)> on_lost;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
    lost_ = true;
    lost_why_ = "plugin '" + plugin_path_ + "': its host process (pid " + std::to_string(pid_) +
                ") " + how + (why.empty() ? "" : " after a broken frame: " + why);
    message = lost_why_;
    if (!closing_) on_lost = std::move(on_lost_);
    on_lost_ = nullptr;
    changed_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    host_ = nullptr;
  }
  if (on_lost) on_lost(message);
}

void PluginHostProcess::Send(const Frame& frame) {
  std::string bytes;
  if (!plugin_wire::AppendFrame(frame, &bytes)) return;  // callers check sizes first.
  std::string error;
  std::lock_guard<std::mutex> lock(write_mu_);
  // A failed write means the process is gone; the reader sees the end and reports it.
  plugin_wire::WriteAll(fd_, bytes, &error);
}

PluginHostProcess::Reply PluginHostProcess::Init(const tessera_host_api* host,
                                                 const std::string& config) {
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    host_ = host;
  }
  return Call(Function::kInit, config);
}

PluginHostProcess::Reply PluginHostProcess::Call(Function function, const std::string& payload) {
  if (payload.size() + plugin_wire::kFrameHeaderBytes > plugin_wire::kMaxFrameBytes) {
    return {TESSERA_RESOURCE_EXHAUSTED, "",
            "request of " + std::to_string(payload.size()) +
                " bytes exceeds the plugin host protocol's frame limit"};
  }
  Frame call;
  call.kind = FrameKind::kCall;
  call.function = function;
  call.payload = payload;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lost_) return Unavailable(lost_why_);
    call.id = next_call_id_++;
    pending_.emplace(call.id, std::nullopt);
  }
  Send(call);
  std::unique_lock<std::mutex> lock(mu_);
  auto it = pending_.find(call.id);
  changed_.wait(lock, [&] { return it->second.has_value() || lost_; });
  Reply reply = it->second ? std::move(*it->second) : Unavailable(lost_why_);
  pending_.erase(it);
  return reply;
}

void PluginHostProcess::Abandon() {
  {
    std::lock_guard<std::mutex> lock(host_mu_);
    host_ = nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!reaped_) kill(pid_, SIGKILL);
}

void PluginHostProcess::SetOnLost(std::function<void(const std::string& why)> on_lost) {
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lost_) {
      on_lost_ = std::move(on_lost);
      return;
    }
    why = lost_why_;
  }
  on_lost(why);
}

bool PluginHostProcess::lost() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

StatusOr<std::string> DefaultPluginHostExecutable() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<const void*>(&DefaultPluginHostExecutable), &self) == 0 ||
      self.dli_fname == nullptr) {
    return NotFoundError(
        "tessera-plugin-host: cannot tell where libtessera is; set "
        "PluginOptions::host_executable");
  }
  const std::filesystem::path dir =
      std::filesystem::absolute(std::filesystem::path(self.dli_fname)).parent_path();
  // In the build tree it sits beside the library; installed, in bin/ beside lib/ (or beside
  // lib/<multiarch>/).
  const std::filesystem::path candidates[] = {
      dir / "tessera-plugin-host", dir.parent_path() / "bin" / "tessera-plugin-host",
      dir.parent_path().parent_path() / "bin" / "tessera-plugin-host"};
  std::string looked;
  for (const auto& candidate : candidates) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    looked += (looked.empty() ? "" : ", ") + candidate.parent_path().string();
  }
  return NotFoundError("tessera-plugin-host: not in " + looked +
                       "; set PluginOptions::host_executable");
}

}  // namespace tessera
