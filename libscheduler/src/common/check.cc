#include "common/check.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace tessera {
namespace {
std::atomic<int64_t> bugs{0};
}

int64_t BugCount() { return bugs.load(); }

namespace check_internal {

void CheckFailed(const char* file, int line, const char* condition, std::string_view message) {
  // No scheduler to name here, and the process ends: straight to stderr, never stdout.
  std::fprintf(stderr, "tessera: check failed at %s:%d: %s: %.*s\n", file, line, condition,
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::abort();
}

void ReportBug(const char* file, int line, std::string_view message) {
  bugs.fetch_add(1);
  std::fprintf(stderr, "tessera: bug at %s:%d: %.*s (continuing; please report)\n", file, line,
               static_cast<int>(message.size()), message.data());
}

}  // namespace check_internal
}  // namespace tessera
