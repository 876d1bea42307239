// FakeApiServerProcess: the fake Kubernetes API server (plugins/kubernetes/testing/
// fake_apiserver.py) and its etcd, started by a test binary for its whole run and stopped when
// the binary ends (the fake exits at the end of its stdin, and is killed if it lingers). Its
// start-up line (url, kubeconfig, token, ca, ...) is info().
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {

class FakeApiServerProcess {
 public:
  // `extra` are more flags for the fake ("--bookmark-interval", "1", ...).
  bool Start(const std::string& python, const std::string& script, std::string* error,
             std::vector<std::string> extra = {"--bookmark-interval", "1"}) {
    using namespace std::chrono_literals;
    char pattern[] = "/tmp/tessera-kube-fake-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      *error = "mkdtemp failed";
      return false;
    }
    state_ = pattern;
    const std::string info = state_ + "/info.json";
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) {
      *error = "pipe failed";
      return false;
    }
    std::vector<std::string> args = {
        python,        script, "--launch-etcd",      "--state-dir", state_,
        "--info-file", info,   "--exit-on-stdin-eof"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(pipe_fds[0], 0);
      ::close(pipe_fds[1]);
      const std::string log = state_ + "/fake.log";
      FILE* out = std::fopen(log.c_str(), "w");
      if (out != nullptr) {
        ::dup2(fileno(out), 1);
        ::dup2(fileno(out), 2);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(pipe_fds[0]);
    stdin_ = pipe_fds[1];
    for (int i = 0; i < 600; ++i) {
      std::ifstream in(info);
      std::stringstream text;
      text << in.rdbuf();
      if (!text.str().empty() && text.str().back() == '\n') {
        info_ = nlohmann::json::parse(text.str(), nullptr, false);
        if (info_.is_object()) return true;
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        *error = "the fake API server exited at start; see " + state_ + "/fake.log";
        return false;
      }
      std::this_thread::sleep_for(100ms);
    }
    *error = "the fake API server did not start within 60 s; see " + state_ + "/fake.log";
    return false;
  }

  const nlohmann::json& info() const { return info_; }
  const std::string& state_dir() const { return state_; }

  ~FakeApiServerProcess() {
    using namespace std::chrono_literals;
    if (stdin_ >= 0) ::close(stdin_);
    if (pid_ > 0) {
      for (int i = 0; i < 100; ++i) {
        if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(50ms);
      }
      if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
      }
    }
    std::error_code ignored;
    if (!state_.empty()) std::filesystem::remove_all(state_, ignored);
  }

 private:
  std::string state_;
  nlohmann::json info_;
  pid_t pid_ = -1;
  int stdin_ = -1;
};

}  // namespace tessera::testing
