// StatusOr as an embedder meets it: the value of a temporary is safe to iterate, value_or gives a
// fallback, and reading the value of an error aborts with the status printed (not a segfault).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/status.h"

namespace tessera {
namespace {

StatusOr<std::vector<std::string>> Names() {
  return std::vector<std::string>{"org/research", "org/prod", "default"};
}

StatusOr<std::vector<std::string>> Broken() { return NotFoundError("queue \"org\" not found"); }

// Runs `body` in a child process; returns what it wrote to stderr and how it ended.
struct ChildResult {
  std::string stderr_text;
  int status = 0;
};

template <typename Body>
ChildResult RunInChild(Body body) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL);  // the test runner's crash handler stays in the parent.
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    body();
    _exit(0);
  }
  close(pipe_fds[1]);
  ChildResult result;
  char buffer[512];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) result.stderr_text.append(buffer, n);
  close(pipe_fds[0]);
  waitpid(pid, &result.status, 0);
  return result;
}

TEST_CASE("StatusOr: dereferencing a temporary yields a value, not a dangling reference") {
  static_assert(!std::is_reference_v<decltype(*Names())>);
  static_assert(!std::is_reference_v<decltype(Names().value())>);
  std::vector<std::string> seen;
  for (auto& name : *Names()) seen.push_back(name);
  CHECK(seen == std::vector<std::string>{"org/research", "org/prod", "default"});
}

TEST_CASE("StatusOr: value_or returns the fallback for an error and the value otherwise") {
  CHECK(Broken().value_or({"fallback"}) == std::vector<std::string>{"fallback"});
  CHECK(Names().value_or({}).size() == 3);
  const StatusOr<int> error = InvalidArgumentError("x");
  CHECK(error.value_or(7) == 7);
}

TEST_CASE("StatusOr: reading the value of an error aborts and prints the status") {
  ChildResult star = RunInChild([] { (void)(*Broken()).size(); });
  CHECK(WIFSIGNALED(star.status));
  CHECK(WTERMSIG(star.status) == SIGABRT);
  CHECK(star.stderr_text == "StatusOr holds no value: NOT_FOUND: queue \"org\" not found\n");

  ChildResult arrow = RunInChild([] {
    StatusOr<std::vector<std::string>> held = Broken();
    (void)held->size();
  });
  CHECK(WIFSIGNALED(arrow.status));
  CHECK(WTERMSIG(arrow.status) == SIGABRT);
  CHECK(arrow.stderr_text.find("StatusOr holds no value: NOT_FOUND") != std::string::npos);
}

}  // namespace
}  // namespace tessera
