// Running the real tessctl (TESSCTL_PATH, set by tests/CMakeLists.txt) and other commands from a
// test: stdout and stderr captured, the exit code kept. Shared by the tessctl and tesserad tests.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tesserad_test {

inline std::string ShellQuote(const std::string& arg) {
  std::string quoted = "'";
  for (const char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `command` through the shell; its stderr goes to a file read back into `err`.
inline RunResult Run(const std::string& command) {
  char err_path[] = "/tmp/tesserad-test-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  REQUIRE(fd >= 0);
  close(fd);
  RunResult result;
  FILE* pipe = popen(("(" + command + ") 2>" + ShellQuote(err_path)).c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = ReadFile(err_path);
  unlink(err_path);
  return result;
}

// tessctl with a clean TESSERA_* environment plus `env` ("NAME=value" entries).
inline RunResult Tessctl(const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {}) {
  std::string command = "env -u TESSERA_SERVER -u TESSERA_TOKEN -u TESSERA_CACERT";
  for (const std::string& entry : env) command += " " + ShellQuote(entry);
  command += " " + ShellQuote(TESSCTL_PATH);
  for (const std::string& arg : args) command += " " + ShellQuote(arg);
  return Run(command);
}

}  // namespace tesserad_test
