// Three levels of checks, as the style guide asks:
//
//   TESSERA_DCHECK(cond)        debug builds only; for cheap sanity checks on hot paths.
//   TESSERA_CHECK(cond, msg)    always; aborts with a message. For broken invariants where
//                               continuing would corrupt state.
//   TESSERA_BUG(msg)            always; logs and counts (BugCount(), reported in statistics)
//                               where continuing is safe. Evaluates to nothing else.
//
// Failures of backends, plugins, disks and networks are never checks: they are Statuses.
#pragma once

#include <cassert>
#include <cstdint>
#include <string_view>

namespace tessera {

// Bugs reported through TESSERA_BUG since the process started.
int64_t BugCount();

namespace check_internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              std::string_view message);
void ReportBug(const char* file, int line, std::string_view message);
}  // namespace check_internal

}  // namespace tessera

#define TESSERA_DCHECK(condition) assert(condition)

#define TESSERA_CHECK(condition, message)                                                \
  do {                                                                                   \
    if (!(condition)) {                                                                  \
      ::tessera::check_internal::CheckFailed(__FILE__, __LINE__, #condition, (message)); \
    }                                                                                    \
  } while (0)

#define TESSERA_BUG(message) ::tessera::check_internal::ReportBug(__FILE__, __LINE__, (message))
