// The fake nvidia-cuda-mps-control (plugins/common/mps/testing) as the MPS tests use it: where
// the build put it, a scratch directory for pipe and log directories that kills whatever
// daemon is left in it when the test ends, and the fake's recorded state.
#pragma once

#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "mps/control_process.h"
#include "mps/mps_daemon.h"
#include "unit/plugins_sim_local/plugin_paths.h"

namespace tessera::mps::fake {

inline std::string FakeControlPath() {
  return (tessera::testing::BuildPluginsDir() / "testing" / "mps" / "nvidia-cuda-mps-control")
      .string();
}

// The PID in <pipe_dir>/nvidia-cuda-mps-control.pid, or 0.
inline pid_t PidFileOf(const std::string& pipe_dir) {
  std::ifstream in(pipe_dir + "/" + kPidFileName);
  long pid = 0;
  return (in >> pid) ? static_cast<pid_t>(pid) : 0;
}

// Whether `pid` runs (a zombie does not).
inline bool ProcessRuns(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return false;
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z' &&
         text[close + 2] != 'X';
}

// Kills `pid` with SIGKILL, as a crash would, and waits until it no longer runs.
inline void Crash(pid_t pid) {
  REQUIRE(pid > 0);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  for (int i = 0; i < 500 && ProcessRuns(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE_FALSE(ProcessRuns(pid));
}

// A short scratch directory under /tmp (pipe paths must fit a Unix socket path). On
// destruction, every daemon whose PID file lies under it is killed, then it is removed.
class Scratch {
 public:
  Scratch() {
    char name[] = "/tmp/tmps-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    root_ = name;
  }
  ~Scratch() {
    std::error_code error;
    for (auto it = std::filesystem::recursive_directory_iterator(root_, error);
         !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
      if (it->path().filename() == kPidFileName) {
        const pid_t pid = PidFileOf(it->path().parent_path().string());
        if (ProcessRuns(pid)) ::kill(pid, SIGKILL);
      }
    }
    std::filesystem::remove_all(root_, error);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  const std::string& root() const { return root_; }
  std::string Path(const std::string& name) const { return root_ + "/" + name; }

 private:
  std::string root_;
};

// The fake daemon's recorded state (<pipe_dir>/tessera-fake-mps-state.json).
inline nlohmann::json State(const std::string& pipe_dir) {
  std::ifstream in(pipe_dir + "/tessera-fake-mps-state.json");
  REQUIRE_MESSAGE(in.good(), "no fake MPS state in " << pipe_dir);
  return nlohmann::json::parse(in);
}

// Runs the fake directly with `args`, the pipe and log directories given, and `input` on stdin.
inline ControlResult RunFake(const std::vector<std::string>& args, const std::string& pipe_dir,
                             const std::string& log_dir, const std::string& input = "",
                             const std::vector<std::string>& extra_env = {}) {
  ControlRun run;
  run.args = args;
  std::vector<std::string> env = {"CUDA_MPS_PIPE_DIRECTORY=" + pipe_dir,
                                  "CUDA_MPS_LOG_DIRECTORY=" + log_dir};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  run.env = EnvironmentWith(
      env, {"CUDA_VISIBLE_DEVICES", "TESSERA_FAKE_MPS_FAIL_START", "TESSERA_FAKE_MPS_REFUSE"});
  run.stdin_text = input;
  run.timeout = std::chrono::seconds(5);
  ControlResult result;
  const plugin::PluginStatus status = RunControl(FakeControlPath(), run, &result);
  REQUIRE_MESSAGE(status.ok(), status.message);
  return result;
}

// Sets an environment variable for the life of the object (inherited by the daemons started).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace tessera::mps::fake
