#include "common/check.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>

namespace tessera {
namespace {
std::atomic<int64_t> bugs{0};
}

int64_t BugCount() { return bugs.load(); }

namespace check_internal {

void CheckFailed(const char* file, int line, const char* condition, std::string_view message) {
  spdlog::critical("check failed at {}:{}: {}: {}", file, line, condition, message);
  spdlog::default_logger()->flush();
  std::abort();
}

void ReportBug(const char* file, int line, std::string_view message) {
  bugs.fetch_add(1);
  spdlog::error("bug at {}:{}: {} (continuing; please report)", file, line, message);
}

}  // namespace check_internal
}  // namespace tessera
